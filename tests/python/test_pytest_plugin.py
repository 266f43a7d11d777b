"""The pytest plugin the ssq wheel registers (`packaging/python/ssq`),
run as a user's suite runs it: a separate pytest over a test file that
uses every fixture, with the plugin loaded as its entry point loads it
(`-p ssq.pytest_plugin`) and the binary from SSQ_BIN."""
import os
import subprocess
import sys

import boto3

from conftest import ROOT, start_ssq, stop

USER_SUITE = ROOT / "tests" / "packages" / "user_suite.py"


def run_suite(tmp_path, *options):
    (tmp_path / "test_user_suite.py").write_text(USER_SUITE.read_text())
    binary = os.environ.get("SSQ_BIN", str(ROOT / "target" / "debug" / "ssq"))
    env = {**os.environ, "SSQ_BIN": binary, "PYTHONPATH": str(ROOT / "packaging" / "python")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "ssq.pytest_plugin", "-p", "no:cacheprovider", *options,
         str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=120,
    )


def test_the_plugin_starts_a_server_and_its_fixtures_work(tmp_path):
    result = run_suite(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed" in result.stdout


def test_with_ssq_endpoint_the_plugin_uses_a_running_server(tmp_path):
    proc, endpoint = start_ssq("--control-api", "--clock", "virtual")
    try:
        result = run_suite(tmp_path, "--ssq-endpoint", endpoint)
        assert result.returncode == 0, result.stdout + result.stderr
        sqs = boto3.client(
            "sqs", endpoint_url=endpoint, region_name="us-east-1",
            aws_access_key_id="test", aws_secret_access_key="test",
        )
        urls = sqs.list_queues().get("QueueUrls", [])
        assert [url.rsplit("/", 1)[1] for url in urls] == ["left-behind"]
    finally:
        stop(proc)
