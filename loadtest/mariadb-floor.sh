#!/usr/bin/env bash
# What MariaDB itself spends per row a round trip writes, with no ssq in the
# way: the floor under MySQL-backed ssq's CPU per request. A private MariaDB
# (as loadtest/databases.sh starts it) is fed hand-written SQL by its own
# client: transactions that each insert ROWS messages (ssq's stored record of
# a 256-byte body), set the state of ROWS sent earlier (a receive) and delete
# ROWS received earlier (a delete), each as one multi-row statement, then
# COMMIT: 3 x ROWS row writes a transaction, as a group commit of ssq's holds
# about 3 x 11 at 64 clients (ssq_commit_writes). Prints mariadbd's CPU per
# row written for each ROWS, with the log flushed at every commit (as
# installed) and once a second (innodb_flush_log_at_trx_commit = 2).
#   bash loadtest/mariadb-floor.sh   (ROWS="1 11 33 100", WRITES=99000)
set -euo pipefail
cd "$(dirname "$0")/.."
WRITES=${WRITES:-99000}
source loadtest/lib.sh

# The SQL for transactions of $1 rows a statement, WRITES row writes in all.
transactions() {
  python3 - "$1" "$WRITES" <<'PY'
import sys
rows, writes = int(sys.argv[1]), int(sys.argv[2])
record = ('{"id":"15d02b6d-b6dc-412e-9059-14651bf48697","body":"' + "x" * 256
          + '","sender":"000000000000","sent":1796623269055,"m":"c7a139a2b8e92164276f778917ba10b9"}')
state = '{"rc":1,"fr":1796623269061,"rh":5943619101397081044,"st":"f","u":1796623299061,"ra":1796623269061}'
print("CREATE TABLE ssq.floor (queue VARBINARY(1024) NOT NULL, seq BIGINT NOT NULL, body LONGBLOB NOT NULL,"
      " state LONGBLOB NULL, PRIMARY KEY (queue, seq)) ENGINE=InnoDB; USE ssq; SET autocommit = 0;")
for t in range(writes // (3 * rows)):
    sent = range(t * rows, (t + 1) * rows)
    print("INSERT INTO floor VALUES " + ",".join(f"('q',{s},'{record}',NULL)" for s in sent) + ";")
    # The first transaction receives nothing yet, the first two delete nothing.
    print("INSERT INTO floor (queue, seq, body, state) VALUES "
          + ",".join(f"('q',{s - rows},'','{state}')" for s in sent)
          + " ON DUPLICATE KEY UPDATE state = VALUES(state);" if t >= 1 else "")
    print(f"DELETE FROM floor WHERE queue = 'q' AND seq IN ({','.join(str(s - 2 * rows) for s in sent)});" if t >= 2 else "")
    print("COMMIT;")
PY
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
printf '%-34s %6s %18s %10s\n' "innodb_flush_log_at_trx_commit" ROWS "µs CPU/row write" "seconds"
for flush in 1 2; do
  for rows in ${ROWS:-1 11 33 100}; do
    MY_SETTINGS="--innodb-flush-log-at-trx-commit=$flush" start_mariadb
    sql=$(mktemp); TEMP_DIRS+=("$sql"); transactions "$rows" >"$sql"
    transactions=$((WRITES / (3 * rows))); written=$((rows * (3 * transactions - 3)))
    before=$(cpu_ticks "$MARIADBD"); started=$(date +%s%N)
    $GEN mariadb --no-defaults -uroot --socket="$MY_DIR/socket" <"$sql"
    after=$(cpu_ticks "$MARIADBD"); ended=$(date +%s%N)
    python3 -c 'import sys; f, r, t, w, ns = sys.argv[1:]; print(f"{f:<34} {r:>6} {int(t) * 1e4 / int(w):>18.1f} {int(ns) / 1e9:>10.1f}")' \
      "$flush" "$rows" $((after - before)) "$written" $((ended - started))
    kill "$MARIADBD"; wait "$MARIADBD" 2>/dev/null || true
  done
done
