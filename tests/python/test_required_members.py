"""ssq requires the members AWS's model requires, and beyond it only those
AWS's own answers show it requires.

Every action of botocore's SQS model (service-2.json) is called over both
protocols with only the members the model marks required, recursively (a
batch with one entry of its required members, a map with one entry), and
must not be refused for a missing member, neither the whole call nor one
of its batch entries, unless the member is in BEYOND_THE_MODEL: there AWS
answers as that list records, and ssq must answer the same. A member ssq
required beyond the model without such evidence fails here, and so does a
member the model comes to require that this file has no value for.
"""
import gzip
import itertools
import json
from pathlib import Path

import botocore
import pytest
from botocore import xform_name
from botocore.exceptions import ClientError

from clients import query_protocol_model, sqs_client

MODEL = json.loads(
    gzip.open(Path(botocore.__file__).parent / "data" / "sqs" / "2012-11-05" / "service-2.json.gz").read()
)
SHAPES = MODEL["shapes"]
NAMES = itertools.count()

# Values for the plain members the model requires, by member name. A new
# required member fails the test until it has a value here.
TEXTS = {
    "Label": lambda call: "label",
    "Id": lambda call: "entry",
    "MessageBody": lambda call: "body",
    "DataType": lambda call: "String",
    "QueueUrl": lambda call: call.queue_url,
    "QueueName": lambda call: f"required-{next(NAMES)}",
    "ReceiptHandle": lambda call: call.receipt_handle(),
    "SourceArn": lambda call: call.queue_arn,
    "TaskHandle": lambda call: "bm90IGEgdGFzaw==",
}
LISTS = {
    "AWSAccountIds": ["000000000000"],
    "Actions": ["SendMessage"],
    "TagKeys": ["team"],
}
MAPS = {
    "Attributes": {"VisibilityTimeout": "30"},
    "Tags": {"team": "payments"},
}


class Call:
    """One action's call, on a queue of its own (a call may delete it)."""

    def __init__(self, sqs):
        self.sqs = sqs
        name = f"required-{next(NAMES)}"
        self.queue_url = sqs.create_queue(QueueName=name)["QueueUrl"]
        self.queue_arn = f"arn:aws:sqs:us-east-1:000000000000:{name}"

    def receipt_handle(self):
        """The handle of a message sent and received just now."""
        self.sqs.send_message(QueueUrl=self.queue_url, MessageBody="to receive")
        received = self.sqs.receive_message(QueueUrl=self.queue_url, VisibilityTimeout=60)
        return received["Messages"][0]["ReceiptHandle"]

    def minimal(self, shape_name, member=None):
        """A value of the shape holding only what the model requires."""
        shape = SHAPES[shape_name]
        kind = shape["type"]
        if kind == "structure":
            return {
                name: self.minimal(shape["members"][name]["shape"], name) for name in shape.get("required", [])
            }
        if kind == "list":
            if member in LISTS:
                return LISTS[member]
            return [self.minimal(shape["member"]["shape"], member)]
        if kind == "map":
            assert member in MAPS, f"the model requires map {member}: give it a value in MAPS"
            return MAPS[member]
        if kind in ("integer", "long"):
            return 0
        if kind == "boolean":
            return False
        assert member in TEXTS, f"the model requires {member} ({kind}): give it a value in TEXTS"
        return TEXTS[member](self)


# Members AWS requires though its model does not, where AWS's recorded
# answers and its model disagree (the answers win): (action, entry shape,
# member) -> the evidence, and AWS's answer for a call without it.
BEYOND_THE_MODEL = {
    ("ChangeMessageVisibilityBatch", "ChangeMessageVisibilityBatchRequestEntry", "VisibilityTimeout"): {
        # AWS's answer to an entry without it, quoted in aws/aws-sdk-go-v2#2250;
        # the Go SDK's fix (#2767) sends the member always because the
        # service requires it though the model does not (aws/aws-sdk#527).
        "evidence": "aws/aws-sdk-go-v2#2250, #2767",
        "failed_entry": {
            "Code": "MissingParameter",
            "SenderFault": True,
            "Message": "The request must contain the parameter "
            "ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout.",
        },
    },
}


def missing_beyond_the_model(action):
    """What AWS answers for `action`'s entries without the members it
    requires beyond its model: the failed entry it gives, or None."""
    for (named, _, _), answer in BEYOND_THE_MODEL.items():
        if named == action:
            return answer["failed_entry"]
    return None


def test_the_members_beyond_the_model_are_still_optional_in_the_model():
    """Each entry of BEYOND_THE_MODEL is needed only while the model leaves
    the member optional: once the model requires it, the entry goes."""
    for action, shape, member in BEYOND_THE_MODEL:
        assert action in MODEL["operations"], action
        assert member in SHAPES[shape]["members"], (shape, member)
        assert member not in SHAPES[shape].get("required", []), (
            f"the model now requires {shape}.{member}: take it out of BEYOND_THE_MODEL"
        )


@pytest.fixture(params=["json", "query"])
def client(request, endpoint, tmp_path):
    data_path = query_protocol_model(tmp_path) if request.param == "query" else None
    return sqs_client(endpoint, data_path)


@pytest.mark.parametrize("action", sorted(MODEL["operations"]))
def test_only_the_members_the_model_requires_are_required(client, action):
    operation = MODEL["operations"][action]
    call = Call(client)
    params = call.minimal(operation["input"]["shape"]) if "input" in operation else {}
    try:
        answer = getattr(client, xform_name(action))(**params)
        failed = answer.get("Failed", [])
        expected = missing_beyond_the_model(action)
        if expected is None:
            assert not any(entry["Code"] == "MissingParameter" for entry in failed), (
                f"{action} with {params}: an entry was refused for a member the model does not require: {failed}"
            )
        else:
            # AWS refuses the entry, not the call, in its own words.
            assert [{key: entry[key] for key in expected} for entry in failed] == [expected], (
                f"{action} with {params}: {failed}"
            )
    except ClientError as error:
        code = error.response["Error"]["Code"]
        message = error.response["Error"].get("Message", "")
        status = error.response["ResponseMetadata"]["HTTPStatusCode"]
        assert code != "MissingParameter" and "must contain the parameter" not in message, (
            f"{action} with {params} was refused for a member the model does not require: {code}: {message}"
        )
        assert status < 500, f"{action} with {params}: {status} {code}: {message}"
