"""Screenshots of the admin page for docs/ (`make screenshots`).

Starts the debug build of ssq, gives it a few queues and a minute of
varying traffic so that the rates and sparklines have something to show,
then photographs the queue list and one queue in Debian's headless
Chromium. Usage: python tools/screenshots.py <output directory>
"""
import json
import math
import shutil
import sys
import threading
import time
from pathlib import Path

import boto3
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
from conftest import start_ssq, stop  # noqa: E402

TRAFFIC_SECONDS = 60


def traffic(sqs, orders, events, until):
    """Sends and consumes at a rate that rises and falls."""
    while time.time() < until:
        phase = (until - time.time()) / TRAFFIC_SECONDS
        burst = 1 + int(9 * (0.5 + 0.5 * math.sin(phase * 2 * math.pi * 2)))
        sqs.send_message_batch(
            QueueUrl=orders,
            Entries=[{"Id": str(i), "MessageBody": json.dumps({"order": i, "sku": "BOOK-42", "quantity": 1})}
                     for i in range(burst)],
        )
        got = sqs.receive_message(QueueUrl=orders, MaxNumberOfMessages=10).get("Messages", [])
        if got[1:]:
            sqs.delete_message_batch(
                QueueUrl=orders,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got[1:])],
            )
        sqs.send_message(QueueUrl=events, MessageBody=f"user signed in at {time.time()}", MessageGroupId=f"user-{burst % 3}")
        time.sleep(0.2)


def main(out):
    out.mkdir(parents=True, exist_ok=True)
    proc, endpoint = start_ssq("--node-id", "ssq-1")
    try:
        sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1",
                           aws_access_key_id="test", aws_secret_access_key="test")
        dlq = sqs.create_queue(QueueName="orders-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        orders = sqs.create_queue(QueueName="orders", Attributes={
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "3"})},
            tags={"team": "checkout"})["QueueUrl"]
        events = sqs.create_queue(QueueName="events.fifo", Attributes={
            "FifoQueue": "true", "ContentBasedDeduplication": "true"})["QueueUrl"]
        for i in range(4):
            sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps({"order": 900 + i, "error": "card declined"}),
                             MessageAttributes={"reason": {"DataType": "String", "StringValue": "payment"}})
        traffic(sqs, orders, events, time.time() + TRAFFIC_SECONDS)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                                 args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(f"{endpoint}/")
            page.wait_for_selector('#queues tr[data-queue="orders"]')
            page.screenshot(path=str(out / "admin-queues.png"))
            page.goto(f"{endpoint}/#/queue/orders-dlq")
            page.wait_for_selector("#browser tr.message")
            page.locator("#browser tr.message").first.click()
            page.screenshot(path=str(out / "admin-queue.png"), full_page=True)
            browser.close()
    finally:
        stop(proc)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs"))
