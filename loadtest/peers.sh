#!/usr/bin/env bash
# ssq against BullMQ and RSMQ on one Redis (AOF everysec): C producers and C
# consumers move messages one per call (and ssq also in batches of 10); the
# figure is the CPU time of the load generator, the server and Redis per
# message sent and consumed. Three rounds, the order rotating each round, at
# C = 1, 8 and 64. The HTTP floor (a server that does no queue work) runs the
# same pipeline, for the cost of its requests alone; around each ssq run the
# Redis commands it caused are counted (INFO commandstats). Called by
# loadtest/run.sh; on its own:
#   bash loadtest/peers.sh OUT_DIR [DURATION]
# with SSQ=path/to/ssq to measure another build (the before of a before/after).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: loadtest/peers.sh OUT_DIR [DURATION]}
DURATION=${2:-${BENCH_DURATION:-5}}
ROUNDS=${PEER_ROUNDS:-3}
SSQ=${SSQ:-target/release/ssq}
BENCH=target/release/ssq-bench
mkdir -p "$OUT"

# The peers, at the versions loadtest/peers/package-lock.json pins.
if [ ! -d loadtest/peers/node_modules/bullmq ] || [ ! -d loadtest/peers/node_modules/rsmq ]; then
  command -v npm >/dev/null || { echo "npm is needed for the BullMQ and RSMQ peers: apt-get install npm" >&2; exit 1; }
  npm ci --prefix loadtest/peers --no-audit --no-fund --loglevel=error
fi

source loadtest/lib.sh

# One Redis for all, as Redis ships it but for AOF everysec (so its default
# AOF rewrites run too).
start_redis
FLOOR_PORT=$(free_port)
$SRV $BENCH --serve-floor 127.0.0.1:"$FLOOR_PORT" 2>/dev/null &
FLOOR_PID=$!; PIDS+=($FLOOR_PID)
SSQ_PORT=$(free_port)
RUST_LOG=warn $SRV "$SSQ" --listen 127.0.0.1:"$SSQ_PORT" --redis-url redis://127.0.0.1:"$REDIS" --redis-prefix ssq-bench 2>/dev/null &
SSQ_PID=$!; PIDS+=($SSQ_PID)
wait_port "$SSQ_PORT"; wait_port "$FLOOR_PORT"
sleep 1   # it takes the lock

# Redis's command counts (calls inside scripts included) as JSON.
commandstats() {
  redis-cli -p "$REDIS" info commandstats | python3 -c '
import json, re, sys
print(json.dumps({m[1]: int(m[2]) for m in re.finditer(r"cmdstat_(\w+):calls=(\d+)", sys.stdin.read())}))'
}

peer() { # system concurrency round
  local system=$1 c=$2 round=$3 json="$OUT/peer-$1-$2-$3.json"
  echo ">> peer $system c=$c round $round" >&2
  case $system in
    ssq) commandstats > "$OUT/peer-ssq-$c-$round.commands-before.json"
         $GEN $BENCH --endpoint http://127.0.0.1:"$SSQ_PORT" --scenario pipeline --concurrency "$c" \
           --duration "$DURATION" --quiet --label ssq --json "$json" --server-pid "$SSQ_PID" --server-pid "$REDIS_PID" >/dev/null
         commandstats > "$OUT/peer-ssq-$c-$round.commands-after.json" ;;
    ssq-batch10) $GEN $BENCH --endpoint http://127.0.0.1:"$SSQ_PORT" --scenario pipeline --concurrency "$c" --batch 10 \
           --duration "$DURATION" --quiet --label ssq-batch10 --json "$json" --server-pid "$SSQ_PID" --server-pid "$REDIS_PID" >/dev/null ;;
    floor) $GEN $BENCH --endpoint http://127.0.0.1:"$FLOOR_PORT" --scenario pipeline --concurrency "$c" \
           --duration "$DURATION" --quiet --label floor --json "$json" --server-pid "$FLOOR_PID" >/dev/null ;;
    bullmq|rsmq) $GEN node loadtest/peers/peer.js --system "$system" --redis-port "$REDIS" --redis-pid "$REDIS_PID" \
           --concurrency "$c" --duration "$DURATION" --json "$json" >/dev/null ;;
  esac
}

rotation=(ssq bullmq rsmq ssq-batch10 floor)
for round in $(seq 1 "$ROUNDS"); do
  for c in 1 8 64; do
    for system in "${rotation[@]}"; do peer "$system" "$c" "$round"; done
  done
  rotation=("${rotation[@]:1}" "${rotation[0]}")
done
