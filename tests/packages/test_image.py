"""The container image as its users run it (`make image` builds ssq:latest).

Each test starts containers of the image with --network host (these machines
have no other network) on a free port, and talks to them with boto3, as a
user's suite would. The image is checked for what a deployment relies on:
its size, /ready within a second of the container starting, the
HEALTHCHECK, a non-root user, plain log lines, messages kept on a volume
across `docker restart` and `docker kill`, and a SIGTERM that answers the
calls in flight and exits cleanly within `docker stop`'s grace period.

Run by `make test-packages`; SSQ_IMAGE names another image to check.
"""
import json
import os
import re
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import boto3
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("SSQ_IMAGE", "ssq:latest")
MAX_IMAGE_BYTES = 30 * 1000 * 1000


def docker(*args, check=True):
    result = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout.strip()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def inspect(container, template):
    return docker("inspect", "-f", template, container)


def get(url):
    """The status of GET `url`, or None when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=1) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


def wait_ready(endpoint, within):
    """Seconds until /ready answers 200, failing after `within` seconds."""
    started = time.monotonic()
    while get(f"{endpoint}/ready") != 200:
        if time.monotonic() - started > within:
            raise AssertionError(f"{endpoint}/ready did not answer 200 within {within} s")
        time.sleep(0.01)
    return time.monotonic() - started


def sqs(endpoint):
    credentials = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}
    return boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1", **credentials)


class Containers:
    """Starts containers of the image and removes them (and volumes) after."""

    def __init__(self):
        self.names, self.volumes = [], []

    def run(self, *args, env=()):
        port = free_port()
        name = f"ssq-test-{uuid.uuid4().hex[:12]}"
        environment = [f"SSQ_LISTEN=127.0.0.1:{port}", *env]
        docker(
            "run", "-d", "--name", name, "--network", "host",
            *(flag for pair in environment for flag in ("-e", pair)),
            *args, IMAGE,
        )
        self.names.append(name)
        return name, f"http://127.0.0.1:{port}"

    def volume(self):
        name = f"ssq-test-{uuid.uuid4().hex[:12]}"
        docker("volume", "create", name)
        self.volumes.append(name)
        return name

    def remove(self):
        for name in self.names:
            docker("rm", "-f", name, check=False)
        for name in self.volumes:
            docker("volume", "rm", "-f", name, check=False)


@pytest.fixture
def containers():
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode != 0:
        pytest.fail(f"no image {IMAGE}: run `make image` first")
    started = Containers()
    yield started
    started.remove()


def test_the_image_is_small(containers):
    size = int(docker("image", "inspect", "-f", "{{.Size}}", IMAGE))
    print(f"image {IMAGE}: {size / 1e6:.1f} MB")
    assert size <= MAX_IMAGE_BYTES, f"{IMAGE} is {size / 1e6:.1f} MB, over 30 MB"


def test_ready_within_a_second_healthy_non_root_and_plain_logs(containers):
    name, endpoint = containers.run()
    took = wait_ready(endpoint, within=5)
    print(f"/ready answered 200 {took:.3f} s after docker run returned")
    assert took < 1, f"/ready took {took:.2f} s"

    queue = sqs(endpoint).create_queue(QueueName="first")["QueueUrl"]
    assert sqs(endpoint).send_message(QueueUrl=queue, MessageBody="hello")["MessageId"]

    # The HEALTHCHECK (ssq --check-health) runs every 5 s.
    deadline = time.monotonic() + 30
    while (health := inspect(name, "{{.State.Health.Status}}")) != "healthy":
        assert health in ("starting", "healthy"), f"health is {health}"
        assert time.monotonic() < deadline, "the health check did not turn healthy in 30 s"
        time.sleep(0.25)

    pid = inspect(name, "{{.State.Pid}}")
    with open(f"/proc/{pid}/status") as status:
        uids = next(line for line in status if line.startswith("Uid:")).split()[1:]
    assert set(uids) == {"10001"}, f"ssq runs as uids {uids}"

    logs = subprocess.run(["docker", "logs", name], capture_output=True, text=True).stderr
    assert "\x1b[" not in logs, f"colour codes in docker logs: {logs!r}"
    # tracing's plain lines, and LocalStack's "Ready." (docs/localstack.md).
    plain = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z +(INFO|WARN|ERROR) ssq(::\w+)*: \S")
    lines = logs.strip().splitlines()
    assert "Ready." in lines, logs
    assert all(plain.match(line) for line in lines if line != "Ready."), logs


def count(client, queue):
    attributes = client.get_queue_attributes(
        QueueUrl=queue,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


def test_a_volume_keeps_messages_across_restart_and_kill(containers):
    volume = containers.volume()
    name, endpoint = containers.run("-v", f"{volume}:/data", env=["SSQ_DATA_DIR=/data"])
    wait_ready(endpoint, within=10)
    client = sqs(endpoint)
    queue = client.create_queue(QueueName="kept")["QueueUrl"]
    for n in range(3):
        client.send_message(QueueUrl=queue, MessageBody=f"before restart {n}")

    docker("restart", name)
    wait_ready(endpoint, within=10)
    assert count(client, queue) == 3

    client.send_message(QueueUrl=queue, MessageBody="before kill")
    docker("kill", name)  # SIGKILL: no chance to flush anything
    assert inspect(name, "{{.State.ExitCode}}") == "137"
    docker("start", name)
    wait_ready(endpoint, within=10)
    assert count(client, queue) == 4
    bodies = set()
    while messages := client.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages"):
        bodies |= {m["Body"] for m in messages}
    assert bodies == {"before restart 0", "before restart 1", "before restart 2", "before kill"}

    # The state is the ssq user's alone, on the volume.
    mountpoint = json.loads(docker("volume", "inspect", volume))[0]["Mountpoint"]
    status = os.stat(mountpoint)
    assert (status.st_uid, oct(status.st_mode & 0o777)) == (10001, "0o700")


def test_sigterm_answers_calls_in_flight_and_exits_within_the_grace_period(containers):
    name, endpoint = containers.run()
    wait_ready(endpoint, within=10)
    client = sqs(endpoint)
    queue = client.create_queue(QueueName="polled")["QueueUrl"]

    answered = {}

    def long_poll():
        try:
            answered["messages"] = client.receive_message(QueueUrl=queue, WaitTimeSeconds=20).get(
                "Messages", []
            )
        except Exception as error:  # what the test reports if the poll is cut
            answered["error"] = error

    poll = threading.Thread(target=long_poll)
    poll.start()
    time.sleep(1)  # the poll is waiting in ssq
    started = time.monotonic()
    docker("stop", "--time", "10", name)
    took = time.monotonic() - started
    poll.join(timeout=10)
    print(f"docker stop took {took:.2f} s")

    assert answered.get("messages") == [], f"the long poll in flight was not answered: {answered}"
    assert took < 10, f"docker stop took {took:.1f} s: ssq outlasted the grace period"
    assert inspect(name, "{{.State.ExitCode}}") == "0"
    assert "shutdown requested" in subprocess.run(
        ["docker", "logs", name], capture_output=True, text=True
    ).stderr


def compose_command():
    """`docker compose` (v2) or `docker-compose` (v1, Debian's), whichever is here."""
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if subprocess.run(["docker-compose", "version"], capture_output=True).returncode == 0:
        return ["docker-compose"]
    return None


@pytest.mark.parametrize("file", ["compose.memory.yaml", "compose.disk.yaml"])
def test_the_compose_files_start_and_answer(containers, tmp_path, file):
    """docker/'s compose files as users run them, but for the network: these
    machines have no bridge, so the service goes on the host's network, on a
    free port, in place of its published port. (compose.yaml, the Redis
    group behind HAProxy, needs the bridge: README.md says so.)"""
    compose = compose_command()
    if compose is None:
        pytest.skip("neither docker compose nor docker-compose is installed (Debian: apt-get install docker-compose)")
    port = free_port()
    definition = yaml.safe_load((ROOT / "docker" / file).read_text())
    service = definition["services"]["ssq"]
    assert service.pop("ports") == ["9324:9324"]
    service["network_mode"] = "host"
    service.setdefault("environment", {}).update(
        SSQ_LISTEN=f"127.0.0.1:{port}", SSQ_PUBLIC_URL=f"http://127.0.0.1:{port}"
    )
    (tmp_path / file).write_text(yaml.safe_dump(definition))
    project = f"ssqtest{uuid.uuid4().hex[:8]}"
    base = [*compose, "-p", project, "-f", str(tmp_path / file)]
    endpoint = f"http://127.0.0.1:{port}"
    env = {**os.environ, "SSQ_IMAGE": IMAGE}

    def run(*args):
        result = subprocess.run([*base, *args], capture_output=True, text=True, env=env, timeout=120)
        assert result.returncode == 0, f"{' '.join(args)}: {result.stderr}"

    try:
        run("up", "-d")
        wait_ready(endpoint, within=10)
        client = sqs(endpoint)
        queue = client.create_queue(QueueName="composed")["QueueUrl"]
        assert queue == f"{endpoint}/000000000000/composed"
        client.send_message(QueueUrl=queue, MessageBody="kept?")
        run("restart")
        wait_ready(endpoint, within=10)
        kept = {u.rsplit("/", 1)[1] for u in client.list_queues().get("QueueUrls", [])}
        # Memory keeps nothing across a restart; the disk's volume keeps it all.
        if file == "compose.disk.yaml":
            assert kept == {"composed"} and count(client, queue) == 1
        else:
            assert kept == set()
    finally:
        subprocess.run([*base, "down", "-v"], capture_output=True, env=env, timeout=120)


@pytest.fixture
def postgres():
    """A Postgres of the test's own: Debian's postgresql (`make test`
    installs it), `initdb` in a temporary directory, on a free port. Run as
    the `postgres` user when the tests run as root, as Postgres asks (the
    directory is made in /tmp itself, which that user can reach)."""
    binaries = sorted(Path("/usr/lib/postgresql").glob("*/bin"))
    if not binaries:
        pytest.fail("no Postgres under /usr/lib/postgresql: run `make test-deps` (Debian's postgresql)")
    bin_dir = binaries[-1]
    with tempfile.TemporaryDirectory(prefix="ssq-test-pg-") as directory:
        yield from run_postgres(bin_dir, Path(directory))


def run_postgres(bin_dir, directory):
    data = directory / "data"
    as_postgres = {}
    if os.geteuid() == 0:
        import pwd

        user = pwd.getpwnam("postgres")
        os.chown(directory, user.pw_uid, user.pw_gid)
        as_postgres = {"user": user.pw_uid, "group": user.pw_gid}
    initdb = subprocess.run(
        [bin_dir / "initdb", "--auth=trust", "--username=ssq", "--no-sync", "-D", data],
        capture_output=True, text=True, **as_postgres,
    )
    assert initdb.returncode == 0, f"initdb failed: {initdb.stderr}"
    port = free_port()
    server = subprocess.Popen(
        [bin_dir / "postgres", "-D", data, "-p", str(port), "-c", "listen_addresses=127.0.0.1",
         "-c", f"unix_socket_directories={directory}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **as_postgres,
    )
    try:
        deadline = time.monotonic() + 30
        while subprocess.run(
            ["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "ssq", "-d", "postgres", "-c", "CREATE DATABASE ssq"],
            capture_output=True,
        ).returncode != 0:
            assert time.monotonic() < deadline, "postgres did not accept a query within 30 s"
            time.sleep(0.1)
        yield f"postgres://ssq@127.0.0.1:{port}/ssq"
    finally:
        server.terminate()
        server.wait(timeout=30)


# The compose files' database password: MariaDB's test user has it;
# the test's Postgres trusts every local connection and ignores it.
DATABASE_PASSWORD = "test-password-9"


@pytest.fixture
def mariadb():
    """A MariaDB of the test's own: Debian's mariadb-server (`make test`
    installs it), `mariadb-install-db` in a temporary directory, on a free
    port, with a database and a user `ssq` whose password is
    DATABASE_PASSWORD."""
    sbin = Path("/usr/sbin/mariadbd")
    if not sbin.exists():
        pytest.fail("no /usr/sbin/mariadbd: run `make test-deps` (Debian's mariadb-server)")
    root = ["--user=root"] if os.geteuid() == 0 else []
    with tempfile.TemporaryDirectory(prefix="ssq-test-mariadb-") as directory:
        data, socket = Path(directory) / "data", Path(directory) / "socket"
        install = subprocess.run(
            ["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--auth-root-authentication-method=normal",
             "--skip-test-db", *root],
            capture_output=True, text=True,
        )
        assert install.returncode == 0, f"mariadb-install-db failed: {install.stderr}"
        port = free_port()
        server = subprocess.Popen(
            [sbin, "--no-defaults", f"--datadir={data}", f"--port={port}", f"--socket={socket}",
             "--bind-address=127.0.0.1", "--skip-name-resolve", *root],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            setup = (
                f"CREATE DATABASE ssq; CREATE USER 'ssq'@'127.0.0.1' IDENTIFIED BY '{DATABASE_PASSWORD}'; "
                "GRANT ALL ON ssq.* TO 'ssq'@'127.0.0.1'"
            )
            while subprocess.run(
                ["mariadb", "--no-defaults", "-uroot", f"--socket={socket}", "-e", setup], capture_output=True,
            ).returncode != 0:
                assert time.monotonic() < deadline, "mariadbd did not accept a query within 30 s"
                time.sleep(0.1)
            yield f"mysql://ssq@127.0.0.1:{port}/ssq"
        finally:
            server.terminate()
            server.wait(timeout=30)


@pytest.fixture
def etcd():
    """An etcd of the test's own: Debian's etcd-server (`make test`
    installs it), one member in a temporary directory, on free ports."""
    client, peer = free_port(), free_port()
    with tempfile.TemporaryDirectory(prefix="ssq-test-etcd-") as directory:
        server = subprocess.Popen(
            ["etcd", "--name", "test", "--data-dir", f"{directory}/data",
             "--listen-client-urls", f"http://127.0.0.1:{client}", "--advertise-client-urls", f"http://127.0.0.1:{client}",
             "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-cluster", f"test=http://127.0.0.1:{peer}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while get(f"http://127.0.0.1:{client}/health") != 200:
                assert time.monotonic() < deadline, "etcd did not answer /health within 30 s"
                time.sleep(0.1)
            yield f"etcd://127.0.0.1:{client}/ssq"
        finally:
            server.terminate()
            server.wait(timeout=30)


ETCD_IMAGE = "quay.io/coreos/etcd:v3.5.17"


@pytest.mark.parametrize(
    "file, database, image, url_variable, password_variable, lock",
    [
        ("compose.postgres.yaml", "postgres", "postgres:16", "SSQ_POSTGRES_URL", "POSTGRES_PASSWORD", None),
        ("compose.mysql.yaml", "mariadb", "mariadb:11.4", "SSQ_MYSQL_URL", "MYSQL_PASSWORD", None),
        ("compose.etcd.yaml", "postgres", "postgres:16", "SSQ_POSTGRES_URL", "POSTGRES_PASSWORD", "etcd"),
    ],
)
def test_a_database_compose_files_instances_lead_one_at_a_time_and_keep_messages(
    containers, request, tmp_path, file, database, image, url_variable, password_variable, lock
):
    """A database's compose file (Postgres's, MariaDB's, and Postgres's
    with etcd as the lock): its ssq services as users run them, but for the
    network: on the host's, each on a free port, and against the test's own
    database (and etcd) in place of those services (these machines pull no
    image). One instance leads; killed, another takes over with every
    message."""
    compose = compose_command()
    if compose is None:
        pytest.skip("neither docker compose nor docker-compose is installed (Debian: apt-get install docker-compose)")
    url = request.getfixturevalue(database)
    definition = yaml.safe_load((ROOT / "docker" / file).read_text())
    services = definition["services"]
    images = {services.pop(database)["image"], services.pop("haproxy")["image"]}
    needs = {database: {"condition": "service_healthy"}}
    if lock == "etcd":
        lock_url = request.getfixturevalue("etcd")
        members = sorted(name for name in services if name.startswith("etcd"))
        assert members == ["etcd1", "etcd2", "etcd3"]
        images |= {services.pop(name)["image"] for name in members}
        needs["etcd1"] = {"condition": "service_healthy"}
    assert images == {image, "haproxy:2.8", *([ETCD_IMAGE] if lock else [])}
    definition.pop("volumes")
    endpoints = {}
    for name, service in services.items():
        assert service.pop("depends_on") == needs
        port = free_port()
        endpoints[name] = f"http://127.0.0.1:{port}"
        service["network_mode"] = "host"
        assert service["environment"][url_variable].startswith(url.split("://")[0] + f"://ssq@{database}:")
        if lock == "etcd":
            assert service["environment"]["SSQ_LOCK_URL"] == "etcd://etcd1:2379,etcd2:2379,etcd3:2379/ssq"
            service["environment"]["SSQ_LOCK_URL"] = lock_url
        service["environment"].update(
            **{url_variable: url},
            SSQ_LISTEN=f"127.0.0.1:{port}",
            SSQ_ADVERTISE_URL=endpoints[name],
            SSQ_PUBLIC_URL="http://localhost:9324",
        )
    assert sorted(endpoints) == ["ssq1", "ssq2", "ssq3"]
    (tmp_path / "compose.yaml").write_text(yaml.safe_dump(definition))
    project = f"ssqtest{uuid.uuid4().hex[:8]}"
    base = [*compose, "-p", project, "-f", str(tmp_path / "compose.yaml")]
    env = {**os.environ, "SSQ_IMAGE": IMAGE, password_variable: DATABASE_PASSWORD}

    def run(*args):
        result = subprocess.run([*base, *args], capture_output=True, text=True, env=env, timeout=120)
        assert result.returncode == 0, f"{' '.join(args)}: {result.stderr}"

    def leaders(within):
        """The instances answering /ready, once one does."""
        deadline = time.monotonic() + within
        while not (ready := [name for name, endpoint in endpoints.items() if get(f"{endpoint}/ready") == 200]):
            assert time.monotonic() < deadline, f"no instance answered /ready within {within} s"
            time.sleep(0.05)
        return ready

    try:
        run("up", "-d")
        [leader] = leaders(within=30)
        client = sqs(endpoints[leader])
        queue = client.create_queue(QueueName="composed")["QueueUrl"]
        assert queue == "http://localhost:9324/000000000000/composed"
        for n in range(3):
            client.send_message(QueueUrl=queue, MessageBody=f"kept {n}")
        time.sleep(0.5)  # the passives have had time to answer /ready, were they wrong to
        assert leaders(within=0) == [leader]

        run("kill", leader)  # SIGKILL: the lock goes with its session
        endpoints.pop(leader)
        started = time.monotonic()
        [successor] = leaders(within=30)
        print(f"{successor} led {time.monotonic() - started:.2f} s after {leader} was killed")
        client = sqs(endpoints[successor])
        bodies = set()
        while messages := client.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages"):
            bodies |= {m["Body"] for m in messages}
        assert bodies == {"kept 0", "kept 1", "kept 2"}
    finally:
        subprocess.run([*base, "down", "-v"], capture_output=True, env=env, timeout=120)
