#!/usr/bin/env bash
# What a key's identity policy costs: server CPU per request of a signed
# round trip (send, receive, delete) against two memory-only ssq instances
# side by side, both with --credentials: one whose key has no policy
# (every call signed and checked, as before policies), one whose key has a
# four-statement policy (wildcards, NotAction, a Deny, an IpAddress
# condition) that allows the load. Rounds alternate between the two, so
# the machine's drift falls on both. Given a second binary (an earlier
# build), a third instance runs it with the key without a policy, and
# the figures compare the build against it too.
#   bash loadtest/policy-cost.sh [SSQ_BINARY [BASELINE_BINARY]]   (ROUNDS=3, BENCH_DURATION=10, CONCURRENCY=64)
set -euo pipefail
cd "$(dirname "$0")/.."
SSQ=${1:-target/release/ssq}
BASELINE=${2:-}
DURATION=${BENCH_DURATION:-10}
cargo build --release -q -p ssq-bench
BENCH=target/release/ssq-bench
source loadtest/lib.sh

WORK=$(mktemp -d); TEMP_DIRS+=("$WORK")
cat >"$WORK/plain.toml" <<'TOML'
[[keys]]
id = "AKIDBENCH"
secret = "bench-secret"
TOML
cat >"$WORK/policy.toml" <<'TOML'
[[keys]]
id = "AKIDBENCH"
secret = "bench-secret"
policy = '''{"Version": "2012-10-17", "Statement": [
  {"Effect": "Allow", "Action": ["sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage*"], "Resource": "arn:aws:sqs:*:000000000000:ssq-bench-*"},
  {"Effect": "Allow", "NotAction": ["sqs:Delete*", "sqs:Purge*"], "Resource": "arn:aws:sqs:*:*:ssq-bench-*"},
  {"Effect": "Allow", "Action": ["sqs:CreateQueue", "sqs:GetQueueUrl", "sqs:DeleteQueue"], "Resource": "*"},
  {"Effect": "Deny", "Action": "sqs:*", "Resource": "*", "Condition": {"NotIpAddress": {"aws:SourceIp": ["127.0.0.0/8", "::1/128"]}}}]}'''
TOML
PLAIN=$(free_port); POLICY=$(free_port)
RUST_LOG=warn $SRV "$SSQ" --listen 127.0.0.1:$PLAIN --credentials "$WORK/plain.toml" 2>/dev/null & PLAIN_PID=$!; PIDS+=($!)
RUST_LOG=warn $SRV "$SSQ" --listen 127.0.0.1:$POLICY --credentials "$WORK/policy.toml" 2>/dev/null & POLICY_PID=$!; PIDS+=($!)
wait_port $PLAIN; wait_port $POLICY
if [ -n "$BASELINE" ]; then
  EARLIER=$(free_port)
  # An id:secret line: builds before the TOML form read only these.
  echo "AKIDBENCH:bench-secret" >"$WORK/plain.txt"
  RUST_LOG=warn $SRV "$BASELINE" --listen 127.0.0.1:$EARLIER --credentials "$WORK/plain.txt" 2>/dev/null & EARLIER_PID=$!; PIDS+=($!)
  wait_port $EARLIER
fi

run() { # run PORT PID NAME ROUND
  $GEN $BENCH --endpoint "http://127.0.0.1:$1" --scenario roundtrip --concurrency "${CONCURRENCY:-64}" \
    --duration "$DURATION" --quiet --sign AKIDBENCH:bench-secret --json "$WORK/$3-$4.json" --server-pid "$2" >/dev/null
}
for round in $(seq 1 "${ROUNDS:-3}"); do
  [ -n "$BASELINE" ] && run $EARLIER $EARLIER_PID earlier "$round"
  run $PLAIN $PLAIN_PID plain "$round"
  run $POLICY $POLICY_PID policy "$round"
done
python3 - "$WORK" "${ROUNDS:-3}" "$BASELINE" <<'PY'
import json, statistics, sys
work, rounds, baseline = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def figures(name):
    runs = [json.load(open(f"{work}/{name}-{r}.json")) for r in range(1, rounds + 1)]
    cpu = [r["server_cpu_us_per_request"] for r in runs]
    rps = [sum(s["requests_per_second"] for s in r["series"].values()) for r in runs]
    return statistics.median(cpu), statistics.median(rps), cpu
plain, policy = figures("plain"), figures("policy")
rows = [("no policy", plain), ("with a policy", policy)]
if baseline:
    earlier = figures("earlier")
    rows.insert(0, ("earlier build", earlier))
print(f"{'':>22} {'server µs/request':>18} {'requests/s':>11}   per round")
for name, (cpu, rps, each) in rows:
    print(f"{name:>22} {cpu:18.1f} {rps:11,.0f}   {', '.join(f'{c:.1f}' for c in each)}")
print(f"policy / no policy: {policy[0] / plain[0]:.3f}x server CPU per request (medians of {rounds} rounds)")
if baseline:
    print(f"no policy / earlier build: {plain[0] / earlier[0]:.3f}x; with a policy / earlier build: {policy[0] / earlier[0]:.3f}x")
PY
