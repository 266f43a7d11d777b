"""boto3 and the AWS CLI against ssq, as users run them.

The MD5 of message attributes is recomputed here from AWS's documented
algorithm, independently of ssq's Rust implementation.
"""
import base64
import hashlib
import json
import os
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError

from clients import query_protocol_model, sqs_client


@pytest.fixture
def sqs(endpoint):
    return boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def attributes_md5(attributes):
    """MD5OfMessageAttributes as documented by AWS (SQS developer guide)."""
    digest = hashlib.md5()

    def put(data):
        digest.update(struct.pack(">I", len(data)))
        digest.update(data)

    for name in sorted(attributes):
        value = attributes[name]
        put(name.encode())
        put(value["DataType"].encode())
        if "StringValue" in value:
            digest.update(b"\x01")
            put(value["StringValue"].encode())
        else:
            digest.update(b"\x02")
            put(value["BinaryValue"])
    return digest.hexdigest()


def test_boto3_round_trip_with_md5s(sqs):
    url = sqs.create_queue(QueueName="boto3-q", Attributes={"VisibilityTimeout": "40"})["QueueUrl"]
    attributes = {
        "s": {"DataType": "String", "StringValue": "välue"},
        "n": {"DataType": "Number.float", "StringValue": "3.14"},
        "b": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xff"},
    }
    body = "body with ümlauts and 🎉"
    sent = sqs.send_message(QueueUrl=url, MessageBody=body, MessageAttributes=attributes)
    assert sent["MD5OfMessageBody"] == hashlib.md5(body.encode()).hexdigest()
    assert sent["MD5OfMessageAttributes"] == attributes_md5(attributes)

    got = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"], AttributeNames=["All"], WaitTimeSeconds=1)
    [message] = got["Messages"]
    assert message["Body"] == body
    assert message["MD5OfBody"] == hashlib.md5(body.encode()).hexdigest()
    assert message["MD5OfMessageAttributes"] == attributes_md5(attributes)
    assert message["MessageAttributes"]["b"]["BinaryValue"] == b"\x00\x01\xff"
    assert message["Attributes"]["ApproximateReceiveCount"] == "1"

    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    again = sqs.receive_message(QueueUrl=url, AttributeNames=["ApproximateReceiveCount"])["Messages"][0]
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"
    sqs.delete_message(QueueUrl=url, ReceiptHandle=again["ReceiptHandle"])
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def test_boto3_batches_long_polling_purge_and_listing(sqs):
    url = sqs.create_queue(QueueName="boto3-batch")["QueueUrl"]
    result = sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": f"m{i}", "MessageBody": f"msg {i}"} for i in range(10)]
    )
    assert len(result["Successful"]) == 10
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert len(received) == 10
    deleted = sqs.delete_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(received)]
    )
    assert len(deleted["Successful"]) == 10

    def send_later():
        time.sleep(0.5)
        sqs.send_message(QueueUrl=url, MessageBody="late")

    threading.Thread(target=send_later).start()
    started = time.monotonic()
    polled = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=10)
    assert polled["Messages"][0]["Body"] == "late"
    assert time.monotonic() - started < 5

    sqs.purge_queue(QueueUrl=url)
    with pytest.raises(ClientError) as error:
        sqs.purge_queue(QueueUrl=url)
    assert error.value.response["Error"]["Code"] == "AWS.SimpleQueueService.PurgeQueueInProgress"
    assert url in sqs.list_queues(QueueNamePrefix="boto3-")["QueueUrls"]


def test_boto3_sees_sqs_error_codes(sqs):
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.get_queue_url(QueueName="never-created")
    url = sqs.create_queue(QueueName="boto3-err")["QueueUrl"]
    with pytest.raises(ClientError) as error:
        sqs.send_message(QueueUrl=url, MessageBody="x", DelaySeconds=1000)
    assert error.value.response["Error"]["Code"] == "InvalidParameterValue"
    assert error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def aws(endpoint, *args):
    """Runs the AWS CLI (from this venv) against ssq and returns parsed JSON."""
    cli = Path(sys.executable).parent / "aws"
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    out = subprocess.run(
        [str(cli), "--endpoint-url", endpoint, "--output", "json", "sqs", *args],
        env=env, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout) if out.stdout.strip() else {}


def test_aws_cli_round_trip(endpoint):
    url = aws(endpoint, "create-queue", "--queue-name", "cli-q")["QueueUrl"]
    assert url.endswith("/000000000000/cli-q")
    sent = aws(endpoint, "send-message", "--queue-url", url, "--message-body", "from the cli",
               "--message-attributes", '{"k": {"DataType": "String", "StringValue": "v"}}')
    assert sent["MD5OfMessageBody"] == hashlib.md5(b"from the cli").hexdigest()
    got = aws(endpoint, "receive-message", "--queue-url", url, "--wait-time-seconds", "1",
              "--message-attribute-names", "All")
    [message] = got["Messages"]
    assert message["Body"] == "from the cli"
    assert message["MessageAttributes"]["k"]["StringValue"] == "v"
    aws(endpoint, "delete-message", "--queue-url", url, "--receipt-handle", message["ReceiptHandle"])
    attrs = aws(endpoint, "get-queue-attributes", "--queue-url", url, "--attribute-names", "All")["Attributes"]
    assert attrs["ApproximateNumberOfMessages"] == "0"
    assert url in aws(endpoint, "list-queues")["QueueUrls"]
    aws(endpoint, "delete-queue", "--queue-url", url)


def test_botocore_presigned_urls_are_accepted_until_they_expire(signed_endpoint):
    """A URL presigned by botocore carries the action's parameters in its
    signed query string; it is used as a POST with the headers it signed."""
    import urllib.error
    import urllib.request

    sqs = boto3.client(
        "sqs",
        endpoint_url=signed_endpoint,
        region_name="us-east-1",
        aws_access_key_id="AKIDPY",
        aws_secret_access_key="pysecret",
    )
    url = sqs.create_queue(QueueName="presigned-q")["QueueUrl"]

    def post(presigned, action, body=b""):
        request = urllib.request.Request(
            presigned,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/x-amz-json-1.0",
                "X-Amz-Target": f"AmazonSQS.{action}",
                "x-amzn-query-mode": "true",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    send = sqs.generate_presigned_url(
        "send_message", Params={"QueueUrl": url, "MessageBody": "via a presigned URL"}, ExpiresIn=60
    )
    status, answer = post(send, "SendMessage")
    assert status == 200, answer
    assert answer["MD5OfMessageBody"] == hashlib.md5(b"via a presigned URL").hexdigest()
    received = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
    assert [m["Body"] for m in received] == ["via a presigned URL"]

    # The body is not signed: it cannot add to or override what the URL says.
    status, answer = post(send, "SendMessage", body=json.dumps({"QueueUrl": url, "MessageBody": "forged"}).encode())
    assert status == 403, answer

    short = sqs.generate_presigned_url("list_queues", Params={}, ExpiresIn=2)
    assert post(short, "ListQueues")[0] == 200
    time.sleep(4.5)
    status, answer = post(short, "ListQueues")
    assert status == 403, answer
    assert "expired" in answer["message"]


@pytest.mark.parametrize("protocol", ["json", "query"])
def test_boto3_peeks_through_the_developer_endpoint(sqs, endpoint, tmp_path, protocol):
    """boto3 pointed at /_aws/sqs/messages looks at messages with
    receive_message, leaving them as they were (LocalStack's API)."""
    data_path = query_protocol_model(tmp_path) if protocol == "query" else None
    developer = sqs_client(f"{endpoint}/_aws/sqs/messages", data_path)
    url = sqs.create_queue(QueueName=f"peek-{protocol}")["QueueUrl"]
    fifo = sqs.create_queue(
        QueueName=f"peek-{protocol}.fifo",
        Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"},
    )["QueueUrl"]
    for body in ["message-1", "message-2"]:
        sqs.send_message(QueueUrl=url, MessageBody=body)
    for body, group in [("message-1", "1"), ("message-2", "1"), ("message-3", "2")]:
        sqs.send_message(QueueUrl=fifo, MessageBody=body, MessageGroupId=group)

    for _ in range(2):
        looked = developer.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
        assert [m["Body"] for m in looked] == ["message-1", "message-2"]
        assert [m["Attributes"]["ApproximateReceiveCount"] for m in looked] == ["0", "0"]
    looked = developer.receive_message(QueueUrl=fifo)["Messages"]
    assert [(m["Body"], m["Attributes"]["MessageGroupId"]) for m in looked] == [
        ("message-1", "1"),
        ("message-2", "1"),
        ("message-3", "2"),
    ]

    with pytest.raises(ClientError) as refused:
        developer.send_message(QueueUrl=url, MessageBody="foobar")
    assert refused.value.response["Error"]["Code"] == "InvalidRequest"
    assert refused.value.response["Error"]["Message"] == "This endpoint only accepts ReceiveMessage calls"

    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
    assert [m["Attributes"]["ApproximateReceiveCount"] for m in received] == ["1", "1"]
