#!/usr/bin/env bash
# `make cluster` / `make cluster-stop`: the compose setup (docker/compose.yaml)
# without Docker, on loopback: redis-server with AOF, three ssq instances and
# HAProxy with docker/haproxy.cfg (addresses replaced). State and logs go to
# target/cluster/. Ports: HAProxy CLUSTER_PORT (9324), ssq 9331-9333, Redis 9339.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=target/cluster
PORT=${CLUSTER_PORT:-9324}
SSQ_PORTS=(9331 9332 9333)
REDIS_PORT=9339

stop() {
  for pidfile in "$DIR"/*.pid; do
    [ -e "$pidfile" ] || continue
    kill "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
  done
  echo "cluster stopped"
}

start() {
  for tool in redis-server haproxy; do
    command -v $tool >/dev/null || { echo "$tool is needed: apt-get install $tool" >&2; exit 1; }
  done
  mkdir -p "$DIR"
  cargo build --release -q -p ssq
  redis-server --port $REDIS_PORT --bind 127.0.0.1 --appendonly yes --appendfsync everysec \
    --dir "$PWD/$DIR" --daemonize yes --pidfile "$PWD/$DIR/redis.pid" --logfile "$PWD/$DIR/redis.log"
  for i in 0 1 2; do
    n=$((i + 1))
    SSQ_REDIS_URL=redis://127.0.0.1:$REDIS_PORT SSQ_NODE_ID=ssq$n \
    SSQ_LISTEN=127.0.0.1:${SSQ_PORTS[$i]} SSQ_ADVERTISE_URL=http://127.0.0.1:${SSQ_PORTS[$i]} \
    SSQ_PUBLIC_URL=http://127.0.0.1:$PORT \
      nohup target/release/ssq > "$DIR/ssq$n.log" 2>&1 &
    echo $! > "$DIR/ssq$n.pid"
  done
  sed -e "s/bind :9324/bind 127.0.0.1:$PORT/" \
      -e "s/ssq1:9324/127.0.0.1:${SSQ_PORTS[0]}/" -e "s/ssq2:9324/127.0.0.1:${SSQ_PORTS[1]}/" \
      -e "s/ssq3:9324/127.0.0.1:${SSQ_PORTS[2]}/" docker/haproxy.cfg > "$DIR/haproxy.cfg"
  haproxy -D -f "$DIR/haproxy.cfg" -p "$DIR/haproxy.pid"
  for _ in $(seq 1 100); do
    curl -fs "http://127.0.0.1:$PORT/ready" >/dev/null 2>&1 && break
    sleep 0.1
  done
  echo "cluster up: SQS at http://127.0.0.1:$PORT (HAProxy), instances on ${SSQ_PORTS[*]}, Redis on $REDIS_PORT"
  echo "admin page: http://127.0.0.1:$PORT/   logs: $DIR/   stop: make cluster-stop"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
