#!/usr/bin/env bash
# Sharded groups (`--shards`), measured side by side on one machine and one
# Redis (AOF everysec):
#   (a) the cost of forwarding: one instance of two (`--shards 2`, one shard
#       each) takes round trips for a queue of its own shard (served
#       directly) and for a queue of the other's (forwarded), alternating
#       three times; server CPU is both instances' and Redis's;
#   (b) a group's throughput: three instances with `--shards 12`, a load
#       generator on each (two thirds of its calls forwarded), against one
#       leader (`--shards 1`) with one generator;
#   (c) memory: FILL_MESSAGES messages (default 1,000,000) over 50 queues,
#       each instance's RSS in the group of three against the one leader's.
# Writes target/bench-results/sharding.md; docs/scaling.md quotes it.
# BENCH_DURATION (seconds per run, default 5).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${BENCH_DURATION:-5}
FILL=${FILL_MESSAGES:-1000000}
OUT=target/bench-results
mkdir -p "$OUT"
cargo build --release -q -p ssq -p ssq-bench
BENCH=target/release/ssq-bench
SSQ=target/release/ssq
source loadtest/lib.sh
rss_mib() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }

start_ssq() { # shards node-id → PORT, PID
  PORT=$(free_port)
  RUST_LOG=warn $SRV $SSQ --listen 127.0.0.1:"$PORT" --redis-url redis://127.0.0.1:"$REDIS" --shards "$1" --node-id "$2" 2>/dev/null &
  PID=$!; PIDS+=($!)
  wait_port "$PORT"
}

# Waits until the instances on the given ports serve every one of $1 shards.
wait_shared() {
  local shards=$1; shift
  for _ in $(seq 1 200); do
    local led=0 port
    for port in "$@"; do
      led=$(( led + $(curl -s 127.0.0.1:"$port"/metrics | awk '/^ssq_shards_led / {print $2}') ))
    done
    [ "$led" = "$shards" ] && return 0
    sleep 0.05
  done
  echo "the shards were not shared out" >&2; return 1
}

json_call() { # port action body
  curl -s -X POST 127.0.0.1:"$1"/ -H "x-amz-target: AmazonSQS.$2" -H 'content-type: application/x-amz-json-1.0' -d "$3"
}

# A queue-name prefix whose first queue (<prefix>0) is, or is not ($2 =
# local / remote), in a shard the instance on port $1 serves.
prefix_on() {
  local port=$1 want=$2 i
  for i in $(seq 1 100); do
    local name="fw-$i-0"
    json_call "$port" CreateQueue "{\"QueueName\":\"$name\"}" >/dev/null
    local here
    here=$(curl -s 127.0.0.1:"$port"/admin/api/overview | python3 -c "import json,sys; print(any(q['key']=='$name' for q in json.load(sys.stdin)['queues']))")
    if { [ "$want" = local ] && [ "$here" = True ]; } || { [ "$want" = remote ] && [ "$here" = False ]; }; then
      echo "fw-$i-"; return 0
    fi
  done
  return 1
}

# (a) forwarding cost
start_redis
start_ssq 2 a; A=$PORT; A_PID=$PID
start_ssq 2 b; B=$PORT; B_PID=$PID
wait_shared 2 "$A" "$B"
DIRECT=$(prefix_on "$A" local); FORWARDED=$(prefix_on "$A" remote)
for round in 1 2 3; do
  for kind in direct forwarded; do
    prefix=$DIRECT; [ $kind = forwarded ] && prefix=$FORWARDED
    echo ">> $kind round $round" >&2
    $GEN $BENCH --endpoint http://127.0.0.1:"$A" --scenario roundtrip --concurrency 8 --duration "$DURATION" --quiet \
      --queue-prefix "$prefix" --label "$kind" --json "$OUT/shard-$kind-$round.json" \
      --server-pid "$A_PID" --server-pid "$B_PID" --server-pid "$REDIS_PID" >/dev/null
  done
done
kill "$A_PID" "$B_PID" "$REDIS_PID"; wait "$A_PID" "$B_PID" "$REDIS_PID" 2>/dev/null || true

# (b) throughput and (c) memory: one leader, then a group of three.
group_run() { # label shards instances
  local label=$1 shards=$2 count=$3 ports=() pids=() i
  start_redis
  for i in $(seq 1 "$count"); do start_ssq "$shards" "$label-$i"; ports+=("$PORT"); pids+=("$PID"); done
  wait_shared "$shards" "${ports[@]}"
  local servers=(); for i in "${pids[@]}" "$REDIS_PID"; do servers+=(--server-pid "$i"); done
  local gens=()
  for i in "${!ports[@]}"; do
    $GEN $BENCH --endpoint http://127.0.0.1:"${ports[$i]}" --scenario roundtrip --concurrency $(( 24 / count )) \
      --queues 12 --queue-prefix "$label-g$i-" --duration "$DURATION" --quiet --label "$label" \
      --json "$OUT/group-$label-$i.json" "${servers[@]}" >/dev/null &
    gens+=($!)
  done
  wait "${gens[@]}"
  # Memory: FILL messages over 50 queues, sent through the first instance.
  $GEN $BENCH --endpoint http://127.0.0.1:"${ports[0]}" --scenario fill --queues 50 --queue-prefix "$label-fill-" \
    --prefill $(( FILL / 50 )) --batch 10 --concurrency 32 --keep-queues --quiet --label "$label" >/dev/null
  local rss=(); for i in "${pids[@]}"; do rss+=("$(rss_mib "$i")"); done
  echo "${rss[*]}" > "$OUT/group-$label-rss"
  kill "${pids[@]}" "$REDIS_PID"; wait "${pids[@]}" "$REDIS_PID" 2>/dev/null || true
}
group_run one 1 1
group_run three 12 3

python3 - "$OUT" "$DURATION" "$FILL" <<'EOF' | tee "$OUT/sharding.md"
import json, statistics, sys
out, duration, fill = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(path): return json.load(open(f"{out}/{path}"))
rows = {}
for kind in ("direct", "forwarded"):
    runs = [load(f"shard-{kind}-{r}.json") for r in (1, 2, 3)]
    rows[kind] = dict(
        rps=statistics.median(sum(s["requests_per_second"] for s in d["series"].values()) for d in runs),
        cpu=statistics.median(d["server_cpu_us_per_request"] for d in runs),
        p50=statistics.median(d["series"]["receive"]["p50_ms"] for d in runs),
        p99=statistics.median(d["series"]["receive"]["p99_ms"] for d in runs),
    )
print(f"Round trips (send, receive, delete) at 8 clients on one instance of two (--shards 2), {duration} s each, median of 3 rounds alternating:\n")
print("| queue in | requests/s | server CPU µs per request (both instances and Redis) | receive p50 ms | receive p99 ms |")
print("|---|---:|---:|---:|---:|")
for kind, label in (("direct", "a shard it leads (served directly)"), ("forwarded", "the other's shard (forwarded)")):
    r = rows[kind]
    print(f"| {label} | {r['rps']:,.0f} | {r['cpu']:.1f} | {r['p50']:.2f} | {r['p99']:.2f} |")
ratio = rows["forwarded"]["cpu"] / rows["direct"]["cpu"]
print(f"\nForwarding costs {ratio:.2f}× the server CPU of a direct request ({rows['forwarded']['cpu'] - rows['direct']['cpu']:.1f} µs more).\n")
def group(label, count):
    docs = [load(f"group-{label}-{i}.json") for i in range(count)]
    rps = sum(sum(s["requests_per_second"] for s in d["series"].values()) for d in docs)
    rss = open(f"{out}/group-{label}-rss").read().split()
    return rps, rss
one, three = group("one", 1), group("three", 3)
print("24 clients in all over 12 queues per generator, round trips; then", f"{fill:,}", "messages of 256 B over 50 queues:\n")
print("| | requests/s, all instances | RSS per instance, MiB |")
print("|---|---:|---|")
print(f"| one leader (--shards 1) | {one[0]:,.0f} | {', '.join(one[1])} |")
print(f"| three instances (--shards 12), each taking a third of the clients | {three[0]:,.0f} | {', '.join(three[1])} |")
print(f"\nThe group's throughput is {three[0] / one[0]:.2f}× one leader's on this machine (every process shares its 2 cores).")
EOF
