"""ssq, an SQS-compatible queue server, for Python test suites.

`binary()` finds the `ssq` executable: `SSQ_BIN` when set, else the one on
PATH (the wheel puts it there). `Server` starts one on a free port and
drives its control API; the pytest plugin (`ssq.pytest_plugin`) builds its
fixtures on it.
"""
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

__all__ = ["Server", "binary"]


def binary():
    """The path of the ssq executable to run."""
    found = os.environ.get("SSQ_BIN") or shutil.which("ssq")
    if not found:
        raise FileNotFoundError("no ssq executable: install the ssq wheel, or set SSQ_BIN to one")
    return found


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """An ssq reachable at `endpoint`: started here (`Server.start`) or
    already running (`Server(endpoint)`). The control API calls need it to
    run with `--control-api`; `clock_advance` needs `--clock virtual`."""

    def __init__(self, endpoint, process=None):
        self.endpoint = endpoint.rstrip("/")
        self.process = process

    @classmethod
    def start(cls, *args, timeout=10.0):
        """Starts a memory-only ssq with the control API and the virtual
        clock on a free loopback port, and waits until it is ready."""
        port = _free_port()
        command = [binary(), "--listen", f"127.0.0.1:{port}", "--control-api", "--clock", "virtual", *args]
        process = subprocess.Popen(command, env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "error")})
        server = cls(f"http://127.0.0.1:{port}", process)
        deadline = time.monotonic() + timeout
        while True:
            try:
                if urllib.request.urlopen(f"{server.endpoint}/ready", timeout=1).status == 200:
                    return server
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"ssq did not become ready within {timeout} s: {' '.join(command)}")
            time.sleep(0.02)

    def stop(self):
        """Stops a server this object started (SIGTERM, then SIGKILL)."""
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.endpoint}{path}", data=data, method=method, headers={"content-type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            raise RuntimeError(f"{method} {path}: {error.code} {error.read().decode(errors='replace')}") from None

    def reset(self):
        """Deletes every queue and topic: `{"queues_deleted": N, "topics_deleted": M}`."""
        return self._call("POST", "/_ssq/reset")

    def clock_now(self):
        """The time the queues see, in milliseconds."""
        return self._call("GET", "/_ssq/clock")["now_millis"]

    def clock_advance(self, seconds):
        """Moves the virtual clock forward; the new time in milliseconds."""
        return self._call("POST", "/_ssq/clock", {"advance_seconds": seconds})["now_millis"]

    def add_faults(self, rules):
        """Adds a fault rule or a list of them (docs/testing.md)."""
        return self._call("POST", "/_ssq/faults", rules)

    def faults(self):
        """The fault rules in force."""
        return self._call("GET", "/_ssq/faults")

    def clear_faults(self):
        """Removes every fault rule."""
        return self._call("DELETE", "/_ssq/faults")
