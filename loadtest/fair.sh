#!/usr/bin/env bash
# Fair queues' effect on quiet tenants, side by side: `make bench-fair`.
# One ssq (memory-only) and ssq-bench's `fair` scenario twice on it: once
# with a MessageGroupId per tenant (fair delivery), once without any (each
# message a tenant of its own, none noisy: delivery as on a server that
# ignores group ids). Each run: a backlog of NOISY_BACKLOG messages from
# one tenant, 20 quiet tenants sending 40 messages a second between them,
# 40 consumers taking about 150 ms a message, for BENCH_DURATION seconds
# (default 20). Prints the quiet tenants' dwell time (send to receive) as
# a Markdown table for docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source loadtest/lib.sh

DURATION=${BENCH_DURATION:-20}
NOISY_BACKLOG=${NOISY_BACKLOG:-5000}
OUT=target/bench-fair
rm -rf "$OUT" && mkdir -p "$OUT"
cargo build --release -q --bin ssq -p ssq -p ssq-bench

run() { # label, then ssq-bench's extra flags
  local label=$1; shift
  local port; port=$(free_port)
  $SRV target/release/ssq --listen "127.0.0.1:$port" >"$OUT/$label.log" 2>&1 &
  local pid=$!; PIDS+=("$pid")
  wait_port "$port"
  $GEN target/release/ssq-bench --endpoint "http://127.0.0.1:$port" --scenario fair \
    --concurrency 40 --tenants 20 --quiet-rate 40 --processing-ms 150 \
    --noisy-backlog "$NOISY_BACKLOG" --duration "$DURATION" --label "$label" \
    --json "$OUT/$label.json" "$@"
  kill "$pid"
}

run fair
run ignored --ignore-groups

python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
rows = [("fair delivery (a MessageGroupId per tenant)", "fair"), ("group ids ignored (no MessageGroupId)", "ignored")]
print("| delivery | quiet dwell p50 | p90 | p99 | quiet received | backlog received |")
print("|---|---|---|---|---|---|")
for title, label in rows:
    r = json.load(open(f"{out}/{label}.json"))
    q, b = r["quiet_dwell_ms"], r["backlog_dwell_ms"]
    print(f"| {title} | {q['p50']:,} ms | {q['p90']:,} ms | {q['p99']:,} ms | {q['received']:,} of {r['quiet_sent']:,} | {b['received']:,} |")
PY
