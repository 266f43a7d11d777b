#!/usr/bin/env bash
# `make bench-sns`: a Publish's cost beside a SendMessage's, side by side in
# one run: ssq memory-only and ssq on Redis, each with SendMessage to one
# queue, Publish to a topic with one subscribed queue and with ten (signed
# envelopes, then raw delivery: no envelope to sign), and to a topic with
# ten HTTP endpoints on loopback answering 200 (served by ssq-bench), all
# healthy and then with one of them stuck (server CPU until every
# acknowledged publication reached the healthy ones, and their delivery
# rate while publishing); then
# LocalStack (SNS and SQS in host mode) publishing to one queue, for
# publishes per second under the same load. Prints the ratios the SNS issue
# asks for (server CPU per request, requests per second).
# BENCH_DURATION (seconds per run, default 5); LOCALSTACK_PYTHON (a Python
# with localstack installed, default .venv-localstack/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${BENCH_DURATION:-5}
OUT=target/bench-sns
rm -rf "$OUT" && mkdir -p "$OUT"
cargo build --release -q -p ssq -p ssq-bench
BENCH=target/release/ssq-bench
SSQ=target/release/ssq
source loadtest/lib.sh

MEM=$(free_port); RED=$(free_port)
RUST_LOG=warn $SRV $SSQ --listen 127.0.0.1:$MEM 2>/dev/null & PIDS+=($!); MEM_PID=$!
start_redis
RUST_LOG=warn $SRV $SSQ --listen 127.0.0.1:$RED --redis-url redis://127.0.0.1:$REDIS 2>/dev/null & PIDS+=($!); RED_PID="$! $REDIS_PID"
for port in $MEM $RED; do wait_port $port; done
sleep 1  # the Redis-backed instance takes the lock

run() {  # label endpoint pids scenario queues [ssq-bench options]
  local label=$1 endpoint=$2 pids=$3 scenario=$4 queues=$5 pid_args=()
  shift 5
  for pid in $pids; do pid_args+=(--server-pid "$pid"); done
  echo "== $label" >&2
  $GEN $BENCH --endpoint "$endpoint" --scenario "$scenario" --queues "$queues" --concurrency 64 \
    --duration "$DURATION" --label "$label" --quiet --json "$OUT/$label.json" "${pid_args[@]}" "$@" >/dev/null
}

for store in memory redis; do
  if [ $store = memory ]; then url=http://127.0.0.1:$MEM; pids=$MEM_PID; else url=http://127.0.0.1:$RED; pids=$RED_PID; fi
  run "$store-send" "$url" "$pids" send 1
  run "$store-publish-1" "$url" "$pids" publish 1
  run "$store-publish-10" "$url" "$pids" publish 10
  run "$store-publish-raw-1" "$url" "$pids" publish 1 --raw
  run "$store-publish-raw-10" "$url" "$pids" publish 10 --raw
  # At a steady 400 publications a second (4,000 deliveries), within what
  # the sender takes: as fast as publishers can go, the endpoints' backlogs
  # fill and the Publishes answered Throttled cost CPU of their own.
  run "$store-publish-paced-raw-10" "$url" "$pids" publish 10 --raw --publish-rate 400
  run "$store-publish-hooks-10" "$url" "$pids" publish 0 --raw --hooks 10 --publish-rate 400
  run "$store-publish-hooks-10-stuck-1" "$url" "$pids" publish 0 --raw --hooks 10 --stuck-hooks 1 --publish-rate 400
  run "$store-publish-hooks-10-flat-out" "$url" "$pids" publish 0 --raw --hooks 10
done

LOCALSTACK_PYTHON=${LOCALSTACK_PYTHON:-.venv-localstack/bin/python}
if [ -x "$LOCALSTACK_PYTHON" ]; then
  LS=$(free_port); LS_DIR=$(mktemp -d); TEMP_DIRS+=("$LS_DIR")
  PYTHON_ABS=$(cd "$(dirname "$LOCALSTACK_PYTHON")" && pwd)/$(basename "$LOCALSTACK_PYTHON")
  (cd "$LS_DIR" && GATEWAY_LISTEN=127.0.0.1:$LS SERVICES=sns,sqs EAGER_SERVICE_LOADING=1 DNS_ADDRESS=0 \
    FILESYSTEM_ROOT="$LS_DIR" TMPDIR="$LS_DIR" exec $SRV "$PYTHON_ABS" -m localstack.runtime.main >localstack.log 2>&1) &
  PIDS+=($!); LS_PID=$!
  WAIT_PORT_TRIES=1200 wait_port $LS
  sleep 3
  run localstack-publish-1 http://127.0.0.1:$LS "$LS_PID" publish 1
else
  echo "LocalStack is left out: set LOCALSTACK_PYTHON to a Python with localstack installed" >&2
fi

python3 - "$OUT" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
runs = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
def rate(label):
    run = runs[label]; kind = "publish" if "publish" in label else "send"
    return run["series"][kind]["requests_per_second"], run["series"][kind]["errors"]
def cpu(label):
    return runs[label]["server_cpu_us_per_request"]
print(f"{'run':<22} {'req/s':>9} {'errors':>7} {'server CPU µs/req':>18}")
for label in sorted(runs):
    rps, errors = rate(label)
    print(f"{label:<22} {rps:>9.0f} {errors:>7} {cpu(label) or 0:>18.1f}")
for store in ("memory", "redis"):
    send = cpu(f"{store}-send")
    for kind, name in (("publish", "signed envelopes"), ("publish-raw", "raw delivery")):
        print(f"{store}, {name}: Publish to 1 queue costs {cpu(f'{store}-{kind}-1') / send:.2f}x a SendMessage's "
              f"server CPU, to 10 queues {cpu(f'{store}-{kind}-10') / send:.2f}x")
for store in ("memory", "redis"):
    hooks, stuck = runs[f"{store}-publish-hooks-10"], runs[f"{store}-publish-hooks-10-stuck-1"]
    print(f"{store}: at 400 Publishes/s, a Publish to 10 HTTP endpoints costs "
          f"{cpu(f'{store}-publish-hooks-10') / cpu(f'{store}-publish-paced-raw-10'):.2f}x "
          f"a Publish to 10 queues in server CPU (raw delivery, deliveries included); with one endpoint stuck the "
          f"other nine take {stuck['hook_deliveries_per_second_each']:.0f}/s each, "
          f"{stuck['hook_deliveries_per_second_each'] / hooks['hook_deliveries_per_second_each']:.2f}x the "
          f"{hooks['hook_deliveries_per_second_each']:.0f}/s each of ten healthy ones"
          + ("" if hooks["hooks_drained"] and stuck["hooks_drained"] else " (NOT every delivery arrived)"))
if "localstack-publish-1" in runs:
    ls = rate('localstack-publish-1')[0]
    for label in ("memory-publish-1", "memory-publish-raw-1", "redis-publish-1", "redis-publish-raw-1"):
        print(f"publishes per second, {label} / LocalStack (signed envelopes): {rate(label)[0] / ls:.1f}x")
PY
