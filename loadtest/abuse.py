#!/usr/bin/env python3
"""Hostile clients and an unlucky Redis, measured: the figures of issue 17.

Each scenario starts its own ssq processes (and redis-server where needed) on
free loopback ports, abuses them for a bounded time, and prints one line.
Run it against two builds to compare them side by side:

    python3 loadtest/abuse.py --bin target/release/ssq --bin /tmp/old/ssq

Scenarios (all by default; pick with --only NAME):
  deep-query    a Query parameter name of 13,000 dot-separated parts
  slow-heads    500 clients trickling headers, --max-connections 500: a new
                client's ListQueues latency (p50/p99/max) and the server's RSS
  stalled-bodies 200 clients sending 5 MiB bodies and stalling: the RSS
  stalled-bodies-signed  the same against --credentials, unsigned
  fifo-dedup    200,000 FIFO messages with fresh dedup ids, sent and deleted,
                --max-bytes 16MiB: the RSS growth and whether sends were refused
  redis-stall   three instances, default timings, DEBUG SLEEP 3: seconds in
                which no instance acknowledged a SendMessage
  redis-loading a lone instance started with a Redis loading a 3M-key AOF:
                time from Redis answering PONG to the instance being ready

Only the standard library; traffic only to 127.0.0.1; every loop is bounded.
"""
import argparse
import asyncio
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, limit=20):
    deadline = time.time() + limit
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {port}")


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Ssq:
    def __init__(self, binary, *args):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "--listen", f"127.0.0.1:{self.port}", *args],
            env={**os.environ, "RUST_LOG": "error"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def call(port, action, body, timeout=10):
    """One JSON-protocol call on a new connection: (status, parsed body)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(
            "POST",
            "/",
            json.dumps(body),
            {"X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": "application/x-amz-json-1.0"},
        )
        response = connection.getresponse()
        data = response.read()
        return response.status, (json.loads(data) if data else {})
    finally:
        connection.close()


class Redis:
    def __init__(self, *args, directory=None):
        self.port = free_port()
        self.dir = directory or tempfile.mkdtemp(prefix="ssq-abuse-redis-")
        self.args = args
        self.start()

    def start(self):
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--dir", self.dir, "--enable-debug-command", "yes", *self.args],
            stdout=subprocess.DEVNULL,
        )
        wait_port(self.port)

    def command(self, *words, timeout=60):
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            s.sendall((" ".join(words) + "\r\n").encode())
            return s.recv(65536).decode(errors="replace")

    def stop(self):
        self.proc.kill()
        self.proc.wait()

    def remove(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def deep_query(binary):
    server = Ssq(binary)
    body = "Action=ListQueues&" + ".".join(["a"] * 13_000) + "=1"
    try:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        connection.request("POST", "/", body, {"Content-Type": "application/x-www-form-urlencoded"})
        answer = f"HTTP {connection.getresponse().status}"
    except OSError as error:
        answer = f"no answer ({type(error).__name__})"
    time.sleep(0.3)
    code = server.proc.poll()
    server.stop()
    return f"{answer}; process {'alive' if code is None else f'exited with {code}'}"


def latencies_during(port, seconds):
    """A new client's ListQueues, one after another, each on a new connection."""
    samples, failures = [], 0
    deadline = time.time() + seconds
    while time.time() < deadline:
        started = time.time()
        try:
            status, _ = call(port, "ListQueues", {}, timeout=15)
            ok = status == 200
        except OSError:
            ok = False
        samples.append(time.time() - started)
        failures += not ok
    samples.sort()
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    return samples, p99, failures


async def trickle(port, stop_at):
    """Opens a connection and sends one header byte a second; reconnects when cut."""
    while time.time() < stop_at:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            while time.time() < stop_at:
                await asyncio.sleep(1)
                writer.write(b"X")
                await writer.drain()
        except (OSError, ConnectionError):
            await asyncio.sleep(0.05)


def slow_heads(binary):
    server = Ssq(binary, "--max-connections", "500")
    stop_at = time.time() + 25

    async def all_of_them():
        await asyncio.gather(*(trickle(server.port, stop_at) for _ in range(500)))

    def attack():
        asyncio.run(all_of_them())

    attacker = threading.Thread(target=attack)
    attacker.start()
    time.sleep(3)
    samples, p99, failures = latencies_during(server.port, 15)
    rss = rss_mib(server.proc.pid)
    attacker.join()
    server.stop()
    return (f"new client: {len(samples)} calls, p50 {statistics.median(samples) * 1e3:.0f} ms, "
            f"p99 {p99 * 1e3:.0f} ms, max {samples[-1] * 1e3:.0f} ms, {failures} failed/timed out; "
            f"server RSS {rss:.0f} MiB")


async def stall_body(port, hold_until):
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                     b"Content-Length: 5242000\r\n\r\nAction=SendMessage&MessageBody=")
        chunk = b"a" * 65536
        for _ in range(79):  # about 5 MiB, a little short of the length
            writer.write(chunk)
            await asyncio.wait_for(writer.drain(), 2)
        await asyncio.sleep(max(0, hold_until - time.time()))
        writer.close()
    except (OSError, ConnectionError, asyncio.TimeoutError):
        pass


def stalled_bodies(binary, *args):
    server = Ssq(binary, *args)
    before = rss_mib(server.proc.pid)
    hold_until = time.time() + 12
    peak = [before]

    async def all_of_them():
        await asyncio.wait_for(asyncio.gather(*(stall_body(server.port, hold_until) for _ in range(200))), 20)

    def attack():
        asyncio.run(all_of_them())

    attacker = threading.Thread(target=attack)
    attacker.start()
    while attacker.is_alive():
        peak[0] = max(peak[0], rss_mib(server.proc.pid))
        time.sleep(0.2)
    server.stop()
    return f"RSS {before:.0f} MiB before, peak {peak[0]:.0f} MiB during 200 stalled 5 MiB bodies"


def stalled_bodies_signed(binary):
    """The same with --credentials: the stalled requests carry no signature."""
    with tempfile.NamedTemporaryFile("w", suffix=".credentials", delete=False) as credentials:
        credentials.write("AKIDABUSE:secret\n")
    try:
        return stalled_bodies(binary, "--credentials", credentials.name)
    finally:
        os.unlink(credentials.name)


def fifo_dedup(binary):
    server = Ssq(binary, "--max-bytes", "16MiB")
    _, created = call(server.port, "CreateQueue", {"QueueName": "d.fifo", "Attributes": {"FifoQueue": "true"}})
    url = created["QueueUrl"]
    before = rss_mib(server.proc.pid)
    refused_at = None
    for batch in range(20_000):
        entries = [{"Id": str(i), "MessageBody": "m", "MessageGroupId": f"g{i}",
                    "MessageDeduplicationId": f"dedup-{batch}-{i}-{'x' * 20}"} for i in range(10)]
        status, sent = call(server.port, "SendMessageBatch", {"QueueUrl": url, "Entries": entries})
        if status != 200 or sent.get("Failed"):
            refused_at = batch * 10
            break
        _, got = call(server.port, "ReceiveMessage", {"QueueUrl": url, "MaxNumberOfMessages": 10})
        handles = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got.get("Messages", []))]
        if handles:
            call(server.port, "DeleteMessageBatch", {"QueueUrl": url, "Entries": handles})
    after = rss_mib(server.proc.pid)
    server.stop()
    refused = f"refused (OverLimit) after {refused_at:,} sends" if refused_at is not None else "never refused"
    return f"200,000 sends with --max-bytes 16MiB: {refused}; RSS {before:.0f} -> {after:.0f} MiB"


def ready(port):
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=0.5)
        connection.request("GET", "/ready")
        return connection.getresponse().status == 200
    except OSError:
        return False


def redis_stall(binary):
    redis = Redis("--appendonly", "no")
    nodes = [Ssq(binary, "--redis-url", f"redis://127.0.0.1:{redis.port}", "--node-id", n) for n in "abc"]
    deadline = time.time() + 15
    while not any(ready(n.port) for n in nodes) and time.time() < deadline:
        time.sleep(0.05)
    leader = next(n for n in nodes if ready(n.port))
    url = call(leader.port, "CreateQueue", {"QueueName": "stall"})[1]["QueueUrl"]
    time.sleep(1)
    served = []
    stop = threading.Event()

    def probe():
        # A write: reads are answered from the leader's memory until it
        # steps down, writes need Redis.
        while not stop.is_set():
            ok = False
            for node in nodes:
                try:
                    ok = call(node.port, "SendMessage", {"QueueUrl": url, "MessageBody": "m"}, timeout=1)[0] == 200
                except OSError:
                    pass
                if ok:
                    break
            served.append((time.time(), ok))
            time.sleep(0.02)

    prober = threading.Thread(target=probe)
    prober.start()
    runs = []
    for run in range(5):
        # Stalls start at different points of the renewal cycle (1 s).
        time.sleep(2 + run * 0.2)
        slept_at = time.time()
        redis.command("DEBUG", "SLEEP", "3")
        answered_at = time.time()
        time.sleep(10)
        runs.append((slept_at, answered_at))
    stop.set()
    prober.join()
    for node in nodes:
        node.stop()
    redis.remove()
    results = []
    for slept_at, answered_at in runs:
        window = [(at, ok) for at, ok in served if slept_at - 0.5 <= at <= answered_at + 10]
        failed = [at for at, ok in window if not ok]
        back = next((at for at, ok in window if at > answered_at and ok), None)
        outage = (max(failed) - min(failed)) if failed else 0.0
        results.append((outage, back - answered_at if back else None))
    shown = ", ".join(f"{o:.1f} s" for o, _ in results)
    worst_back = max((b for _, b in results if b is not None), default=None)
    return (f"5 x DEBUG SLEEP 3: seconds without an acknowledged send {shown}; "
            f"served again at worst {worst_back:.1f} s after Redis answered")


def redis_loading(binary):
    redis = Redis("--appendonly", "yes")
    redis.command("DEBUG", "POPULATE", "3000000", "filler", "64", timeout=120)
    redis.command("BGREWRITEAOF")
    deadline = time.time() + 120
    while time.time() < deadline:
        info = redis.command("INFO", "persistence")
        if "aof_rewrite_in_progress:0" in info and "aof_rewrite_scheduled:0" in info:
            break
        time.sleep(0.1)
    redis.stop()
    redis.start()
    node = Ssq(binary, "--redis-url", f"redis://127.0.0.1:{redis.port}")
    started = time.time()
    answered = None
    deadline = started + 60
    result = "not ready within 60 s"
    while time.time() < deadline:
        if answered is None:
            try:
                if redis.command("PING", timeout=1).startswith("+PONG"):
                    answered = time.time()
            except OSError:
                pass
        if ready(node.port):
            result = f"ready {time.time() - answered:.2f} s after Redis answered" if answered else "ready"
            break
        time.sleep(0.02)
    loading = f"{answered - started:.1f} s" if answered else "?"
    node.stop()
    redis.remove()
    return f"Redis loaded 3M keys for {loading}; {result}"


SCENARIOS = {
    "deep-query": deep_query,
    "slow-heads": slow_heads,
    "stalled-bodies": stalled_bodies,
    "stalled-bodies-signed": stalled_bodies_signed,
    "fifo-dedup": fifo_dedup,
    "redis-stall": redis_stall,
    "redis-loading": redis_loading,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", action="append", required=True, help="an ssq binary (repeat to compare)")
    parser.add_argument("--only", action="append", choices=SCENARIOS, help="run only these scenarios")
    args = parser.parse_args()
    for name in args.only or SCENARIOS:
        for binary in args.bin:
            print(f"{name:15} {binary}: {SCENARIOS[name](binary)}", flush=True)


if __name__ == "__main__":
    main()
