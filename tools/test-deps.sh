#!/usr/bin/env bash
# Installs the system tools the tests run, as real processes, when they are
# missing: redis-server (with redis-cli), Postgres (initdb, postgres, psql,
# pg_basebackup: Debian's postgresql), MariaDB (mariadbd, mariadb-install-db,
# mariadb: Debian's mariadb-server), etcd (Debian's etcd-server, the lock
# of --lock-url), haproxy, chromium, openssl, curl,
# promtool (Debian's prometheus package, for the alert rules), Node.js and
# npm (the npm packages), Docker's engine and docker-compose (the image and
# its compose files; tests/packages),
# and Python's venv for the boto3 and AWS CLI tests. `make test` runs this
# first, so a fresh clone on a fresh Debian or Ubuntu machine needs only the
# Rust toolchain and make. Elsewhere it says what to install and stops.
set -euo pipefail

missing_tools=()
missing_packages=()
need() { # need <command> <Debian package>
  if ! command -v "$1" >/dev/null 2>&1; then
    missing_tools+=("$1")
    missing_packages+=("$2")
  fi
}
need redis-server redis-server
# Debian keeps Postgres's server programs out of the PATH, under
# /usr/lib/postgresql/<version>/bin (where tests/support/src/postgres.rs
# looks for them).
if ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && ! command -v initdb >/dev/null 2>&1; then
  missing_tools+=(initdb)
  missing_packages+=(postgresql)
fi
need psql postgresql-client
# Debian keeps mariadbd in /usr/sbin, which a user's PATH may lack.
if ! [ -x /usr/sbin/mariadbd ] && ! command -v mariadbd >/dev/null 2>&1; then
  missing_tools+=(mariadbd)
  missing_packages+=(mariadb-server)
fi
need mariadb-install-db mariadb-server
need etcd etcd-server
need haproxy haproxy
need chromium chromium
need openssl openssl
need curl curl
need promtool prometheus
need cc gcc
need node nodejs
need npm npm
need dockerd docker.io
need docker-compose docker-compose
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  missing_tools+=("python3 with venv")
  missing_packages+=(python3-venv)
fi

[ ${#missing_packages[@]} -eq 0 ] && exit 0

echo "test-deps: missing ${missing_tools[*]}" >&2
if ! command -v apt-get >/dev/null 2>&1; then
  echo "test-deps: this is not a Debian-like system; install ${missing_tools[*]} with its package manager and run the tests again" >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "test-deps: installing needs root: run as root, or apt-get install ${missing_packages[*]} yourself" >&2
  exit 1
fi
log=$(mktemp)
echo "test-deps: apt-get install ${missing_packages[*]} (output in $log)" >&2
export DEBIAN_FRONTEND=noninteractive
if ! { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq "${missing_packages[@]}"; } >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  echo "test-deps: apt-get failed (whole output in $log); install ${missing_packages[*]} and run the tests again" >&2
  exit 1
fi
