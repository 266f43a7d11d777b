#!/usr/bin/env bash
# Two builds of ssq side by side in one run: `make bench-compare OLD=path/to/ssq`
# (NEW defaults to target/release/ssq). Each build runs memory-only,
# Redis-backed and on disk (--data-dir, a directory of its own): both
# Redis-backed builds on one redis-server (AOF everysec as in `make
# bench`), each under a key prefix of its own, so that Redis's AOF rewrites,
# which run on the same cores, cost both alike;
# the round trip (send, receive, delete) at 8 and 64 clients and sends at
# 64 clients are run ROUNDS times (default 3), the builds alternating and
# their order turning each round so that machine noise hits both alike.
# The pipeline (C producers and C consumers, one message per call) runs at
# C = 1, 8 and 64 too.
# Prints, per target and scenario, the median requests/s and server CPU per
# request (ssq plus its redis-server) of each build, and the median of the
# per-round new/old ratios; for the pipeline, messages/s and the CPU of the
# load generator, ssq and Redis together per message (µs, as ms per 1,000).
# BENCH_DURATION (seconds per run, default 5) lengthens or shortens it;
# TARGETS (default "memory redis disk") picks which run; NEW_REDIS=unix
# connects the new build to Redis through its Unix socket (the old one
# stays on TCP), so that OLD=NEW measures the socket alone.
set -euo pipefail
cd "$(dirname "$0")/.."

OLD=${1:?usage: loadtest/compare.sh OLD_BINARY [NEW_BINARY]}
NEW=${2:-target/release/ssq}
DURATION=${BENCH_DURATION:-5}
ROUNDS=${ROUNDS:-3}
OUT=target/bench-compare
rm -rf "$OUT" && mkdir -p "$OUT"

command -v redis-server >/dev/null || { echo "redis-server is needed: apt-get install redis-server" >&2; exit 1; }
cargo build --release -q -p ssq-bench
BENCH=target/release/ssq-bench
source loadtest/lib.sh

declare -A URL SERVER_PIDS
start_redis
for build in old new; do
  binary=$OLD; [ $build = new ] && binary=$NEW
  memory=$(free_port); redis=$(free_port); disk=$(free_port)
  RUST_LOG=warn $SRV "$binary" --listen 127.0.0.1:$memory 2>/dev/null & PIDS+=($!); SERVER_PIDS[$build-memory]=$!
  redis_url=redis://127.0.0.1:$REDIS; [ $build = new ] && [ "${NEW_REDIS:-tcp}" = unix ] && redis_url=unix://$REDIS_SOCKET
  RUST_LOG=warn $SRV "$binary" --listen 127.0.0.1:$redis --redis-url "$redis_url" --redis-prefix "$build" 2>/dev/null & PIDS+=($!)
  SERVER_PIDS[$build-redis]="$! $REDIS_PID"
  dir=$(mktemp -d); TEMP_DIRS+=("$dir")
  RUST_LOG=warn $SRV "$binary" --listen 127.0.0.1:$disk --data-dir "$dir" 2>/dev/null & PIDS+=($!); SERVER_PIDS[$build-disk]=$!
  wait_port $memory; wait_port $redis; wait_port $disk
  URL[$build-memory]=http://127.0.0.1:$memory; URL[$build-redis]=http://127.0.0.1:$redis; URL[$build-disk]=http://127.0.0.1:$disk
done
sleep 1   # the Redis-backed instances take their locks

order=(old new)
for round in $(seq 1 "$ROUNDS"); do
  for case in "roundtrip 64" "roundtrip 8" "send 64" "pipeline 1" "pipeline 8" "pipeline 64"; do
    set -- $case
    for target in ${TARGETS:-memory redis disk}; do
      for build in "${order[@]}"; do
        pids=(); for pid in ${SERVER_PIDS[$build-$target]}; do pids+=(--server-pid "$pid"); done
        echo ">> round $round: $build $target $1 c=$2" >&2
        $GEN $BENCH --endpoint "${URL[$build-$target]}" --scenario "$1" --concurrency "$2" --duration "$DURATION" \
          --quiet --label "$build" --json "$OUT/$build-$target-$1-$2-$round.json" "${pids[@]}" >/dev/null
      done
    done
  done
  order=("${order[1]}" "${order[0]}")
done

python3 - "$OUT" <<'EOF'
# The two builds of one round ran next to each other in time: their ratio is
# what noise touches least, so the report gives the median of the per-round
# ratios next to the median figures.
import json, pathlib, statistics, sys
runs = {}
for path in pathlib.Path(sys.argv[1]).glob("*.json"):
    build, target, scenario, concurrency, round_ = path.stem.split("-")
    doc = json.loads(path.read_text())
    if scenario == "pipeline":
        figures = (doc["messages_per_second"], doc["cpu_ms_per_1000_messages"])
    else:
        figures = (sum(s["requests_per_second"] for s in doc["series"].values()), doc["server_cpu_us_per_request"])
    runs.setdefault((target, scenario, int(concurrency)), {}).setdefault(round_, {})[build] = figures
print(f"{'target':<7} {'scenario':<10} {'c':>3} {'old req/s':>10} {'new req/s':>10} {'new/old':>8} "
      f"{'old µs/req':>11} {'new µs/req':>11} {'new/old':>8}")
for (target, scenario, concurrency), rounds in sorted(runs.items()):
    pairs = [r for r in rounds.values() if "old" in r and "new" in r]
    med = statistics.median
    old_rps, new_rps = med([p["old"][0] for p in pairs]), med([p["new"][0] for p in pairs])
    old_cpu, new_cpu = med([p["old"][1] for p in pairs]), med([p["new"][1] for p in pairs])
    rps_ratio = med([p["new"][0] / p["old"][0] for p in pairs])
    cpu_ratio = med([p["new"][1] / p["old"][1] for p in pairs])
    print(f"{target:<7} {scenario:<10} {concurrency:>3} {old_rps:>10.0f} {new_rps:>10.0f} {rps_ratio:>8.3f} "
          f"{old_cpu:>11.1f} {new_cpu:>11.1f} {cpu_ratio:>8.3f}")
EOF
