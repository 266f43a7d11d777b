"""boto3 clients of ssq in either of SQS's protocols, for the tests."""
import json
from pathlib import Path

import boto3


def query_protocol_model(tmp_path):
    """A data directory with SQS's model for the Query protocol.

    botocore ships SQS's model for the JSON protocol only; the Query
    protocol's element names (flattened lists and maps) and result wrappers
    are added back here, as AWS's Query API defines them.
    """
    import gzip

    import botocore

    source = Path(botocore.__file__).parent / "data" / "sqs" / "2012-11-05" / "service-2.json.gz"
    model = json.loads(gzip.open(source).read())
    model["metadata"].update(
        protocol="query", protocols=["query"], xmlNamespace="http://queue.amazonaws.com/doc/2012-11-05/"
    )
    for name, operation in model["operations"].items():
        if "output" in operation:
            operation["output"]["resultWrapper"] = f"{name}Result"
    shapes = model["shapes"]
    element_names = {
        ("ReceiveMessageResult", "Messages"): "Message",
        ("Message", "Attributes"): "Attribute",
        ("Message", "MessageAttributes"): "MessageAttribute",
        ("ReceiveMessageRequest", "AttributeNames"): "AttributeName",
        ("ReceiveMessageRequest", "MessageSystemAttributeNames"): "MessageSystemAttributeName",
        ("ReceiveMessageRequest", "MessageAttributeNames"): "MessageAttributeName",
        ("SendMessageRequest", "MessageAttributes"): "MessageAttribute",
        ("CreateQueueRequest", "Attributes"): "Attribute",
        ("CreateQueueRequest", "tags"): "Tag",
        ("SetQueueAttributesRequest", "Attributes"): "Attribute",
        ("GetQueueAttributesRequest", "AttributeNames"): "AttributeName",
        ("GetQueueAttributesResult", "Attributes"): "Attribute",
        ("TagQueueRequest", "Tags"): "Tag",
        ("ListQueueTagsResult", "Tags"): "Tag",
        ("UntagQueueRequest", "TagKeys"): "TagKey",
        ("AddPermissionRequest", "AWSAccountIds"): "AWSAccountId",
        ("AddPermissionRequest", "Actions"): "ActionName",
    }
    for (shape, member), element in element_names.items():
        shapes[shape]["members"][member]["locationName"] = element
        target = shapes[shapes[shape]["members"][member]["shape"]]
        target["flattened"] = True
    for name in ["MessageSystemAttributeMap", "MessageBodyAttributeMap", "QueueAttributeMap"]:
        shapes[name]["key"]["locationName"] = "Name"
        shapes[name]["value"]["locationName"] = "Value"
    shapes["TagMap"]["key"]["locationName"] = "Key"
    shapes["TagMap"]["value"]["locationName"] = "Value"
    target = tmp_path / "botocore-data" / "sqs" / "2012-11-05"
    target.mkdir(parents=True)
    (target / "service-2.json").write_text(json.dumps(model))
    return tmp_path / "botocore-data"


def sqs_client(endpoint_url, data_path=None):
    """boto3's SQS client; with `data_path`, one that loads its model there."""
    import botocore.session

    session = botocore.session.get_session()
    if data_path:
        session.get_component("data_loader").search_paths.insert(0, str(data_path))
    return boto3.Session(botocore_session=session).client(
        "sqs",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
