#!/usr/bin/env bash
# Space under steady send-and-delete on MySQL (MariaDB): a queue filled
# with a backlog (BACKLOG messages of 256 B), then ROUNDS rounds of the
# round-trip load (64 clients sending, receiving and deleting, ROUND_SECONDS each;
# its senders may outpace its deleters, and the backlog then grows). After
# each round: the rows of ssq_messages, its file on disk (.ibd), and what
# InnoDB counts as used (DATA_LENGTH) and free inside it (DATA_FREE). Space
# is reused when the file's size per live row stays as it was after the
# fill however many messages were deleted.
#   bash loadtest/space.sh [SSQ_BINARY]   (BACKLOG=100000, ROUNDS=6, ROUND_SECONDS=30)
set -euo pipefail
cd "$(dirname "$0")/.."
SSQ=${1:-target/release/ssq}
BACKLOG=${BACKLOG:-100000}
ROUNDS=${ROUNDS:-6}
SECONDS_PER_ROUND=${ROUND_SECONDS:-30}
cargo build --release -q -p ssq -p ssq-bench
BENCH=target/release/ssq-bench
source loadtest/lib.sh

start_mariadb
PORT=$(free_port)
$SRV "$SSQ" --listen 127.0.0.1:"$PORT" --mysql-url "$MY_URL" 2>/dev/null & PIDS+=($!)
wait_port "$PORT"
wait_ready "$PORT"
sql() { mariadb --no-defaults -uroot --socket="$MY_DIR/socket" -N -B -e "$1"; }
bench() { $GEN $BENCH --endpoint "http://127.0.0.1:$PORT" --queue-prefix space- --keep-queues --quiet "$@" >/dev/null; }

report() {
  local rows file used free
  rows=$(sql "SELECT count(*) FROM ssq.ssq_messages")
  sql "ANALYZE TABLE ssq.ssq_messages" >/dev/null
  read -r used free < <(sql "SELECT DATA_LENGTH, DATA_FREE FROM information_schema.TABLES \
    WHERE TABLE_SCHEMA = 'ssq' AND TABLE_NAME = 'ssq_messages'")
  file=$(stat -c %s "$MY_DIR/data/ssq/ssq_messages.ibd")
  printf '%-8s %12s %10s %10s %10s %10s\n' "$2" "$1" "$rows" $((file >> 20)) $((used >> 20)) $((free >> 20))
}

bench --scenario fill --prefill "$BACKLOG" --batch 10 --concurrency 32
printf '%-8s %12s %10s %10s %10s %10s\n' round "deleted" rows "file MiB" "used MiB" "free MiB"
deleted=0
report 0 filled
for round in $(seq "$ROUNDS"); do
  bench --scenario roundtrip --concurrency 64 --duration "$SECONDS_PER_ROUND" --json "$MY_DIR/round.json"
  deleted=$(python3 -c "import json, sys; d = json.load(open(sys.argv[1])); \
    print(int(sys.argv[2]) + round(d['series']['delete']['messages_per_second'] * d['seconds']))" \
    "$MY_DIR/round.json" "$deleted")
  report "$deleted" "$round"
done
