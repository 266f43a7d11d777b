#!/usr/bin/env bash
# The choice of Postgres client, measured: tokio-postgres beside sqlx on
# ssq's two calls (loadtest/postgres-clients/src/main.rs), against a Postgres
# of its own. Postgres runs with synchronous_commit=off here so that a
# flush's wait does not hide the clients' own cost.
#   bash loadtest/postgres-clients.sh [SECONDS] [ROUNDS]   (5, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q --manifest-path loadtest/postgres-clients/Cargo.toml
source loadtest/lib.sh
PG_SETTINGS="-c synchronous_commit=off" start_postgres
$GEN loadtest/postgres-clients/target/release/postgres-clients "$PG_URL" "${1:-5}" "${2:-3}"
