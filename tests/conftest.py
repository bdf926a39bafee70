"""Shared fixtures: a real Redis server for the worker and integration tests.

``redis_url`` uses ``REDIS_URL`` or the server on 127.0.0.1:6379 when one
answers; otherwise it starts ``redis-server`` on a free port (no persistence)
and stops it afterwards.  The session gets its own database index
(``SCA_TEST_REDIS_DB``, default 13), which is flushed at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
TEST_DB = int(os.environ.get("SCA_TEST_REDIS_DB", "13"))

# The paper's baseball consensus (data/baseball/S.csv: a header row of ids).
_BASEBALL = (DATA / "baseball" / "S.csv").read_text().split()
BASEBALL_IDS = _BASEBALL[0].split(",")
BASEBALL_S = [[int(v) for v in row.split(",")] for row in _BASEBALL[1:]]
BASEBALL_PAPER = json.loads((DATA / "baseball" / "paper.json").read_text())


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


def _answers(url: str, timeout: float = 1.0) -> bool:
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
    candidates = () if os.environ.get("SCA_TEST_REDIS") == "start" else (
        os.environ.get("REDIS_URL"), "redis://127.0.0.1:6379/0")
    for candidate in candidates:
        if candidate and _answers(candidate):
            yield candidate
            return
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("no Redis reachable and no redis-server binary: `make install-test` installs one")
    port = free_port()
    process = subprocess.Popen([binary, "--port", str(port), "--save", "", "--appendonly", "no"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 10
    while not _answers(url):
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            pytest.fail("redis-server did not start")
        time.sleep(0.05)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(10)


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
    """A RedisStore under a key prefix of its own."""
    from worker.store import RedisStore

    return RedisStore.from_url(redis_url, ttl=600, prefix=f"sca-test-{uuid.uuid4().hex[:8]}:")
