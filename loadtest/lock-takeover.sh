#!/usr/bin/env bash
# A takeover after kill -9 with etcd as the lock (--lock-url) beside the
# store's own lock, at the same timings (the defaults: TTL 5 s, renew 1 s,
# retry 500 ms), on Redis and on Postgres, TRIES times each in turn: two
# instances, the leader killed, the time until the other answers /ready.
#   bash loadtest/lock-takeover.sh [SSQ_BINARY]   (TRIES=5)
set -euo pipefail
cd "$(dirname "$0")/.."
SSQ=${1:-target/release/ssq}
TRIES=${TRIES:-5}
cargo build --release -q -p ssq
source loadtest/lib.sh

start_redis
start_postgres
start_etcd

# Starts two instances with the flags given, kills the one that leads, and
# prints the milliseconds until the other serves.
takeover() {
  local a b pa pb leader other started
  a=$(free_port); b=$(free_port)
  RUST_LOG=error "$SSQ" --listen 127.0.0.1:"$a" "$@" 2>/dev/null & pa=$!; PIDS+=($!)
  wait_ready "$a"
  RUST_LOG=error "$SSQ" --listen 127.0.0.1:"$b" "$@" 2>/dev/null & pb=$!; PIDS+=($!)
  wait_port "$b"; sleep 1
  if curl -sf "http://127.0.0.1:$a/ready" >/dev/null; then leader=$pa; other=$b; else leader=$pb; other=$a; fi
  started=$(date +%s%N)
  kill -9 "$leader"
  until curl -sf "http://127.0.0.1:$other/ready" >/dev/null; do sleep 0.01; done
  echo $(( ($(date +%s%N) - started) / 1000000 ))
  kill "$pa" "$pb" 2>/dev/null || true; wait "$pa" "$pb" 2>/dev/null || true
}

declare -A TIMES
for try in $(seq "$TRIES"); do
  prefix=t$try
  TIMES[redis]+="$(takeover --redis-url redis://127.0.0.1:$REDIS --redis-prefix "$prefix") "
  TIMES[redis+etcd]+="$(takeover --redis-url redis://127.0.0.1:$REDIS --redis-prefix "$prefix-etcd" --lock-url "$ETCD_URL/$prefix") "
  psql -h 127.0.0.1 -p "$PG_PORT" -U ssq -d postgres -Xqc "CREATE DATABASE ssq_$try" -c "CREATE DATABASE ssq_${try}_etcd"
  TIMES[postgres]+="$(takeover --postgres-url "${PG_URL}_$try") "
  TIMES[postgres+etcd]+="$(takeover --postgres-url "${PG_URL}_${try}_etcd" --lock-url "$ETCD_URL/pg$try") "
  echo ">> try $try done" >&2
done
echo "takeover after kill -9, ms (TTL 5 s), $TRIES tries each: median, min, max"
for target in redis redis+etcd postgres postgres+etcd; do
  python3 -c 'import statistics,sys; t=[int(x) for x in sys.argv[2:]]; print(f"{sys.argv[1]:<14} {statistics.median(t):>6.0f} {min(t):>6} {max(t):>6}")' "$target" ${TIMES[$target]}
done
