#!/usr/bin/env bash
# The SQL stores (Postgres-backed, MySQL-backed on MariaDB) beside
# Redis-backed and memory-only, side by side in one run on the same load (ssq-bench, 64 clients unless CONCURRENCY says):
# a round trip (send, receive, delete) and sends alone, rounds interleaved
# so that the machine's noise hits all alike. For each: requests/s, and CPU
# per request of ssq and its store together (redis-server; the postmaster
# and every Postgres process, sampled after ssq connected; mariadbd), and the writes
# per group commit (ssq_commit_writes). Postgres runs as installed
# (synchronous_commit on: a commit is flushed before ssq answers), Redis as
# `make bench` runs it (AOF, everysec: a write is flushed within a second).
# pg-lazy is Postgres flushing as lazily as that Redis: the same server,
# another database, synchronous_commit=off in the URL (flushed within
# 0.6 s), for a comparison at equal durability. MariaDB runs as installed
# (innodb_flush_log_at_trx_commit = 1: flushed before ssq answers).
# redis+etcd and postgres+etcd are the same stores with etcd as the lock
# (--lock-url, a one-member etcd): the lock must cost the requests nothing,
# so each is set against its store with the store's own lock (CPU there
# counts etcd's too).
#   bash loadtest/databases.sh [SSQ_BINARY]   (BENCH_DURATION=5, ROUNDS=3, CONCURRENCY=64)
set -euo pipefail
cd "$(dirname "$0")/.."
SSQ=${1:-target/release/ssq}
DURATION=${BENCH_DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-64}
cargo build --release -q -p ssq -p ssq-bench
BENCH=target/release/ssq-bench
source loadtest/lib.sh

start_redis
start_postgres
start_mariadb
start_etcd

psql -h 127.0.0.1 -p "$PG_PORT" -U ssq -d postgres -Xqc 'CREATE DATABASE ssq_lazy'
MEMORY=$(free_port); REDIS_BACKED=$(free_port); PG_BACKED=$(free_port); PG_LAZY=$(free_port); MY_BACKED=$(free_port)
REDIS_ETCD=$(free_port); PG_ETCD=$(free_port)
RUST_LOG=warn $SRV "$SSQ" --listen 127.0.0.1:$MEMORY 2>/dev/null & MEMORY_PID=$!; PIDS+=($!)
RUST_LOG=warn $SRV "$SSQ" --listen 127.0.0.1:$REDIS_BACKED --redis-url redis://127.0.0.1:$REDIS 2>/dev/null & REDIS_SSQ=$!; PIDS+=($!)
RUST_LOG=warn $SRV "$SSQ" --listen 127.0.0.1:$PG_BACKED --postgres-url "$PG_URL" 2>/dev/null & PG_SSQ=$!; PIDS+=($!)
RUST_LOG=warn $SRV "$SSQ" --listen 127.0.0.1:$PG_LAZY \
  --postgres-url "${PG_URL}_lazy?options=-c%20synchronous_commit%3Doff" 2>/dev/null & PG_LAZY_SSQ=$!; PIDS+=($!)
RUST_LOG=error $SRV "$SSQ" --listen 127.0.0.1:$MY_BACKED --mysql-url "$MY_URL" 2>/dev/null & MY_SSQ=$!; PIDS+=($!)
psql -h 127.0.0.1 -p "$PG_PORT" -U ssq -d postgres -Xqc 'CREATE DATABASE ssq_etcd'
RUST_LOG=warn $SRV "$SSQ" --listen 127.0.0.1:$REDIS_ETCD --redis-url redis://127.0.0.1:$REDIS --redis-prefix etcd \
  --lock-url "$ETCD_URL/redis" 2>/dev/null & REDIS_ETCD_SSQ=$!; PIDS+=($!)
RUST_LOG=warn $SRV "$SSQ" --listen 127.0.0.1:$PG_ETCD --postgres-url "${PG_URL}_etcd" \
  --lock-url "$ETCD_URL/postgres" 2>/dev/null & PG_ETCD_SSQ=$!; PIDS+=($!)
SERVED=($REDIS_BACKED $PG_BACKED $PG_LAZY $MY_BACKED $REDIS_ETCD $PG_ETCD)
for port in $MEMORY "${SERVED[@]}"; do wait_port $port; done
for port in "${SERVED[@]}"; do wait_ready "$port"; done

WORK=$(mktemp -d); TEMP_DIRS+=("$WORK")
declare -A URL=([memory]=$MEMORY [redis]=$REDIS_BACKED [postgres]=$PG_BACKED [pg-lazy]=$PG_LAZY [mysql]=$MY_BACKED
  [redis+etcd]=$REDIS_ETCD [postgres+etcd]=$PG_ETCD)
pids_of() { # target: ssq and its store's processes
  case $1 in
    memory) echo "$MEMORY_PID" ;;
    redis) echo "$REDIS_SSQ $REDIS_PID" ;;
    postgres) echo "$PG_SSQ $POSTMASTER $(pgrep -P "$POSTMASTER" | tr '\n' ' ')" ;;
    pg-lazy) echo "$PG_LAZY_SSQ $POSTMASTER $(pgrep -P "$POSTMASTER" | tr '\n' ' ')" ;;
    mysql) echo "$MY_SSQ $MARIADBD" ;;
    redis+etcd) echo "$REDIS_ETCD_SSQ $REDIS_PID $ETCD_PID" ;;
    postgres+etcd) echo "$PG_ETCD_SSQ $ETCD_PID $POSTMASTER $(pgrep -P "$POSTMASTER" | tr '\n' ' ')" ;;
  esac
}
commit_writes() { curl -s "http://127.0.0.1:$1/metrics" | awk '/^ssq_commit_writes_(sum|count)/ {printf "%s ", $2}'; }

rotation=(memory redis postgres pg-lazy mysql redis+etcd postgres+etcd)
for round in $(seq "$ROUNDS"); do
  for scenario in roundtrip send; do
    for target in "${rotation[@]}"; do
      echo ">> round $round: $target $scenario c=$CONCURRENCY" >&2
      pids=(); for pid in $(pids_of $target); do pids+=(--server-pid "$pid"); done
      before=$(commit_writes "${URL[$target]}")
      $GEN $BENCH --endpoint "http://127.0.0.1:${URL[$target]}" --scenario $scenario --concurrency "$CONCURRENCY" \
        --duration "$DURATION" --quiet --label $target --json "$WORK/$target-$scenario-$round.json" "${pids[@]}" >/dev/null
      echo "$before|$(commit_writes "${URL[$target]}")" >"$WORK/$target-$scenario-$round.commits"
    done
    rotation=("${rotation[@]:1}" "${rotation[0]}")
  done
done

python3 - "$WORK" "$ROUNDS" "$CONCURRENCY" <<'PY'
import json, statistics, sys
work, rounds, c = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def figures(target, scenario):
    rps, cpu, per_commit = [], [], []
    for r in range(1, rounds + 1):
        d = json.load(open(f"{work}/{target}-{scenario}-{r}.json"))
        rps.append(sum(s["requests_per_second"] for s in d["series"].values()))
        cpu.append(d["server_cpu_us_per_request"] or 0.0)
        before, after = open(f"{work}/{target}-{scenario}-{r}.commits").read().strip().split("|")
        if before.strip() and after.strip():
            (s0, c0), (s1, c1) = (map(float, x.split()) for x in (before, after))
            if c1 > c0:
                per_commit.append((s1 - s0) / (c1 - c0))
    return statistics.median(rps), statistics.median(cpu), (statistics.median(per_commit) if per_commit else None)
print(f"c={c}, median of {rounds} rounds; CPU is ssq's and its store's together")
print(f"{'scenario':<10} {'target':<9} {'req/s':>9} {'µs CPU/req':>11} {'writes/commit':>14} {'req/s vs Redis':>15} {'CPU vs Redis':>13}")
for scenario in ("roundtrip", "send"):
    redis = figures("redis", scenario)
    for target in ("memory", "redis", "postgres", "pg-lazy", "mysql"):
        rps, cpu, per_commit = figures(target, scenario)
        commits = f"{per_commit:.1f}" if per_commit else "-"
        print(f"{scenario:<10} {target:<9} {rps:>9.0f} {cpu:>11.1f} {commits:>14} {rps / redis[0]:>14.2f}x {cpu / redis[1]:>12.2f}x")
print()
print("etcd as the lock (--lock-url) against the store's own lock; CPU counts etcd's too")
print(f"{'scenario':<10} {'target':<14} {'req/s':>9} {'µs CPU/req':>11} {'req/s vs own lock':>18} {'CPU vs own lock':>16}")
for scenario in ("roundtrip", "send"):
    for store in ("redis", "postgres"):
        own = figures(store, scenario)
        rps, cpu, _ = figures(f"{store}+etcd", scenario)
        print(f"{scenario:<10} {store + '+etcd':<14} {rps:>9.0f} {cpu:>11.1f} {rps / own[0]:>17.2f}x {cpu / own[1]:>15.2f}x")
PY
