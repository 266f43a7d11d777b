"""The admin page at GET /, in a real browser (Debian's headless Chromium,
driven by Playwright), checked through the SQS API afterwards.

SSQ_SCREENSHOTS=<dir> saves screenshots of the pages there (`make
screenshots` writes the ones in docs/).
"""
import base64
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import boto3
import pytest
from playwright.sync_api import expect, sync_playwright

from conftest import free_port, start_ssq, stop, wait_for_port

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = os.environ.get("SSQ_SCREENSHOTS")


def client(endpoint, key="test", secret="test"):
    return boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=key,
        aws_secret_access_key=secret,
    )


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


def screenshot(page, name):
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / name), full_page=True)


def counts(sqs, url):
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return (
        int(attributes["ApproximateNumberOfMessages"]),
        int(attributes["ApproximateNumberOfMessagesNotVisible"]),
    )


def test_the_page_lists_browses_sends_purges_and_redrives(browser):
    proc, endpoint = start_ssq("--node-id", "admin-test")
    try:
        sqs = client(endpoint)
        dlq = sqs.create_queue(QueueName="orders-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        orders = sqs.create_queue(
            QueueName="orders",
            Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "1"})},
        )["QueueUrl"]
        for i in range(2):
            sqs.send_message(QueueUrl=orders, MessageBody=f"failed order {i}")
        # Received once and let go, then received again: both move to the DLQ.
        sqs.receive_message(QueueUrl=orders, MaxNumberOfMessages=10, VisibilityTimeout=0)
        assert "Messages" not in sqs.receive_message(QueueUrl=orders, MaxNumberOfMessages=10)
        assert counts(sqs, dlq) == (2, 0)

        browse = sqs.create_queue(QueueName="browse")["QueueUrl"]
        for body in ["first", "second", "third"]:
            sqs.send_message(
                QueueUrl=browse,
                MessageBody=body,
                MessageAttributes={"kind": {"DataType": "String", "StringValue": "test"}},
            )
        taken = sqs.receive_message(QueueUrl=browse, VisibilityTimeout=300)["Messages"]
        assert [m["Body"] for m in taken] == ["first"]
        fifo = sqs.create_queue(
            QueueName="events.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"}
        )["QueueUrl"]
        sqs.send_message(QueueUrl=fifo, MessageBody="event", MessageGroupId="g")

        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{endpoint}/")

        # The list: every queue with its counts, and the dead-letter links.
        row = page.locator('#queues tr[data-queue="browse"]')
        expect(row.locator("td.visible")).to_have_text("2")
        expect(row.locator("td.in-flight")).to_have_text("1")
        expect(row.locator("td.delayed")).to_have_text("0")
        expect(page.locator('#queues tr[data-queue="orders-dlq"] td.visible')).to_have_text("2")
        expect(page.locator('#queues tr[data-queue="orders"] td.links')).to_contain_text("orders-dlq")
        expect(page.locator('#queues tr[data-queue="orders-dlq"] td.links')).to_contain_text("orders")
        expect(page.locator('#queues tr[data-queue="events.fifo"]')).to_contain_text("FIFO")
        expect(page.locator("#role")).to_have_text("memory-only")
        expect(page.locator("#storage")).to_have_text("in memory only: lost on exit")
        expect(page.locator(".notice.open")).to_contain_text("This page is open")
        screenshot(page, "admin-queues.png")

        # One queue: its messages, whatever their state, without receiving them.
        row.locator("a").click()
        expect(page.locator("#queue-name")).to_have_text("browse")
        messages = page.locator("#browser tr.message")
        expect(messages).to_have_count(3)
        expect(messages.nth(0)).to_contain_text("in flight")
        expect(messages.nth(1)).to_contain_text("visible")
        messages.nth(1).click()
        expect(page.locator("#browser tr.detail:visible pre.body")).to_have_text("second")
        expect(page.locator("#browser tr.detail:visible")).to_contain_text("kind (String)")

        # Send through the form.
        page.fill("#send-body", "sent from the page")
        page.fill('input[name="attribute-name"]', "colour")
        page.fill('input[name="attribute-value"]', "blue")
        page.click("#send button[type=submit]")
        expect(page.locator("#send .notice.done")).to_contain_text("Sent message")
        expect(messages).to_have_count(4)
        screenshot(page, "admin-queue.png")

        # Browsing changed nothing: the in-flight message is still in flight,
        # and the others are received for the first time now.
        received = sqs.receive_message(
            QueueUrl=browse,
            MaxNumberOfMessages=10,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )["Messages"]
        assert [m["Body"] for m in received] == ["second", "third", "sent from the page"]
        assert {m["Attributes"]["ApproximateReceiveCount"] for m in received} == {"1"}
        assert received[2]["MessageAttributes"]["colour"]["StringValue"] == "blue"

        # Purge, after a confirmation.
        page.click("#purge")
        expect(page.locator("#purge-confirmation")).to_be_visible()
        page.click("#purge-confirm")
        expect(page.locator("#purge-result .notice.done")).to_contain_text("Purged browse")
        assert counts(sqs, browse) == (0, 0)

        # Redrive the dead-letter queue back to its source.
        page.goto(f"{endpoint}/#/queue/orders-dlq")
        expect(page.locator("#queue-name")).to_have_text("orders-dlq")
        page.click("#redrive")
        expect(page.locator('#redrive-progress p.task[data-status="COMPLETED"]')).to_contain_text(
            "2 of 2 messages moved", timeout=15000
        )
        assert counts(sqs, dlq) == (0, 0)
        assert counts(sqs, orders) == (2, 0)
        assert errors == [], errors
        page.close()
    finally:
        stop(proc)


def basic(key, secret):
    return "Basic " + base64.b64encode(f"{key}:{secret}".encode()).decode()


def http(url, method="GET", headers=None, body=None):
    request = urllib.request.Request(url, method=method, headers=headers or {}, data=body)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_with_credentials_the_page_needs_them_and_refuses_forged_calls(browser, tmp_path):
    credentials = tmp_path / "credentials"
    credentials.write_text("AKIDADMIN:admin-secret\n")
    proc, endpoint = start_ssq("--credentials", str(credentials))
    try:
        sqs = client(endpoint, "AKIDADMIN", "admin-secret")
        url = sqs.create_queue(QueueName="guarded")["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="kept")

        for path in ["/", "/admin/api/overview", "/admin/api/messages?queue=guarded"]:
            status, _ = http(f"{endpoint}{path}")
            assert status == 401, path
            status, _ = http(f"{endpoint}{path}", headers={"Authorization": basic("AKIDADMIN", "wrong")})
            assert status == 401, path

        auth = basic("AKIDADMIN", "admin-secret")
        status, html = http(f"{endpoint}/", headers={"Authorization": auth})
        assert status == 200
        token = html.split('name="ssq-csrf" content="')[1].split('"')[0]
        purge = json.dumps({"QueueUrl": url}).encode()
        call = {
            "Authorization": auth,
            "content-type": "application/x-amz-json-1.0",
            "x-amz-target": "AmazonSQS.PurgeQueue",
        }
        status, body = http(f"{endpoint}/admin/api/sqs", "POST", call, purge)
        assert (status, json.loads(body)["__type"].split("#")[1]) == (400, "InvalidRequest"), "no token"
        forged = {**call, "x-ssq-csrf": token, "Origin": "http://evil.example"}
        status, body = http(f"{endpoint}/admin/api/sqs", "POST", forged, purge)
        # Refused by the host guard before the page's own checks run.
        assert (status, json.loads(body)["__type"].split("#")[1]) == (403, "AccessDenied"), "another site's origin"
        status, _ = http(f"{endpoint}/admin/api/sqs", "POST", {**call, "x-ssq-csrf": token}, purge)
        assert status == 200
        assert counts(sqs, url) == (0, 0)

        context = browser.new_context(http_credentials={"username": "AKIDADMIN", "password": "admin-secret"})
        page = context.new_page()
        page.goto(f"{endpoint}/")
        expect(page.locator('#queues tr[data-queue="guarded"]')).to_be_visible()
        expect(page.locator(".notice.open")).to_have_count(0)
        context.close()
    finally:
        stop(proc)


def start_redis(directory):
    """A private redis-server on a free port, answering; its port and process."""
    port = free_port()
    redis = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(directory)],
        stdout=subprocess.DEVNULL,
    )
    wait_for_port(port, redis, "redis-server")
    return port, redis


def test_on_disk_the_page_shows_the_directory_and_downloads_a_snapshot(browser, tmp_path):
    data_dir = tmp_path / "data"
    proc, endpoint = start_ssq("--data-dir", str(data_dir))
    try:
        sqs = client(endpoint)
        wait_until(lambda: http(f"{endpoint}/ready")[0] == 200)
        url = sqs.create_queue(QueueName="kept")["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="on disk")
        page = browser.new_page()
        page.goto(f"{endpoint}/")
        expect(page.locator("#storage")).to_contain_text(f"on disk: {data_dir}")
        expect(page.locator("#storage")).to_contain_text("MiB")
        with page.expect_download() as download:
            page.locator("#snapshot").click()
        lines = Path(download.value.path()).read_text().splitlines()
        assert json.loads(lines[0])["snapshot"]["version"] == 2
        assert json.loads(lines[1])["queue"]["name"] == "kept"
        assert json.loads(lines[2])["message"]["body"] == "on disk"
        assert json.loads(lines[-1]) == {"end": {"queues": 1, "messages": 1}}
        page.close()
    finally:
        stop(proc)


def test_a_queue_page_lists_its_noisy_message_groups_and_charts_the_last_hour(browser):
    proc, endpoint = start_ssq()
    try:
        sqs = client(endpoint)
        url = sqs.create_queue(QueueName="tenants", Attributes={"VisibilityTimeout": "600"})["QueueUrl"]
        for first in range(0, 40, 10):
            entries = [{"Id": str(i), "MessageBody": f"big {first + i}", "MessageGroupId": "big"} for i in range(10)]
            sqs.send_message_batch(QueueUrl=url, Entries=entries)
        sqs.send_message(QueueUrl=url, MessageBody="small", MessageGroupId="small")
        page = browser.new_page()
        page.goto(f"{endpoint}/#/queue/tenants")
        expect(page.locator("#queue-name")).to_have_text("tenants")
        expect(page.locator("#noisy-groups")).to_have_count(0)
        for _ in range(3):
            sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
        page.reload()
        panel = page.locator("#noisy-groups")
        expect(panel).to_contain_text("Noisy message groups")
        rows = panel.locator("tbody tr")
        expect(rows).to_have_count(1)
        expect(rows.first.locator("td").nth(0)).to_have_text("big")
        expect(rows.first.locator("td").nth(2)).to_have_text("30")
        # The last hour's depth and age, ending with the counts shown now.
        history = page.locator("#depth-history")
        expect(history).to_contain_text("Messages")
        expect(history).to_contain_text("Age of the oldest message")
        expect(history.locator("svg.history")).to_have_count(2)
        expect(history.locator("svg.history .visible")).to_have_count(1)
        screenshot(page, "admin-noisy-groups.png")
        page.close()
    finally:
        stop(proc)


def test_a_passive_says_who_leads_and_links_there(browser, tmp_path):
    port, redis = start_redis(tmp_path)
    try:
        redis_url = f"redis://127.0.0.1:{port}"
        leader, leader_url = start_ssq("--redis-url", redis_url, "--node-id", "page-leader")
        try:
            wait_until(lambda: http(f"{leader_url}/ready")[0] == 200)
            passive, passive_url = start_ssq("--redis-url", redis_url, "--node-id", "page-passive")
            try:
                wait_until(lambda: json.loads(http(f"{passive_url}/status")[1])["leader"] is not None)
                page = browser.new_page()
                page.goto(f"{passive_url}/")
                expect(page.locator("#role")).to_have_text("passive")
                notice = page.locator(".notice.passive")
                expect(notice).to_contain_text("only the leader does")
                expect(notice.locator("a")).to_have_attribute("href", f"{leader_url}/")
                expect(page.locator("#queues")).to_contain_text("only the leader does")
                page.close()
            finally:
                stop(passive)
        finally:
            stop(leader)
    finally:
        redis.kill()
        redis.wait()


def test_a_sharded_member_shows_the_shard_map_and_its_own_queues(browser, tmp_path):
    port, redis = start_redis(tmp_path)
    members = []
    try:
        redis_url = f"redis://127.0.0.1:{port}"
        for name in ("page-a", "page-b"):
            members.append(start_ssq("--redis-url", redis_url, "--node-id", name, "--shards", "4"))

        def shares():
            return [json.loads(http(f"{url}/status")[1])["shards_led"] for _, url in members]

        wait_until(lambda: shares() == [2, 2])
        (_, a_url), (_, b_url) = members
        sqs = client(a_url)
        names = [f"sharded-{i}" for i in range(8)]
        for name in names:
            sqs.create_queue(QueueName=name)
        overview = json.loads(http(f"{a_url}/admin/api/overview")[1])
        here = {q["key"] for q in overview["queues"]}
        assert here and here < set(names), "the member lists the queues of its own shards only"

        page = browser.new_page()
        page.goto(f"{a_url}/")
        expect(page.locator("#role")).to_have_text("member")
        expect(page.locator("#leader")).to_contain_text("leads 2 of 4 shards")
        shards = page.locator("#shards tbody tr")
        expect(shards).to_have_count(4)
        expect(page.locator("#shards")).to_contain_text("served here")
        expect(page.locator("#shards a[href='" + b_url + "/']").first).to_have_text("page-b")
        for name in here:
            expect(page.locator(f"#queues tr[data-queue='{name}']")).to_have_count(1)
        page.close()
    finally:
        for proc, _ in members:
            stop(proc)
        redis.kill()
        redis.wait()


def wait_until(condition, limit=15):
    deadline = time.time() + limit
    while not condition():
        assert time.time() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_the_page_lists_topics_and_subscriptions_and_publishes_a_test_message(browser):
    proc, endpoint = start_ssq("--node-id", "admin-topics")
    try:
        sqs = client(endpoint)
        sns = boto3.client(
            "sns", endpoint_url=endpoint, region_name="us-east-1",
            aws_access_key_id="test", aws_secret_access_key="test",
        )
        paid = sqs.create_queue(QueueName="paid")["QueueUrl"]
        paid_arn = sqs.get_queue_attributes(QueueUrl=paid, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        topic = sns.create_topic(Name="orders")["TopicArn"]
        subscription = sns.subscribe(
            TopicArn=topic, Protocol="sqs", Endpoint=paid_arn, ReturnSubscriptionArn=True,
            Attributes={"FilterPolicy": json.dumps({"kind": ["paid"]}), "RawMessageDelivery": "true"},
        )["SubscriptionArn"]
        # An HTTP endpoint that refuses connections: its confirmation waits
        # to be tried again, as the delivery policy says.
        down = socket.socket()
        down.bind(("127.0.0.1", 0))
        hook = f"http://127.0.0.1:{down.getsockname()[1]}/hook"
        down.close()
        sns.subscribe(TopicArn=topic, Protocol="http", Endpoint=hook)
        sns.publish(TopicArn=topic, Message="refund", MessageAttributes={
            "kind": {"DataType": "String", "StringValue": "refund"}})
        sns.publish(TopicArn=topic, Message="paid", MessageAttributes={
            "kind": {"DataType": "String", "StringValue": "paid"}})

        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{endpoint}/")
        row = page.locator(f'#topics tr[data-topic="{topic}"]')
        expect(row).to_contain_text("orders")
        # subscriptions, published, delivered, failed, filtered out
        expect(row.locator("td.num")).to_have_text(["2", "2", "1", "0", "1"])

        row.locator("a").click()
        sub = page.locator(f'#subscriptions tr[data-subscription="{subscription}"]')
        expect(sub).to_contain_text(paid_arn)
        expect(sub).to_contain_text("confirmed, raw")
        expect(sub).to_contain_text('{"kind": ["paid"]}')
        expect(sub.locator("td.num")).to_have_text(["1", "0", "1", "0", "", ""])
        waiting = page.locator(f'#subscriptions tr:has-text("{hook}")')
        expect(waiting).to_contain_text("pending confirmation")
        # no notification tried (a confirmation is not one), and the
        # confirmation waiting for its next try
        expect(waiting.locator("td.num").nth(4)).to_have_text("0")
        expect(waiting.locator("td.num").nth(5)).to_have_text(re.compile(r"^1 \(oldest \d+ s\)$"))
        screenshot(page, "admin-topic.png")

        # A test message without the attribute its filter asks for: counted
        # as filtered out; the queue gets nothing.
        page.locator("#publish textarea").fill("from the page")
        page.locator("#publish button").click()
        expect(page.locator(".notice.done")).to_have_text("Published.")
        expect(sub.locator("td.num")).to_have_text(["1", "0", "2", "0", "", ""])
        bodies = [m["Body"] for m in sqs.receive_message(QueueUrl=paid, MaxNumberOfMessages=10).get("Messages", [])]
        assert bodies == ["paid"]
        assert errors == []

        # Without the page's token, an SNS call is refused.
        request = urllib.request.Request(
            f"{endpoint}/admin/api/sns", method="POST",
            data=f"Action=DeleteTopic&TopicArn={topic}".encode(),
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(request, timeout=5)
        assert sns.list_topics()["Topics"] == [{"TopicArn": topic}]
    finally:
        stop(proc)
