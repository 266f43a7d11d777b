"""SNS through boto3: fan-out to queues with filter policies, raw delivery,
FIFO topics, signatures checked against the certificate ssq serves, and
webhooks (the confirmation handshake, notifications, retries and the
dead-letter queue, allowed destinations, redirects not followed)."""
import base64
import json
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

import boto3
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding

from conftest import start_ssq, stop

KEYS = dict(region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test")


@pytest.fixture
def clients(endpoint):
    return boto3.client("sns", endpoint_url=endpoint, **KEYS), boto3.client("sqs", endpoint_url=endpoint, **KEYS)


def queue(sqs, name, **attributes):
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return url, arn


def drain(sqs, url, wait=0):
    """Every message in the queue, received and deleted."""
    messages = []
    while True:
        got = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=wait, MessageAttributeNames=["All"]
        ).get("Messages", [])
        if not got:
            return messages
        for message in got:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        messages.extend(got)
        wait = 0


def notes(sqs, url):
    return sorted(json.loads(m["Body"])["Message"] for m in drain(sqs, url))


def test_a_publish_reaches_every_queue_its_filter_lets_through(clients):
    sns, sqs = clients
    topic = sns.create_topic(Name="fan-out")["TopicArn"]
    every, every_arn = queue(sqs, "every")
    cheap, cheap_arn = queue(sqs, "cheap")
    refunds, refunds_arn = queue(sqs, "refunds")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=every_arn)
    cheap_subscription = sns.subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=cheap_arn,
        Attributes={"FilterPolicy": json.dumps({"price": [{"numeric": ["<", 10]}]})},
        ReturnSubscriptionArn=True,
    )["SubscriptionArn"]
    sns.subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=refunds_arn,
        Attributes={
            "FilterPolicy": json.dumps({"order": {"kind": [{"prefix": "refund"}]}}),
            "FilterPolicyScope": "MessageBody",
        },
    )
    price = lambda value: {"price": {"DataType": "Number", "StringValue": value}}  # noqa: E731
    sns.publish(TopicArn=topic, Message=json.dumps({"order": {"kind": "sale"}}), MessageAttributes=price("5"))
    sns.publish(TopicArn=topic, Message=json.dumps({"order": {"kind": "refund-1"}}), MessageAttributes=price("50"))
    sns.publish(TopicArn=topic, Message="not json", MessageAttributes=price("9.99"))
    assert len(notes(sqs, every)) == 3
    assert notes(sqs, cheap) == ['not json', '{"order": {"kind": "sale"}}']
    assert notes(sqs, refunds) == ['{"order": {"kind": "refund-1"}}']
    metrics = urllib.request.urlopen(sns.meta.endpoint_url + "/metrics").read().decode()
    assert f'ssq_sns_total{{metric="NumberOfNotificationsFilteredOut",topic="{topic}"}} 3' in metrics
    # And by subscription: the cheap one took two and was kept from one.
    labels = f'subscription="{cheap_subscription}",topic="{topic}"'
    assert f'ssq_sns_subscription_total{{metric="NumberOfNotificationsDelivered",{labels}}} 2' in metrics
    assert f'ssq_sns_subscription_total{{metric="NumberOfNotificationsFilteredOut",{labels}}} 1' in metrics
    sns.unsubscribe(SubscriptionArn=cheap_subscription)
    metrics = urllib.request.urlopen(sns.meta.endpoint_url + "/metrics").read().decode()
    assert cheap_subscription not in metrics, "an ended subscription's series go with it"


def test_raw_delivery_carries_the_message_and_its_attributes(clients):
    sns, sqs = clients
    topic = sns.create_topic(Name="raw")["TopicArn"]
    url, arn = queue(sqs, "raw-copy")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"})
    sns.publish(
        TopicArn=topic,
        Message="plain",
        MessageAttributes={
            "n": {"DataType": "Number", "StringValue": "3"},
            "b": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
        },
    )
    (message,) = drain(sqs, url)
    assert message["Body"] == "plain"
    assert message["MessageAttributes"]["n"] == {"DataType": "Number", "StringValue": "3"}
    assert message["MessageAttributes"]["b"]["BinaryValue"] == b"\x00\x01"


def test_a_fifo_topic_keeps_order_and_drops_duplicates(clients):
    sns, sqs = clients
    topic = sns.create_topic(
        Name="ledger.fifo", Attributes={"FifoTopic": "true", "ContentBasedDeduplication": "true"}
    )["TopicArn"]
    url, arn = queue(sqs, "ledger.fifo", FifoQueue="true")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    first = sns.publish(TopicArn=topic, Message="1", MessageGroupId="g")
    assert sns.publish(TopicArn=topic, Message="1", MessageGroupId="g")["MessageId"] == first["MessageId"]
    batch = sns.publish_batch(
        TopicArn=topic,
        PublishBatchRequestEntries=[{"Id": str(n), "Message": str(n), "MessageGroupId": "g"} for n in (2, 3)],
    )
    assert [entry["Id"] for entry in batch["Successful"]] == ["2", "3"]
    received = []
    for _ in range(3):
        got = sqs.receive_message(QueueUrl=url, AttributeNames=["All"])["Messages"][0]
        received.append(json.loads(got["Body"]))
        assert got["Attributes"]["MessageGroupId"] == "g"
        sqs.delete_message(QueueUrl=url, ReceiptHandle=got["ReceiptHandle"])
    assert [r["Message"] for r in received] == ["1", "2", "3"]
    sequence = [int(r["SequenceNumber"]) for r in received]
    assert sequence == sorted(sequence) and len(set(sequence)) == 3
    with pytest.raises(sns.exceptions.InvalidParameterException):
        sns.publish(TopicArn=topic, Message="no group")


@pytest.mark.parametrize("version", ["1", "2"])
def test_notifications_verify_with_the_certificate_ssq_serves(clients, version):
    sns, sqs = clients
    topic = sns.create_topic(Name=f"signed-{version}", Attributes={"SignatureVersion": version})["TopicArn"]
    url, arn = queue(sqs, f"signed-{version}")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    sns.publish(TopicArn=topic, Message="check me", Subject="hello")
    (message,) = drain(sqs, url)
    document = json.loads(message["Body"])
    assert document["SignatureVersion"] == version
    certificate = x509.load_pem_x509_certificate(urllib.request.urlopen(document["SigningCertURL"]).read())
    fields = ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"]
    signed = "".join(f"{name}\n{document[name]}\n" for name in fields).encode()
    digest = hashes.SHA1() if version == "1" else hashes.SHA256()
    signature = base64.b64decode(document["Signature"])
    certificate.public_key().verify(signature, signed, padding.PKCS1v15(), digest)
    with pytest.raises(Exception):
        certificate.public_key().verify(signature, signed + b"x", padding.PKCS1v15(), digest)


class Receiver:
    """A webhook endpoint on loopback that records what it is sent and
    answers with the status `answer` gives for each request."""

    def __init__(self, answer=lambda request: 200, host="127.0.0.1"):
        self.requests = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {name.lower(): value for name, value in self.headers.items()}
                request = {"path": self.path, "headers": headers, "body": json.loads(body)}
                receiver.requests.append(request)
                status = answer(request)
                self.send_response(status)
                if status in (301, 302):
                    self.send_header("Location", f"http://{host}:{receiver.port}/moved")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = HTTPServer((host, 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://{host}:{self.port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, count, seconds=10):
        deadline = time.time() + seconds
        while len(self.requests) < count and time.time() < deadline:
            time.sleep(0.02)
        return self.requests

    def close(self):
        self.server.shutdown()


# The headers of AWS's requests to an HTTP endpoint, as LocalStack recorded
# them from AWS (test_sns.py's test_subscribe_external_http_endpoint
# snapshot): a confirmation's, and a notification's (with its subscription).
AWS_CONFIRMATION_HEADERS = {
    "accept-encoding", "connection", "content-length", "content-type", "host", "user-agent",
    "x-amz-sns-message-id", "x-amz-sns-message-type", "x-amz-sns-topic-arn",
}


def test_a_webhook_is_confirmed_notified_and_told_when_unsubscribed(clients):
    sns, _ = clients
    receiver = Receiver()
    try:
        topic = sns.create_topic(Name="hooked")["TopicArn"]
        pending = sns.subscribe(TopicArn=topic, Protocol="http", Endpoint=receiver.url)
        assert pending["SubscriptionArn"] == "pending confirmation"
        (confirmation,) = receiver.wait_for(1)
        assert confirmation["headers"]["x-amz-sns-message-type"] == "SubscriptionConfirmation"
        assert confirmation["headers"]["user-agent"] == "Amazon Simple Notification Service Agent"
        assert set(confirmation["headers"]) == AWS_CONFIRMATION_HEADERS
        subscribe_url = confirmation["body"]["SubscribeURL"]
        confirmed = urllib.request.urlopen(subscribe_url).read().decode()  # unsigned, as AWS's link is
        assert "<ConfirmSubscriptionResult>" in confirmed
        (subscription,) = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
        attributes = sns.get_subscription_attributes(SubscriptionArn=subscription["SubscriptionArn"])["Attributes"]
        assert attributes["PendingConfirmation"] == "false"
        sns.publish(TopicArn=topic, Message="hello hook")
        notification = receiver.wait_for(2)[1]
        assert notification["headers"]["x-amz-sns-message-type"] == "Notification"
        assert notification["headers"]["x-amz-sns-subscription-arn"] == subscription["SubscriptionArn"]
        assert set(notification["headers"]) == AWS_CONFIRMATION_HEADERS | {"x-amz-sns-subscription-arn"}
        assert notification["body"]["Message"] == "hello hook"
        sns.unsubscribe(SubscriptionArn=subscription["SubscriptionArn"])
        goodbye = receiver.wait_for(3)[2]
        assert goodbye["body"]["Type"] == "UnsubscribeConfirmation"
    finally:
        receiver.close()


def test_a_failing_webhook_is_retried_by_its_policy_then_dead_lettered(clients):
    sns, sqs = clients
    receiver = Receiver(answer=lambda r: 200 if r["body"]["Type"] == "SubscriptionConfirmation" else 503)
    try:
        topic = sns.create_topic(Name="flaky")["TopicArn"]
        dlq, dlq_arn = queue(sqs, "flaky-dlq")
        arn = sns.subscribe(TopicArn=topic, Protocol="http", Endpoint=receiver.url, ReturnSubscriptionArn=True)[
            "SubscriptionArn"
        ]
        token = receiver.wait_for(1)[0]["body"]["Token"]
        sns.confirm_subscription(TopicArn=topic, Token=token)
        policy = {"healthyRetryPolicy": {"numRetries": 2, "minDelayTarget": 1, "maxDelayTarget": 1}}
        sns.set_subscription_attributes(SubscriptionArn=arn, AttributeName="DeliveryPolicy", AttributeValue=json.dumps(policy))
        sns.set_subscription_attributes(
            SubscriptionArn=arn, AttributeName="RedrivePolicy", AttributeValue=json.dumps({"deadLetterTargetArn": dlq_arn})
        )
        started = time.time()
        sns.publish(TopicArn=topic, Message="undeliverable")
        assert time.time() - started < 1, "a Publish never waits for webhooks"
        (dead,) = drain(sqs, dlq, wait=10)
        assert json.loads(dead["Body"])["Message"] == "undeliverable"
        tries = [r for r in receiver.requests if r["body"]["Type"] == "Notification"]
        assert len(tries) == 3, "one try and the policy's two retries"
        assert time.time() - started >= 2, "the retries waited their delay"
    finally:
        receiver.close()


def test_redirects_are_not_followed(clients):
    sns, _ = clients
    receiver = Receiver(answer=lambda r: 302)
    try:
        topic = sns.create_topic(Name="moved")["TopicArn"]
        sns.subscribe(TopicArn=topic, Protocol="http", Endpoint=receiver.url)
        receiver.wait_for(1)
        time.sleep(1)
        assert [r["path"] for r in receiver.requests] == ["/hook"]
    finally:
        receiver.close()


def test_webhooks_reach_only_destinations_the_operator_allows():
    proc, url = start_ssq("--sns-endpoints", "10.0.0.0/8")
    receiver = Receiver()
    try:
        sns = boto3.client("sns", endpoint_url=url, **KEYS)
        topic = sns.create_topic(Name="walled")["TopicArn"]
        sns.subscribe(TopicArn=topic, Protocol="http", Endpoint=receiver.url)
        assert receiver.wait_for(1, seconds=2) == [], "loopback is not allowed by --sns-endpoints 10.0.0.0/8"
    finally:
        receiver.close()
        stop(proc)


def test_other_protocols_are_refused_naming_what_is_served(clients):
    sns, _ = clients
    topic = sns.create_topic(Name="lambdas")["TopicArn"]
    with pytest.raises(sns.exceptions.InvalidParameterException) as refused:
        sns.subscribe(TopicArn=topic, Protocol="lambda", Endpoint="arn:aws:lambda:us-east-1:000000000000:function:f")
    assert "sqs, http and https" in str(refused.value)


def test_a_publish_with_no_room_for_every_copy_is_refused_whole():
    proc, url = start_ssq("--max-messages", "2")
    try:
        sns = boto3.client("sns", endpoint_url=url, **KEYS)
        sqs = boto3.client("sqs", endpoint_url=url, **KEYS)
        topic = sns.create_topic(Name="crowded")["TopicArn"]
        urls = []
        for n in range(3):
            queue_url, arn = queue(sqs, f"crowded-{n}")
            sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
            urls.append(queue_url)
        with pytest.raises(Exception) as refused:
            sns.publish(TopicArn=topic, Message="three copies, room for two")
        assert "OverLimit" in str(refused.value)
        assert all(drain(sqs, queue_url) == [] for queue_url in urls), "nothing of it is stored"
    finally:
        stop(proc)


def test_maximum_message_size_is_the_topic_s_as_aws_has_it(clients):
    """MaximumMessageSize (SNS Developer Guide, "Publishing large messages"):
    1,024 to 1,048,576 bytes, 262,144 unless set; a publication's message
    and attributes are counted against it; above 256 KiB a topic takes at
    most 100 subscriptions, of SQS queues only."""
    sns, sqs = clients
    large = sns.create_topic(Name="large", Attributes={"MaximumMessageSize": "1048576"})["TopicArn"]
    attributes = sns.get_topic_attributes(TopicArn=large)["Attributes"]
    assert attributes["MaximumMessageSize"] == "1048576"
    plain = sns.create_topic(Name="plain")["TopicArn"]
    assert "MaximumMessageSize" not in sns.get_topic_attributes(TopicArn=plain)["Attributes"]
    for wrong in ["1023", "1048577", "big"]:
        with pytest.raises(sns.exceptions.InvalidParameterException):
            sns.create_topic(Name="wrong-size", Attributes={"MaximumMessageSize": wrong})
        with pytest.raises(sns.exceptions.InvalidParameterException):
            sns.set_topic_attributes(TopicArn=plain, AttributeName="MaximumMessageSize", AttributeValue=wrong)

    url, arn = queue(sqs, "large-copies", MaximumMessageSize="1048576")
    sns.subscribe(TopicArn=large, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"})
    body = "b" * 1_000_000
    attributes = {"kind": {"DataType": "String", "StringValue": "k" * 40_000}}
    sns.publish(TopicArn=large, Message=body, MessageAttributes=attributes)
    copies = drain(sqs, url)
    assert [len(copy["Body"]) for copy in copies] == [1_000_000]
    with pytest.raises(sns.exceptions.InvalidParameterException, match="too long"):
        sns.publish(TopicArn=large, Message="b" * 1_048_577)
    with pytest.raises(sns.exceptions.InvalidParameterException, match="too long"):
        sns.publish(TopicArn=plain, Message="b" * 262_145)
    sns.set_topic_attributes(TopicArn=plain, AttributeName="MaximumMessageSize", AttributeValue="2048")
    with pytest.raises(sns.exceptions.InvalidParameterException, match="too long"):
        sns.publish(TopicArn=plain, Message="b" * 2_049)

    # Above 256 KiB: SQS only, at most 100.
    with pytest.raises(sns.exceptions.InvalidParameterException, match="Protocol"):
        sns.subscribe(TopicArn=large, Protocol="http", Endpoint="http://127.0.0.1:1/hook")
    for n in range(99):
        sns.subscribe(TopicArn=large, Protocol="sqs", Endpoint=f"arn:aws:sqs:us-east-1:000000000000:many-{n}")
    with pytest.raises(sns.exceptions.InvalidParameterException, match="at most 100"):
        sns.subscribe(TopicArn=large, Protocol="sqs", Endpoint="arn:aws:sqs:us-east-1:000000000000:one-too-many")
    hooked = sns.create_topic(Name="hooked")["TopicArn"]
    sns.subscribe(TopicArn=hooked, Protocol="http", Endpoint="http://127.0.0.1:1/hook")
    with pytest.raises(sns.exceptions.InvalidParameterException, match="Protocol"):
        sns.set_topic_attributes(TopicArn=hooked, AttributeName="MaximumMessageSize", AttributeValue="262145")


def test_fifo_throughput_scope_is_for_fifo_topics_and_scopes_deduplication(clients):
    """FifoThroughputScope (API SetTopicAttributes): Topic (deduplication
    across the topic) or MessageGroup (within each group), FIFO topics only."""
    sns, sqs = clients
    standard = sns.create_topic(Name="scoped-standard")["TopicArn"]
    with pytest.raises(sns.exceptions.InvalidParameterException, match="FIFO"):
        sns.set_topic_attributes(TopicArn=standard, AttributeName="FifoThroughputScope", AttributeValue="Topic")
    topic = sns.create_topic(Name="scoped.fifo", Attributes={"FifoTopic": "true"})["TopicArn"]
    with pytest.raises(sns.exceptions.InvalidParameterException):
        sns.set_topic_attributes(TopicArn=topic, AttributeName="FifoThroughputScope", AttributeValue="Queue")
    # The queue deduplicates the copies (they carry the id) within each group too.
    url, arn = queue(
        sqs, "scoped.fifo", FifoQueue="true", DeduplicationScope="messageGroup", FifoThroughputLimit="perMessageGroupId"
    )
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"})

    def publish(group, body):
        return sns.publish(TopicArn=topic, Message=body, MessageGroupId=group, MessageDeduplicationId="same")

    # Topic (the default): one id across the topic.
    first = publish("a", "a-1")
    assert publish("b", "b-1")["MessageId"] == first["MessageId"]
    sns.set_topic_attributes(TopicArn=topic, AttributeName="FifoThroughputScope", AttributeValue="MessageGroup")
    assert sns.get_topic_attributes(TopicArn=topic)["Attributes"]["FifoThroughputScope"] == "MessageGroup"
    # MessageGroup: the same id in another group is another publication.
    in_c = publish("c", "c-1")["MessageId"]
    assert publish("d", "d-1")["MessageId"] != in_c
    assert publish("c", "c-2")["MessageId"] == in_c, "within a group the id still deduplicates"
    assert sorted(m["Body"] for m in drain(sqs, url)) == ["a-1", "c-1", "d-1"]


def test_a_wrong_confirmation_token_is_answered_in_aws_s_words(clients):
    """As recorded against AWS (LocalStack's test_sns_confirm_subscription_wrong_token):
    a token that cannot be one is "Invalid token", a well-formed unknown one
    "Invalid parameter: Token"."""
    sns, _ = clients
    topic = sns.create_topic(Name="confirming")["TopicArn"]
    with pytest.raises(sns.exceptions.InvalidParameterException, match="^.*Invalid token$"):
        sns.confirm_subscription(TopicArn=topic, Token="randomtoken")
    with pytest.raises(sns.exceptions.InvalidParameterException, match="Invalid parameter: Token$"):
        sns.confirm_subscription(TopicArn=topic, Token="51b2ff3e" * 36)
