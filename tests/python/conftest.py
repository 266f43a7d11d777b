"""Starts a memory-only ssq for the Python client tests.

The binary comes from SSQ_BIN, or else target/debug/ssq (built by `cargo test`).
"""
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_ssq(*args):
    """Starts ssq on a free port; returns the process and its URL."""
    binary = os.environ.get("SSQ_BIN", str(ROOT / "target" / "debug" / "ssq"))
    if not Path(binary).exists():
        pytest.fail(f"{binary} does not exist: run `cargo build` first or set SSQ_BIN")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--listen", f"127.0.0.1:{port}", *args], env={**os.environ, "RUST_LOG": "error"}
    )
    wait_for_port(port, proc, "ssq")
    return proc, f"http://127.0.0.1:{port}"


def wait_for_port(port, proc, what):
    """Waits up to 10 s until `proc` accepts connections on `port`."""
    deadline = time.time() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if time.time() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail(f"{what} did not start")
            time.sleep(0.02)


def stop(proc):
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def endpoint():
    proc, url = start_ssq()
    yield url
    stop(proc)


@pytest.fixture(scope="session")
def signed_endpoint(tmp_path_factory):
    """ssq checking signatures made with the key AKIDPY / secret pysecret."""
    credentials = tmp_path_factory.mktemp("credentials") / "credentials"
    credentials.write_text("AKIDPY:pysecret\n")
    proc, url = start_ssq("--credentials", str(credentials))
    yield url
    stop(proc)
