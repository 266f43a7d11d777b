#!/usr/bin/env bash
# What a group commit costs, Redis-backed: for each concurrency, a round trip
# (send, receive, delete) against one ssq on a Redis of its own (AOF
# everysec, as in `make bench`), then
#   - writes per commit and commits per request (ssq's ssq_commit_writes),
#   - ssq's and redis-server's CPU per request (/proc/PID/stat),
#   - Redis's time inside the commit script per call (INFO commandstats).
# Against memory-only's CPU per request (the same load on a second
# instance), the cost a commit adds follows. Reproduces the figures of
# "What a commit costs" in loadtest/profile.md:
#   bash loadtest/commit-cost.sh [SSQ_BINARY]   (CONCURRENCY="1 8 64", BENCH_DURATION=5)
set -euo pipefail
cd "$(dirname "$0")/.."
SSQ=${1:-target/release/ssq}
DURATION=${BENCH_DURATION:-5}
cargo build --release -q -p ssq-bench
BENCH=target/release/ssq-bench
source loadtest/lib.sh

start_redis
WORK=$(mktemp -d); TEMP_DIRS+=("$WORK")
REDIS_BACKED=$(free_port); MEMORY=$(free_port)
RUST_LOG=warn $SRV "$SSQ" --listen 127.0.0.1:$REDIS_BACKED --redis-url redis://127.0.0.1:$REDIS 2>/dev/null & SSQ_PID=$!; PIDS+=($!)
RUST_LOG=warn $SRV "$SSQ" --listen 127.0.0.1:$MEMORY 2>/dev/null & MEMORY_PID=$!; PIDS+=($!)
wait_port $REDIS_BACKED; wait_port $MEMORY
sleep 1   # it takes the lock

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
commit_writes() { curl -s "http://127.0.0.1:$REDIS_BACKED/metrics" | awk '/^ssq_commit_writes_(sum|count)/ {printf "%s ", $2}'; }
requests() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(s['requests'] for s in d['series'].values()))" "$1"; }

printf '%4s %10s %14s %13s %12s %12s %14s %16s\n' C "req/s" "writes/commit" "commits/req" "ssq µs/req" "Redis µs/req" "memory µs/req" "script µs/call"
for c in ${CONCURRENCY:-1 8 64}; do
  $GEN $BENCH --endpoint http://127.0.0.1:$MEMORY --scenario roundtrip --concurrency "$c" --duration "$DURATION" \
    --quiet --json "$WORK/memory.json" --server-pid $MEMORY_PID >/dev/null
  memory_cpu=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['server_cpu_us_per_request'])" "$WORK/memory.json")
  # Counted over the whole run, warm-up included, so the requests are too.
  before=$(commit_writes); ssq0=$(cpu_ticks $SSQ_PID); redis0=$(cpu_ticks $REDIS_PID)
  redis-cli -p "$REDIS" config resetstat >/dev/null
  $GEN $BENCH --endpoint http://127.0.0.1:$REDIS_BACKED --scenario roundtrip --concurrency "$c" --duration "$DURATION" \
    --warmup 0 --quiet --json "$WORK/redis.json" >/dev/null
  after=$(commit_writes); ssq1=$(cpu_ticks $SSQ_PID); redis1=$(cpu_ticks $REDIS_PID)
  script=$(redis-cli -p "$REDIS" info commandstats | sed -n 's/^cmdstat_evalsha:.*usec_per_call=\([0-9.]*\).*/\1/p')
  python3 - "$c" "$before" "$after" $((ssq1 - ssq0)) $((redis1 - redis0)) "$(requests "$WORK/redis.json")" \
    "$memory_cpu" "${script:-0}" "$WORK/redis.json" "$(getconf CLK_TCK)" <<'PY'
import json, sys
c, before, after, ssq, redis, n, memory, script, run, hz = sys.argv[1:]
(s0, c0), (s1, c1) = (map(float, x.split()) for x in (before, after))
n, tick = int(n), 1e6 / int(hz)
d = json.load(open(run))
rps = sum(s["requests_per_second"] for s in d["series"].values())
print(f"{c:>4} {rps:10,.0f} {(s1 - s0) / (c1 - c0):14.1f} {(c1 - c0) / n:13.3f} {int(ssq) * tick / n:12.1f} "
      f"{int(redis) * tick / n:12.1f} {float(memory):14.1f} {float(script):16.1f}")
PY
done
