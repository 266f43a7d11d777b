#!/usr/bin/env bash
# A takeover on a SQL store (STORE=postgres, the default, or mysql: MariaDB)
# with a large backlog: one ssq leads and is filled
# with MESSAGES messages (default 1,000,000 of 256 B, in batches of 10),
# a second waits as a passive; the leader is killed (SIGKILL) and the time
# until the passive serves is measured, with the load's own figure from its
# log (`state loaded store="Postgres" ... millis`, or "MySQL"). The lock timings are the
# defaults (TTL 5 s): the takeover is the TTL plus the load.
#   bash loadtest/takeover.sh [SSQ_BINARY]   (MESSAGES=1000000, STORE=postgres|mysql)
set -euo pipefail
cd "$(dirname "$0")/.."
SSQ=${1:-target/release/ssq}
MESSAGES=${MESSAGES:-1000000}
cargo build --release -q -p ssq -p ssq-bench
BENCH=target/release/ssq-bench
source loadtest/lib.sh

STORE=${STORE:-postgres}
case $STORE in
  postgres) PG_SETTINGS="-c max_wal_size=4GB" start_postgres; FLAG=--postgres-url; URL=$PG_URL; NAME=Postgres ;;
  mysql) start_mariadb; FLAG=--mysql-url; URL=$MY_URL; NAME=MySQL ;;
  *) echo "STORE is postgres or mysql, not $STORE" >&2; exit 1 ;;
esac

LEADER=$(free_port); PASSIVE=$(free_port)
WORK=$(mktemp -d); TEMP_DIRS+=("$WORK")
RUST_LOG=warn "$SSQ" --listen 127.0.0.1:$LEADER "$FLAG" "$URL" --node-id leader 2>"$WORK/leader.log" & LEADER_PID=$!; PIDS+=($!)
wait_port $LEADER
wait_ready "$LEADER"
RUST_LOG=info "$SSQ" --listen 127.0.0.1:$PASSIVE "$FLAG" "$URL" --node-id passive 2>"$WORK/passive.log" & PIDS+=($!)
wait_port $PASSIVE
$BENCH --endpoint "http://127.0.0.1:$LEADER" --scenario fill --prefill "$MESSAGES" --batch 10 --concurrency 32 --keep-queues --quiet
kill -9 $LEADER_PID
killed=$(date +%s.%N)
until curl -sf "http://127.0.0.1:$PASSIVE/ready" >/dev/null; do sleep 0.02; done
served=$(date +%s.%N)
loaded=$(grep -o "state loaded store=\"$NAME\".*" "$WORK/passive.log" | tail -1)
python3 -c "import sys; print(f'{int(sys.argv[3])} messages: the passive served {float(sys.argv[2]) - float(sys.argv[1]):.2f} s after the kill (lock TTL 5 s)')" "$killed" "$served" "$MESSAGES"
echo "its log: $loaded"
