#!/usr/bin/env bash
# The crate as Rust users get it: `cargo package` makes the .crate that
# crates.io would take (its contents built on their own, as cargo verifies
# them), and `cargo install --path .` puts a working `ssq` into a fresh root.
# Prints the .crate's size.
set -euo pipefail
cd "$(dirname "$0")/../.."

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
# --allow-dirty: make test runs on checkouts with changes too; what is
# packaged is what is here.
cargo package --locked --allow-dirty --quiet
crate=target/package/ssq-$version.crate
[ -f "$crate" ] || { echo "cargo.sh: cargo package made no $crate" >&2; exit 1; }

root=$(mktemp -d)
trap 'kill "${server:-}" 2>/dev/null || true; rm -rf "$root"' EXIT
cargo install --locked --path . --root "$root" --quiet
said=$("$root/bin/ssq" --version)
case "$said" in
  "ssq $version ("*")") ;;
  *) echo "cargo.sh: the installed ssq --version said: $said" >&2; exit 1 ;;
esac
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$root/bin/ssq" --listen "127.0.0.1:$port" 2>/dev/null &
server=$!
for _ in $(seq 1 100); do
  "$root/bin/ssq" --check-health --listen "127.0.0.1:$port" 2>/dev/null && break
  sleep 0.05
done
"$root/bin/ssq" --check-health --listen "127.0.0.1:$port"
echo "cargo.sh: $said installed with cargo install and answering;" \
  "$(basename "$crate"): $(($(stat -c %s "$crate") / 1024)) KiB ($(tar -tzf "$crate" | wc -l) files)"
