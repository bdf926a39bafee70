"""Shared fixtures and helpers: the paper's data, job polling, and a real Redis
server for the worker and integration tests.

``redis_url`` uses ``REDIS_URL`` or the server on 127.0.0.1:6379 when one
answers; otherwise it starts ``redis-server`` on a free port (no persistence)
and stops it afterwards.  The session gets its own database index
(``SCA_TEST_REDIS_DB``, default 13), which is flushed at the end; under
pytest-xdist each worker after the first takes the index below its
predecessor's (gw1: 12), so that one worker's Celery processes never take
another's tasks.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
TEST_DB = int(os.environ.get("SCA_TEST_REDIS_DB", "13")) - int(
    os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
)

# The paper's baseball consensus (data/baseball/S.csv: a header row of ids).
BASEBALL_CSV = DATA / "baseball" / "S.csv"
_BASEBALL = BASEBALL_CSV.read_text().split()
BASEBALL_IDS = _BASEBALL[0].split(",")
BASEBALL_S = [[int(v) for v in row.split(",")] for row in _BASEBALL[1:]]
#: Raw data: two obvious groups in columns of very different units (tenths and tens),
#: the README's raw-data example.
TWO_GROUPS = [
    [0.10, 10],
    [0.20, 12],
    [0.15, 11],
    [0.12, 13],
    [0.18, 9],
    [0.90, 95],
    [0.95, 99],
    [0.92, 97],
    [0.88, 101],
    [0.91, 96],
]
#: A job body of the baseball example, with the players as ids.
BASEBALL_BODY = {"consensus": BASEBALL_S, "ids": BASEBALL_IDS}
#: The paper's printed figures (data/baseball/paper.json).
BASEBALL_PAPER = json.loads((DATA / "baseball" / "paper.json").read_text())
#: The paper's two teams, each sorted, in sorted order (compare ``sorted(map(sorted, ...))``).
BASEBALL_TEAMS = sorted(sorted(team) for team in BASEBALL_PAPER["clusters"])
#: The paper's figures for leukemia patient 2 (data/leukemia/paper.json; 1-based patients).
LEUKEMIA_PAPER = json.loads((DATA / "leukemia" / "paper.json").read_text())


def baseball_paper_ranking(element: str) -> list[tuple[str, float]]:
    """The other players by the paper's P row of ``element``, largest first: (id, P entry).

    The paper prints P(Ruth, Cobb) = 0.01082 where symmetry gives P(Cobb, Ruth) = 0.0082;
    the upper triangle is read for every pair.
    """
    i = BASEBALL_IDS.index(element)
    P = BASEBALL_PAPER["P"]
    row = [(name, P[min(i, j)][max(i, j)]) for j, name in enumerate(BASEBALL_IDS) if j != i]
    return sorted(row, key=lambda item: -item[1])


def load_csv(path: Path) -> np.ndarray:
    """A data file of data/ (one header row) as a 2-D float array."""
    return np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


@pytest.fixture(scope="session")
def iris():
    """Iris: the 150 x 4 measurements and the species (0, 1, 2)."""
    return load_csv(DATA / "iris" / "X.csv"), load_csv(DATA / "iris" / "labels.csv").ravel()


def npy(array) -> bytes:
    """``array`` as the bytes of a .npy file (no pickling)."""
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


class Terminal(io.StringIO):
    """A text stream that says it is a terminal (progress bars draw on it)."""

    def isatty(self):
        return True


def wait_for(
    get, job_id: str, timeout: float = 60, interval: float = 0.02, seen: list | None = None
) -> dict:
    """Poll ``GET /v1/jobs/{job_id}`` until the job leaves queued/running; its document.

    ``get(path)`` returns a response of Flask's test client or of requests.  A 503
    (the store unreachable for a moment) is polled through; any other status but 200
    fails.  Each job document read is appended to ``seen`` when given.
    """
    deadline = time.monotonic() + timeout
    while True:
        response = get(f"/v1/jobs/{job_id}")
        if response.status_code != 503:
            job = response.get_json() if hasattr(response, "get_json") else response.json()
            assert response.status_code == 200, (job_id, response.status_code, job)
            if seen is not None:
                seen.append(job)
            if job["status"] not in ("queued", "running"):
                return job
        if time.monotonic() > deadline:
            raise AssertionError(
                f"job {job_id} not finished after {timeout} s: "
                f"{response.status_code} {response.text[:300]}"
            )
        time.sleep(interval)


def http_get(base: str, **kwargs):
    """A ``get(path)`` for :func:`wait_for` over HTTP (requests) at ``base``."""
    import requests

    kwargs.setdefault("timeout", 30)
    return lambda path: requests.get(base + path, **kwargs)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(process: subprocess.Popen, grace: float = 20) -> None:
    """Terminate a child process; kill it if it has not exited within ``grace`` s."""
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def answers(url: str, timeout: float = 1.0) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=timeout).ping())
    except Exception:
        return False


def _with_db(url: str, db: int) -> str:
    parsed = urlparse(url)
    return parsed._replace(path=f"/{db}").geturl()


@pytest.fixture(scope="session")
def redis_server():
    """Base URL of a reachable Redis (started here when none answers).

    ``SCA_TEST_REDIS=start`` always starts a private server.
    """
    candidates = (
        ()
        if os.environ.get("SCA_TEST_REDIS") == "start"
        else (os.environ.get("REDIS_URL"), "redis://127.0.0.1:6379/0")
    )
    for candidate in candidates:
        if candidate and answers(candidate):
            yield candidate
            return
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail(
            "no Redis reachable and no redis-server binary: `make install-test` installs one"
        )
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while not answers(url):
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            pytest.fail("redis-server did not start")
        time.sleep(0.05)
    try:
        yield url
    finally:
        stop_process(process, 10)


@pytest.fixture(scope="session")
def redis_url(redis_server):
    """The session's dedicated database, flushed at the end."""
    import redis

    url = _with_db(redis_server, TEST_DB)
    yield url
    redis.Redis.from_url(url).flushdb()


@pytest.fixture
def redis_client(redis_url):
    import redis

    return redis.Redis.from_url(redis_url)


@pytest.fixture
def redis_store(redis_url):
    """A store on Redis under a key prefix of its own."""
    from sca_worker.store import Store

    return Store.from_url(redis_url, ttl=600, prefix=f"sca-test-{uuid.uuid4().hex[:8]}:")


class Monitor:
    """The commands Redis runs on the test database under a prefix (``MONITOR``),
    between :meth:`start` and :meth:`stop`."""

    def __init__(self, url: str, prefix: str):
        import redis

        self.client = redis.Redis.from_url(url)
        self.prefix, self.mark = prefix, uuid.uuid4().hex
        self.commands: list[str] = []
        self.started = threading.Event()
        self.thread = threading.Thread(target=self._listen, daemon=True)

    def _listen(self) -> None:
        with self.client.monitor() as monitor:
            self.client.echo(f"start-{self.mark}")
            for seen in monitor.listen():
                command = seen["command"]
                if f"start-{self.mark}" in command:
                    self.started.set()
                elif f"stop-{self.mark}" in command:
                    return
                elif seen["db"] == TEST_DB and self.prefix in command:
                    self.commands.append(command)

    def start(self) -> None:
        self.thread.start()
        assert self.started.wait(10)

    def stop(self) -> list[str]:
        self.client.echo(f"stop-{self.mark}")
        self.thread.join(30)
        return self.commands
