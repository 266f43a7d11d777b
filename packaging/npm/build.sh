#!/usr/bin/env bash
# The npm packages, as esbuild and biome ship theirs: `ssq` (the launcher
# behind `npx ssq` and the JavaScript helper) names one package per platform
# as an optional dependency, and npm installs only the one whose `os` and
# `cpu` match. This makes the ssq package and the platform package of one
# binary, and packs both with `npm pack` into OUT_DIR.
#   usage: packaging/npm/build.sh BINARY PLATFORM OUT_DIR
#   PLATFORM is node's <process.platform>-<process.arch>: linux-x64,
#   linux-arm64, darwin-x64, darwin-arm64. The release workflow runs it once
#   per platform and publishes the ssq package once.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
binary=$1
platform=$2
out=$(mkdir -p "$3" && cd "$3" && pwd)

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$here/../../Cargo.toml" | head -1)
# The platforms are the helper's own list (index.js), so that the two agree.
platforms=$(node -p 'require(process.argv[1]).PLATFORMS.join(" ")' "$here/ssq/index.js")
case " $platforms " in
  *" $platform "*) ;;
  *) echo "build.sh: unknown platform $platform (known: $platforms)" >&2; exit 1 ;;
esac
[ -x "$binary" ] || { echo "build.sh: $binary is not an executable: build it first (cargo build --release)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The platform package: the binary and a manifest that npm installs only on
# its os and cpu.
mkdir -p "$work/platform/bin"
cp "$binary" "$work/platform/bin/ssq"
chmod 755 "$work/platform/bin/ssq"
# Symbols are a fifth of the binary and of no use to its users. A strip
# that does not know the binary's format (one built for another system)
# leaves it whole.
strip "$work/platform/bin/ssq" 2>/dev/null || echo "build.sh: $binary left unstripped" >&2
sed -e "s/@PLATFORM@/$platform/g" -e "s/@VERSION@/$version/g" \
  -e "s/@OS@/${platform%-*}/g" -e "s/@CPU@/${platform#*-}/g" \
  "$here/platform/package.json" >"$work/platform/package.json"

# The ssq package: its version, and every platform package at that version.
cp -r "$here/ssq" "$work/ssq"
node - "$work/ssq/package.json" "$version" $platforms <<'JS'
const fs = require("node:fs");
const [file, version, ...platforms] = process.argv.slice(2);
const manifest = JSON.parse(fs.readFileSync(file, "utf8"));
manifest.version = version;
manifest.optionalDependencies = Object.fromEntries(platforms.map((p) => [`ssq-${p}`, version]));
fs.writeFileSync(file, JSON.stringify(manifest, null, 2) + "\n");
JS

(cd "$work/platform" && npm pack --silent --pack-destination "$out" >/dev/null)
(cd "$work/ssq" && npm pack --silent --pack-destination "$out" >/dev/null)
ls -l "$out"/ssq-"$version".tgz "$out"/ssq-"$platform"-"$version".tgz
