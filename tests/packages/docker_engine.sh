#!/usr/bin/env bash
# Runs a command once a Docker engine answers. Where Debian's docker.io is
# installed but no engine runs (a fresh test machine), starts dockerd as
# these machines allow it: no bridge network and no iptables rules, so
# containers run with --network host. The engine is left running, as a
# service would be.
#   usage: tests/packages/docker_engine.sh COMMAND [ARG...]
set -euo pipefail

if ! docker info >/dev/null 2>&1; then
  command -v dockerd >/dev/null || {
    echo "docker_engine.sh: no Docker engine answers and dockerd is not installed (Debian: apt-get install docker.io)" >&2
    exit 1
  }
  [ "$(id -u)" -eq 0 ] || {
    echo "docker_engine.sh: no Docker engine answers; start one (dockerd needs root)" >&2
    exit 1
  }
  log=$(mktemp /tmp/ssq-dockerd.XXXXXX.log)
  echo "docker_engine.sh: starting dockerd --bridge=none --iptables=false (log: $log)" >&2
  setsid nohup dockerd --bridge=none --iptables=false >"$log" 2>&1 < /dev/null &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || {
    tail -n 20 "$log" >&2
    echo "docker_engine.sh: dockerd did not answer within 30 s (log above, whole in $log)" >&2
    exit 1
  }
fi
exec "$@"
