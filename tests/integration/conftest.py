"""Integration fixtures: real Redis, two real ``celery -A worker worker`` processes,
and the API served over HTTP (werkzeug's server in a thread) in Redis mode."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from tests.conftest import free_port
from tests.integration.faults import Worker, worker_env

#: Small chunks, so that every artifact over 1 MB is stored in several values.
CHUNK_BYTES = 1024 * 1024


@pytest.fixture(scope="session")
def prefix():
    return f"sca-itest-{uuid.uuid4().hex[:8]}:"


class Workers:
    """Two ``celery worker`` processes sharing the one Redis; their logs."""

    def __init__(self, logs: list[Path]):
        self.logs = logs

    def read_text(self) -> str:
        return "".join(log.read_text() for log in self.logs)


@pytest.fixture(scope="session")
def celery_worker(redis_url, prefix, tmp_path_factory):
    directory = tmp_path_factory.mktemp("celery")
    env = worker_env(redis_url, prefix, fast_takeover=False, SCA_CHUNK_BYTES=CHUNK_BYTES)
    workers = []
    try:
        for i in range(2):
            workers.append(
                Worker(
                    env,
                    directory / f"worker-{i}.log",
                    f"itest{i}-{uuid.uuid4().hex[:6]}",
                    concurrency=1,
                )
            )
        yield Workers([worker.log for worker in workers])
    finally:
        for worker in workers:
            worker.stop()


@pytest.fixture(scope="session")
def api(redis_url, prefix, celery_worker):
    """Base URL of the API in Redis mode, served over real HTTP."""
    from sca_service import create_app

    app = create_app(
        {
            "REDIS_URL": redis_url,
            "SCA_KEY_PREFIX": prefix,
            "SCA_CHUNK_BYTES": CHUNK_BYTES,
            "SCA_JOB_TTL": 600,
            "SCA_ALLOW_ANONYMOUS": 1,
            "SCA_RATE_LIMIT": 0,
        }
    )
    server = make_server("127.0.0.1", free_port(), app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(10)


@pytest.fixture(scope="session")
def store(redis_url, prefix):
    """The store the session's workers and API use (same prefix and chunk size)."""
    from sca_worker.store import Store

    return Store.from_url(redis_url, ttl=600, chunk_bytes=CHUNK_BYTES, prefix=prefix)
