"""A user's suite over ssq's pytest fixtures (`packaging/python/ssq`),
using every one of them: `tests/python/test_pytest_plugin.py` runs it with
the plugin from the checkout, `tests/packages/wheel.sh` with the plugin the
installed wheel registers. (Not named test_*: pytest runs it only there.)"""
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
