#!/usr/bin/env bash
# Two builds of ssq compared by instructions per request, counted by
# valgrind's callgrind: unlike seconds, the count does not move with what
# else the machine is doing, so a small difference is real.
#   bash loadtest/instructions.sh OLD_BINARY [NEW_BINARY]
# For each build, memory-only and Redis-backed (a redis-server of its own):
# an idle wait and stop (the baseline, counted from when it is ready), then 5,000 sends (`fill`, 8
# clients), then round trips (send, receive, delete; 8 clients, 10 s).
# Instructions per request = (instructions of the run - the baseline's) /
# requests. Only ssq's own instructions are counted, not Redis's.
# SIGNED=1: both builds with --credentials (an `id:secret` line, which every
# build reads) and every request signed; NEW_CREDENTIALS=FILE gives the new
# build that file instead (a key of the same id and secret with a policy,
# say, to count what the policy costs). TARGETS="memory" skips Redis.
set -euo pipefail
cd "$(dirname "$0")/.."

OLD=${1:?usage: loadtest/instructions.sh OLD_BINARY [NEW_BINARY]}
NEW=${2:-target/release/ssq}
OUT=target/bench-instructions
rm -rf "$OUT" && mkdir -p "$OUT"
command -v valgrind >/dev/null || { echo "valgrind is needed: apt-get install valgrind" >&2; exit 1; }
cargo build --release -q -p ssq-bench
BENCH=target/release/ssq-bench

source loadtest/lib.sh
SIGN=()
if [ "${SIGNED:-0}" = 1 ]; then
  echo "AKIDBENCH:bench-secret" >"$OUT/credentials"
  SIGN=(--sign AKIDBENCH:bench-secret)
fi
WAIT_PORT_TRIES=600   # ssq under valgrind starts slowly
REDIS_PID=""
# Only the Redis of the measurement running stays behind: ssq is stopped by
# each measurement itself.
cleanup() { [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null; wait 2>/dev/null || true; }

# Waits (at most two minutes) until process $1 uses under 5% of a CPU over a second.
settle() {
  local ticks before
  ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
  for _ in $(seq 1 120); do
    before=$(ticks "$1"); sleep 1
    [ $(( $(ticks "$1") - before )) -lt 5 ] && return 0
  done
}

# measure <label> <binary> <target> <workload: idle|fill|roundtrip>: prints "instructions requests"
measure() {
  local label=$1 binary=$2 target=$3 workload=$4 port args=()
  port=$(free_port)
  if [ "$target" = redis ]; then
    local redis_port; redis_port=$(free_port)
    redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no >/dev/null & REDIS_PID=$!
    wait_port "$redis_port"
    args=(--redis-url "redis://127.0.0.1:$redis_port")
  fi
  if [ ${#SIGN[@]} -gt 0 ]; then
    local credentials=$OUT/credentials
    [ "$label" = new ] && [ -n "${NEW_CREDENTIALS:-}" ] && credentials=$NEW_CREDENTIALS
    args+=(--credentials "$credentials")
  fi
  local out="$OUT/$label-$target-$workload.callgrind"
  RUST_LOG=error valgrind --tool=callgrind --callgrind-out-file="$out" "$binary" --listen 127.0.0.1:"$port" "${args[@]}" 2>/dev/null &
  local pid=$!
  wait_port "$port"
  until curl -sf "http://127.0.0.1:$port/ready" >/dev/null; do sleep 0.1; done
  # Counted from when the start's work in the background (an SNS signing
  # key, made at random length) is done: it varies from run to run, and
  # under valgrind it would hold up the load.
  settle "$pid"
  callgrind_control -z "$pid" >/dev/null
  local requests=0
  case $workload in
    fill)
      $BENCH --endpoint "http://127.0.0.1:$port" --scenario fill --prefill 5000 --concurrency 8 --quiet "${SIGN[@]}" >/dev/null
      requests=5000 ;;
    roundtrip)
      $BENCH --endpoint "http://127.0.0.1:$port" --scenario roundtrip --concurrency 8 --duration 10 --warmup 0 \
        --quiet "${SIGN[@]}" --json "$OUT/$label-$target.json" >/dev/null
      requests=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(s['requests'] for s in d['series'].values()))" "$OUT/$label-$target.json") ;;
  esac
  kill -TERM "$pid"; wait "$pid" || true
  if [ -n "$REDIS_PID" ]; then kill "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null || true; REDIS_PID=""; fi
  # Less the SNS signing key, made in the background at random length.
  local total keygen
  total=$(awk '/^summary:/ {print $2}' "$out")
  keygen=$(callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null \
    | awk '/SigningKey::generate/ && !found {gsub(",", "", $1); print $1; found = 1}')
  echo "$(( total - ${keygen:-0} )) $requests"
}

printf '%-7s %-10s %14s %14s %8s\n' target workload "old instr/req" "new instr/req" new/old
for target in ${TARGETS:-memory redis}; do
  declare -A base=()
  for label in old new; do
    binary=$OLD; [ $label = new ] && binary=$NEW
    read -r base[$label] _ < <(measure "$label" "$binary" "$target" idle)
  done
  for workload in fill roundtrip; do
    declare -A per=()
    for label in old new; do
      binary=$OLD; [ $label = new ] && binary=$NEW
      read -r instructions requests < <(measure "$label" "$binary" "$target" "$workload")
      per[$label]=$(( (instructions - base[$label]) / requests ))
    done
    printf '%-7s %-10s %14d %14d %8.3f\n' "$target" "$workload" "${per[old]}" "${per[new]}" \
      "$(python3 -c "print(${per[new]} / ${per[old]})")"
  done
done
