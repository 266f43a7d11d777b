"""The pytest plugin the ssq wheel registers (`packaging/python/ssq`),
run as a user's suite runs it: a separate pytest over a test file that
uses every fixture, with the plugin loaded as its entry point loads it
(`-p ssq.pytest_plugin`) and the binary from SSQ_BIN."""
import os
import subprocess
import sys
import textwrap

import boto3

from conftest import ROOT, start_ssq, stop

USER_SUITE = textwrap.dedent(
    '''
    import botocore.exceptions
    import pytest


    def test_a_message_comes_back_when_the_clock_passes_its_visibility(ssq, sqs, clock):
        assert ssq.endpoint.startswith("http://127.0.0.1:")
        url = sqs.create_queue(QueueName="jobs", Attributes={"VisibilityTimeout": "60"})["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="one")
        assert [m["Body"] for m in sqs.receive_message(QueueUrl=url)["Messages"]] == ["one"]
        assert "Messages" not in sqs.receive_message(QueueUrl=url)
        before = clock.now()
        assert clock.advance(61) >= before + 61_000
        assert [m["Body"] for m in sqs.receive_message(QueueUrl=url)["Messages"]] == ["one"]


    def test_every_test_starts_on_an_empty_server(sqs):
        assert sqs.list_queues().get("QueueUrls", []) == []


    def test_faults_act_and_are_listed(sqs, faults):
        url = sqs.create_queue(QueueName="flaky")["QueueUrl"]
        faults.add({"action": "SendMessage", "error": "OverLimit", "count": 1})
        assert "SendMessage" in str(faults.list())
        with pytest.raises(botocore.exceptions.ClientError) as refused:
            sqs.send_message(QueueUrl=url, MessageBody="x")
        assert refused.value.response["Error"]["Code"] == "OverLimit"
        sqs.send_message(QueueUrl=url, MessageBody="x")
        faults.add({"action": "ReceiveMessage", "error": "OverLimit"})


    def test_faults_are_gone_after_the_test_that_added_them(faults):
        assert "ReceiveMessage" not in str(faults.list())


    def test_reset_empties_the_server_mid_test(sqs, reset):
        sqs.create_queue(QueueName="a")
        assert reset()["queues_deleted"] == 1
        assert sqs.list_queues().get("QueueUrls", []) == []
        sqs.create_queue(QueueName="left-behind")
    '''
)


def run_suite(tmp_path, *options):
    (tmp_path / "test_user_suite.py").write_text(USER_SUITE)
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
