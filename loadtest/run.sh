#!/usr/bin/env bash
# `make bench`: measures, side by side in one run on this machine,
#   (a) the HTTP floor (ssq-bench --serve-floor: fixed answers, no queue work),
#   (b) ssq memory-only, (c) ssq Redis-backed, (c') ssq on disk (--data-dir), (d) moto's server mode
#   and LocalStack's SQS server in host mode (Python >= 3.12; skipped, and said, without one),
#   (e) ssq on a Redis primary with a replica, with and without --redis-min-replicas 1,
#   (f) ssq against BullMQ and RSMQ on one Redis (loadtest/peers.sh), CPU per message,
#   (g) sharded groups (loadtest/sharding.sh): forwarding cost, group throughput, memory,
# with the same load generator, then the scale checks, and writes
# docs/benchmarks.md and docs/benchmarks.svg.
# BENCH_DURATION (seconds per run, default 5) shortens or lengthens it.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${BENCH_DURATION:-5}
OUT=target/bench-results
rm -rf "$OUT" && mkdir -p "$OUT"

command -v redis-server >/dev/null || { echo "redis-server is needed: apt-get install redis-server" >&2; exit 1; }
cargo build --release -q -p ssq -p ssq-bench
if [ ! -x .venv-bench/bin/moto_server ]; then
  python3 -m venv .venv-bench
  .venv-bench/bin/pip install -q 'moto[server]==5.2.5'
fi
# LocalStack 4.14 needs Python 3.12 or newer: the first found on PATH or in pyenv.
if [ ! -x .venv-localstack/bin/python ]; then
  for python in python3.13 python3.12 "$HOME"/.pyenv/versions/3.1[3-9]*/bin/python3 "$HOME"/.pyenv/versions/3.12*/bin/python3; do
    if command -v "$python" >/dev/null && "$python" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      "$python" -m venv .venv-localstack && .venv-localstack/bin/pip install -q -r loadtest/localstack/requirements.txt
      break
    fi
  done
fi
[ -x .venv-localstack/bin/python ] || echo "LocalStack is left out: it needs Python 3.12 or newer (python3.12 on PATH)" >&2

BENCH=target/release/ssq-bench
SSQ=target/release/ssq
source loadtest/lib.sh
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

FLOOR=$(free_port); MEM=$(free_port); RED=$(free_port); DISK=$(free_port); MOTO=$(free_port)
declare -A SERVER_PIDS
declare -A URL=([floor]=http://127.0.0.1:$FLOOR [memory]=http://127.0.0.1:$MEM [redis]=http://127.0.0.1:$RED
              [disk]=http://127.0.0.1:$DISK [moto]=http://127.0.0.1:$MOTO)
$SRV $BENCH --serve-floor 127.0.0.1:$FLOOR 2>/dev/null & PIDS+=($!); SERVER_PIDS[floor]=$!
RUST_LOG=warn $SRV $SSQ --listen 127.0.0.1:$MEM 2>/dev/null & PIDS+=($!); SERVER_PIDS[memory]=$!
start_redis
RUST_LOG=warn $SRV $SSQ --listen 127.0.0.1:$RED --redis-url redis://127.0.0.1:$REDIS 2>/dev/null & PIDS+=($!)
SERVER_PIDS[redis]="$! $REDIS_PID"
DISK_DIR=$(mktemp -d); TEMP_DIRS+=("$DISK_DIR")
RUST_LOG=warn $SRV $SSQ --listen 127.0.0.1:$DISK --data-dir "$DISK_DIR" 2>/dev/null & PIDS+=($!); SERVER_PIDS[disk]=$!
$SRV .venv-bench/bin/moto_server -p $MOTO >/dev/null 2>&1 & PIDS+=($!); SERVER_PIDS[moto]=$!
for port in $FLOOR $MEM $RED $DISK $MOTO; do wait_port $port; done
if [ -x .venv-localstack/bin/python ]; then
  LOCALSTACK=$(free_port); LOCALSTACK_DIR=$(mktemp -d); TEMP_DIRS+=("$LOCALSTACK_DIR")
  # Host mode, SQS alone, no DNS server; its files in a directory of its own.
  (cd "$LOCALSTACK_DIR" && GATEWAY_LISTEN=127.0.0.1:$LOCALSTACK SERVICES=sqs DNS_ADDRESS=0 FILESYSTEM_ROOT="$LOCALSTACK_DIR" \
    TMPDIR="$LOCALSTACK_DIR" exec $SRV "$OLDPWD/.venv-localstack/bin/python" -m localstack.runtime.main >localstack.log 2>&1) & PIDS+=($!)
  SERVER_PIDS[localstack]=$!
  WAIT_PORT_TRIES=1200 wait_port $LOCALSTACK   # it takes seconds to start
  URL[localstack]=http://127.0.0.1:$LOCALSTACK
fi
sleep 1   # the Redis-backed instance takes the lock

# Progress: each load run says which of the planned ones it is, how long the
# bench has run and about how long the load runs still take; on a terminal
# ssq-bench also shows each second of the run.
PYTHON_PEERS=moto; [ -n "${URL[localstack]:-}" ] && PYTHON_PEERS="moto localstack"
RUNS_PLANNED=$(( 4 * 4 + 4 * 2 + 4 + 2 * 2 * 2 + $(wc -w <<<"$PYTHON_PEERS") * 6 + 4 + 2 ))   # the loops below
RUNS_DONE=0
STARTED=$SECONDS
LIVE=--quiet; [ -t 2 ] && LIVE=
minutes() { printf '%d:%02d' $(( $1 / 60 )) $(( $1 % 60 )); }
run() { # target scenario concurrency [extra args...]
  local target=$1 scenario=$2 concurrency=$3; shift 3
  RUNS_DONE=$(( RUNS_DONE + 1 ))
  local left=$(( (RUNS_PLANNED - RUNS_DONE + 1) * (DURATION + 2) ))
  echo ">> [$RUNS_DONE/$RUNS_PLANNED, $(minutes $(( SECONDS - STARTED ))) in, load runs ~$(minutes $left) left] $target $scenario c=$concurrency" >&2
  local pid pids=()
  for pid in ${SERVER_PIDS[$target]:-}; do pids+=(--server-pid "$pid"); done
  $GEN $BENCH --endpoint "${URL[$target]}" --scenario "$scenario" --concurrency "$concurrency" --duration "$DURATION" \
    $LIVE --label "$target" --json "$OUT/$target-$scenario-$concurrency${SUFFIX:-}.json" "${pids[@]}" "$@" >/dev/null
}

# Round trip against concurrency, interleaved so that machine noise hits all
# alike (the order rotates each round). moto and LocalStack run last and apart:
# each keeps working through its backlog after a run ends, which would slow
# whatever ran next.
rotation=(floor memory redis disk)
for concurrency in 1 8 32 64; do
  for target in "${rotation[@]}"; do
    run $target roundtrip $concurrency
  done
  rotation=("${rotation[@]:1}" "${rotation[0]}")
done
# Send only, and receive+delete of a filled queue, at 64 clients.
for target in floor memory redis disk; do
  run $target send 64
  # Enough that the queue outlasts warm-up and measurement (about 40,000
  # messages/s at most here); the floor always has a message to give.
  if [ $target = floor ]; then prefill=0; else prefill=$(( (DURATION + 2) * 50000 )); fi
  run $target receive 64 --prefill $prefill
done
# Send latency below capacity: sends paced at 5,000/s over 64 clients.
for target in floor memory redis disk; do
  SUFFIX=-paced run $target send 64 --send-rate 5000
done
# Replica-acknowledged commits: a primary (AOF everysec) with one replica, and
# on it two instances under key prefixes of their own, one answering once the
# primary applied a commit, one once the replica holds it too
# (--redis-min-replicas 1).
PRIMARY=$(free_port); REPLICA=$(free_port); ASYNC=$(free_port); CONFIRMED=$(free_port)
PRIMARY_DIR=$(mktemp -d); REPLICA_DIR=$(mktemp -d)
$SRV redis-server --port $PRIMARY --bind 127.0.0.1 --save "" --appendonly yes --appendfsync everysec --dir "$PRIMARY_DIR" >/dev/null & PIDS+=($!)
PRIMARY_PID=$!
$SRV redis-server --port $REPLICA --bind 127.0.0.1 --save "" --appendonly yes --appendfsync everysec --dir "$REPLICA_DIR" \
  --replicaof 127.0.0.1 $PRIMARY >/dev/null & PIDS+=($!)
REPLICA_PID=$!
wait_port $PRIMARY; wait_port $REPLICA
RUST_LOG=warn $SRV $SSQ --listen 127.0.0.1:$ASYNC --redis-url redis://127.0.0.1:$PRIMARY --redis-prefix async 2>/dev/null & PIDS+=($!)
SERVER_PIDS[replicas0]="$! $PRIMARY_PID $REPLICA_PID"
RUST_LOG=warn $SRV $SSQ --listen 127.0.0.1:$CONFIRMED --redis-url redis://127.0.0.1:$PRIMARY --redis-prefix confirmed \
  --redis-min-replicas 1 2>/dev/null & PIDS+=($!)
SERVER_PIDS[replicas1]="$! $PRIMARY_PID $REPLICA_PID"
wait_port $ASYNC; wait_port $CONFIRMED
sleep 1   # both take their locks
URL[replicas0]=http://127.0.0.1:$ASYNC; URL[replicas1]=http://127.0.0.1:$CONFIRMED
rotation=(replicas0 replicas1)
for concurrency in 1 64; do
  for target in "${rotation[@]}"; do
    run $target roundtrip $concurrency
    run $target send $concurrency
  done
  rotation=("${rotation[@]:1}" "${rotation[0]}")
done

for peer in $PYTHON_PEERS; do
  for concurrency in 1 8 32 64; do
    run $peer roundtrip $concurrency
  done
  run $peer send 64
  run $peer receive 64 --prefill 1000
  # It works through its backlog after a run: stopped before what follows.
  kill ${SERVER_PIDS[$peer]} 2>/dev/null || true
done

# Scale checks on fresh memory-only instances.
SCALE=$(free_port)
RUST_LOG=warn $SRV $SSQ --listen 127.0.0.1:$SCALE 2>/dev/null & SCALE_PID=$!; PIDS+=($SCALE_PID)
wait_port $SCALE
URL[scale]=http://127.0.0.1:$SCALE
before=$(rss_kib $SCALE_PID)
$GEN $BENCH --endpoint "${URL[scale]}" --scenario fill --prefill 100000 --message-size 1024 --concurrency 32 --label kib --quiet >/dev/null
after=$(rss_kib $SCALE_PID)
echo "{\"messages\": 100000, \"body_bytes\": 1024, \"rss_before_kib\": $before, \"rss_after_kib\": $after}" > "$OUT/memory-per-message.json"
kill $SCALE_PID

# Receive latency with 10 messages queued against 1,000,000.
SMALL=$(free_port); LARGE=$(free_port)
RUST_LOG=warn $SRV $SSQ --listen 127.0.0.1:$SMALL 2>/dev/null & PIDS+=($!)
RUST_LOG=warn $SRV $SSQ --listen 127.0.0.1:$LARGE 2>/dev/null & PIDS+=($!)
wait_port $SMALL; wait_port $LARGE
URL[small]=http://127.0.0.1:$SMALL; URL[large]=http://127.0.0.1:$LARGE
$GEN $BENCH --endpoint "${URL[large]}" --scenario fill --prefill 1000000 --message-size 64 --concurrency 64 --label fill-1m --quiet --json "$OUT/fill-1m.json" >/dev/null
$GEN $BENCH --endpoint "${URL[small]}" --scenario fill --prefill 10 --message-size 64 --concurrency 1 --label fill-10 --quiet >/dev/null
# The workers send one message for each they take, so the queue keeps its size.
for round in 1 2; do
  run small roundtrip 8 --message-size 64 --keep-queues
  run large roundtrip 8 --message-size 64 --keep-queues
done

# 10,000 queues: create them, then the round trip spread over all of them.
MANY=$(free_port)
RUST_LOG=warn $SRV $SSQ --listen 127.0.0.1:$MANY 2>/dev/null & PIDS+=($!)
wait_port $MANY
URL[many]=http://127.0.0.1:$MANY
run many roundtrip 64 --queues 10000 --keep-queues
scrape_started=$(date +%s%N); curl -s "${URL[many]}/metrics" >/dev/null
echo "{\"metrics_scrape_ms\": $(( ($(date +%s%N) - scrape_started) / 1000000 ))}" > "$OUT/many-queues-scrape.json"

# On disk: 1,000,000 messages of 1 KiB, the space they take, and the time
# from a start after kill -9 until /ready.
RESTART=$(free_port); RESTART_DIR=$(mktemp -d); TEMP_DIRS+=("$RESTART_DIR")
RUST_LOG=warn $SRV $SSQ --listen 127.0.0.1:$RESTART --data-dir "$RESTART_DIR" 2>/dev/null & RESTART_PID=$!; PIDS+=($RESTART_PID)
wait_port $RESTART
$GEN $BENCH --endpoint http://127.0.0.1:$RESTART --scenario fill --prefill 1000000 --queues 1 --batch 10 --message-size 1024 \
  --concurrency 32 --label disk-fill --quiet --json "$OUT/disk-fill-1m.json" >/dev/null
kill -9 $RESTART_PID; wait $RESTART_PID 2>/dev/null || true
disk_bytes=$(du -sb "$RESTART_DIR" | cut -f1)
# Nothing else runs meanwhile: the restart has every core, as a real one does.
restart_started=$(date +%s%N)
RUST_LOG=warn $SSQ --listen 127.0.0.1:$RESTART --data-dir "$RESTART_DIR" 2>/dev/null & RESTART_PID=$!; PIDS+=($RESTART_PID)
until curl -fs "http://127.0.0.1:$RESTART/ready" >/dev/null 2>&1; do sleep 0.02; done
ready_ms=$(( ($(date +%s%N) - restart_started) / 1000000 ))
# Every message came back.
back=$(curl -fs "http://127.0.0.1:$RESTART/metrics" | awk '/^ssq_queue_messages\{/ {sum += $2} END {print sum + 0}')
echo "{\"messages\": 1000000, \"body_bytes\": 1024, \"bytes_on_disk\": $disk_bytes, \"ready_ms\": $ready_ms, \"messages_back\": $back}" \
  > "$OUT/disk-restart-1m.json"
kill $RESTART_PID 2>/dev/null || true

# 1,000 concurrent long-polling consumers, one producer at 500 messages/s.
run memory longpoll 1000 --rate 500

# Against BullMQ and RSMQ on a Redis of their own (with ssq on it too).
bash loadtest/peers.sh "$OUT" "$DURATION"

# Sharded groups: forwarding against direct, a group of three against one
# leader, memory per instance (writes $OUT/sharding.md).
bash loadtest/sharding.sh

# Restore of 1,000,000 messages and failover times are measured by
# `cargo bench --bench restore` and `cargo bench --bench failover`.

{
  echo "{\"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\","
  echo " \"cores\": $(nproc), \"memory\": \"$(free -h | awk '/Mem:/ {print $2}')\","
  echo " \"kernel\": \"$(uname -r)\", \"redis\": \"$(redis-server --version | awk '{print $3}')\","
  echo " \"generator_cpus\": \"$GEN_CPUS\", \"server_cpus\": \"$SRV_CPUS\","
  echo " \"duration\": $DURATION, \"date\": \"$(date -u +%Y-%m-%d)\"}"
} > "$OUT/machine.json"
python3 loadtest/report.py "$OUT" docs/benchmarks.md docs/benchmarks.svg
echo "wrote docs/benchmarks.md and docs/benchmarks.svg"
