#!/usr/bin/env bash
# The npm packages as their users get them (`make npm` packs them into
# target/npm): installed from the tarballs into a fresh directory, with no
# cargo on PATH, `npx ssq --version` answers with the platform package's
# binary, and a user's node:test suite (tests/packages/user_suite.test.js)
# passes with the helper. Prints the tarballs' sizes.
set -euo pipefail
cd "$(dirname "$0")/../.."

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
platform=$(node -p 'process.platform + "-" + process.arch')
main=target/npm/ssq-$version.tgz
native=target/npm/ssq-$platform-$version.tgz
for tarball in "$main" "$native"; do
  [ -f "$tarball" ] || { echo "npm.sh: no $tarball: run make npm" >&2; exit 1; }
done

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp tests/packages/user_suite.test.js "$dir/"
cd "$dir"
npm init -y >/dev/null
# The SDK from the registry first, then ssq from the tarballs alone: the
# platform package satisfies ssq's optional dependency on it, so nothing of
# ssq's comes from the registry.
npm install --silent --no-audit --no-fund @aws-sdk/client-sqs@3
export PATH="$(dirname "$(command -v node)"):/usr/local/bin:/usr/bin:/bin"
unset SSQ_BIN
if command -v cargo >/dev/null; then
  echo "npm.sh: cargo is still on PATH ($(command -v cargo))" >&2; exit 1
fi
npm install --silent --no-audit --no-fund --offline "$OLDPWD/$native" "$OLDPWD/$main"

version_said=$(npx --no-install ssq --version)
case "$version_said" in
  "ssq $version ("*")") ;;
  *) echo "npm.sh: npx ssq --version said: $version_said" >&2; exit 1 ;;
esac
node --test user_suite.test.js

cd "$OLDPWD"
echo "npm.sh: $version_said; $(basename "$main"): $(($(stat -c %s "$main") / 1024)) KiB," \
  "$(basename "$native"): $(($(stat -c %s "$native") / 1024)) KiB" \
  "(unpacked binary $(($(tar -xzOf "$native" package/bin/ssq | wc -c) / 1024)) KiB)"
