#!/usr/bin/env bash
# The image's root filesystem, made from a release binary without any base
# image (no registry is needed to build it): the binary, the shared
# libraries it links as ldd names them (glibc's, from the machine that built
# it), the CA certificates SNS webhooks over HTTPS check against, a passwd
# and group naming the ssq user (uid 10001), and an empty /tmp. The
# Dockerfile copies it onto `scratch`, with /data owned by that user.
#   usage: docker/rootfs.sh BINARY DIRECTORY
set -euo pipefail
binary=$1
out=$2

[ -x "$binary" ] || { echo "rootfs.sh: $binary is not an executable: build it first (cargo build --release)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/usr/local/bin" "$out/etc/ssl/certs" "$out/tmp"
chmod 1777 "$out/tmp"
cp "$binary" "$out/usr/local/bin/ssq"
strip "$out/usr/local/bin/ssq" 2>/dev/null || true

# Every absolute path ldd prints: the libraries and the dynamic loader,
# copied to the same paths, links resolved.
ldd "$binary" | grep -o '/[^ ]*' | sort -u | while read -r library; do
  mkdir -p "$out$(dirname "$library")"
  cp -L "$library" "$out$library"
done

certificates=/etc/ssl/certs/ca-certificates.crt
if [ -f "$certificates" ]; then
  cp "$certificates" "$out/etc/ssl/certs/"
else
  echo "rootfs.sh: no $certificates (Debian's ca-certificates): SNS webhooks over HTTPS will fail to verify in this image" >&2
fi
printf 'root:x:0:0:root:/:/sbin/nologin\nssq:x:10001:10001:ssq:/data:/sbin/nologin\n' >"$out/etc/passwd"
printf 'root:x:0:\nssq:x:10001:\n' >"$out/etc/group"
