"""pytest fixtures for code that talks to SQS, registered by the ssq
wheel's `pytest11` entry point: installing the wheel is enough.

- `ssq` (session): a memory-only ssq on a free port with the control API
  and the virtual clock, stopped at the end; `ssq.endpoint` is its URL.
  With `--ssq-endpoint URL` the suite uses a running ssq instead (started
  with `--control-api`, and `--clock virtual` for the `clock` fixture).
- `sqs`: a boto3 SQS client for it; every test that uses it starts on an
  empty server (reset before the test).
- `clock`: `clock.advance(seconds)` moves the queues' time (visibility
  timeouts, delays, retention) without sleeping; `clock.now()`.
- `faults`: `faults.add(rule_or_rules)`, `faults.list()`, `faults.clear()`;
  the rules are removed after the test.
- `reset`: a callable that empties the server mid-test.
"""
import pytest

from . import Server


def pytest_addoption(parser):
    parser.addoption(
        "--ssq-endpoint",
        default=None,
        help="use the ssq running at this URL (with --control-api) instead of starting one",
    )


@pytest.fixture(scope="session")
def ssq(request):
    endpoint = request.config.getoption("--ssq-endpoint")
    if endpoint:
        yield Server(endpoint)
        return
    server = Server.start()
    yield server
    server.stop()


@pytest.fixture
def reset(ssq):
    return ssq.reset


@pytest.fixture
def sqs(ssq):
    import boto3

    ssq.reset()
    return boto3.client(
        "sqs",
        endpoint_url=ssq.endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


class Clock:
    """The virtual clock of the server the suite uses."""

    def __init__(self, server):
        self._server = server

    def now(self):
        """Milliseconds since the Unix epoch, as the queues see them."""
        return self._server.clock_now()

    def advance(self, seconds):
        """Moves time forward by `seconds` (fractions allowed)."""
        return self._server.clock_advance(seconds)


@pytest.fixture
def clock(ssq):
    return Clock(ssq)


class Faults:
    """Fault rules on the server the suite uses (docs/testing.md)."""

    def __init__(self, server):
        self._server = server

    def add(self, rules):
        return self._server.add_faults(rules)

    def list(self):
        return self._server.faults()

    def clear(self):
        return self._server.clear_faults()


@pytest.fixture
def faults(ssq):
    rules = Faults(ssq)
    yield rules
    rules.clear()
