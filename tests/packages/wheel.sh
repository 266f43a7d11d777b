#!/usr/bin/env bash
# The Python wheel as its users get it (`make wheel` builds it into
# target/wheels): installed into a fresh venv, with no cargo on PATH, it
# puts `ssq` on PATH, `ssq --version` answers, and a user's suite
# (tests/packages/user_suite.py) passes with the fixtures the wheel's
# pytest11 entry point registers (no -p, no SSQ_BIN). Prints the wheel's
# size and the time from `pip install` of the wheel to a first answered
# SendMessage (boto3 installed beforehand, as a suite has it).
set -euo pipefail
cd "$(dirname "$0")/../.."

wheel=$(ls -t target/wheels/ssq-*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || { echo "wheel.sh: no wheel in target/wheels: run make wheel" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 -m venv "$dir/venv"
"$dir/venv/bin/pip" install -q boto3 pytest
export PATH="$dir/venv/bin:/usr/local/bin:/usr/bin:/bin"
unset SSQ_BIN
if command -v cargo >/dev/null; then
  echo "wheel.sh: cargo is still on PATH ($(command -v cargo))" >&2; exit 1
fi

started=$(date +%s.%N)
pip install -q "$wheel"
python - <<'PY'
import boto3, ssq
server = ssq.Server.start()
try:
    sqs = boto3.client("sqs", endpoint_url=server.endpoint, region_name="us-east-1",
                       aws_access_key_id="test", aws_secret_access_key="test")
    url = sqs.create_queue(QueueName="first")["QueueUrl"]
    assert sqs.send_message(QueueUrl=url, MessageBody="hello")["MessageId"]
finally:
    server.stop()
PY
answered=$(date +%s.%N)

[ "$(command -v ssq)" = "$dir/venv/bin/ssq" ] || { echo "wheel.sh: ssq is not the wheel's: $(command -v ssq)" >&2; exit 1; }
version=$(ssq --version)
case "$version" in
  "ssq "[0-9]*" ("*")") ;;
  *) echo "wheel.sh: ssq --version said: $version" >&2; exit 1 ;;
esac
cp tests/packages/user_suite.py "$dir/test_user_suite.py"
(cd "$dir" && pytest -q -p no:cacheprovider test_user_suite.py)

size=$(stat -c %s "$wheel")
echo "wheel.sh: $(basename "$wheel"): $((size / 1024)) KiB; $version;" \
  "pip install to a first answered SendMessage: $(python3 -c "print(f'{$answered - $started:.2f}')") s"
