#!/usr/bin/env bash
# The choice of each SQL store's client, measured (loadtest/db-clients/):
# tokio-postgres beside sqlx against a Postgres of its own, then mysql_async
# beside sqlx against a MariaDB of its own, on ssq's two calls. Each
# database flushes lazily here (Postgres's synchronous_commit=off, InnoDB's
# innodb_flush_log_at_trx_commit=2) so that a flush's wait does not hide
# the clients' own cost.
#   bash loadtest/db-clients.sh [SECONDS] [ROUNDS]   (5, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q --manifest-path loadtest/db-clients/Cargo.toml
source loadtest/lib.sh
PG_SETTINGS="-c synchronous_commit=off" start_postgres
MY_SETTINGS="--innodb-flush-log-at-trx-commit=2" start_mariadb
BIN=loadtest/db-clients/target/release/db-clients
$GEN $BIN postgres "$PG_URL" "${1:-5}" "${2:-3}"
$GEN $BIN mysql "$MY_URL" "${1:-5}" "${2:-3}"
