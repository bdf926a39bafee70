"""Integration fixtures: real Redis, a real ``celery -A worker worker`` process, and
the API served over HTTP (werkzeug's server in a thread) in Redis mode."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests
from werkzeug.serving import make_server

from tests.conftest import ROOT, free_port, stop_process

#: Small chunks, so that every artifact over 1 MB is stored in several values.
CHUNK_BYTES = 1024 * 1024


@pytest.fixture(scope="session")
def prefix():
    return f"sca-itest-{uuid.uuid4().hex[:8]}:"


@pytest.fixture(scope="session")
def worker_env(redis_url, prefix):
    env = dict(os.environ)
    env.update(REDIS_URL=redis_url, SCA_KEY_PREFIX=prefix, SCA_CHUNK_BYTES=str(CHUNK_BYTES),
               SCA_JOB_TTL="600", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    return env


def start_worker(env: dict, log_path: Path, name: str, concurrency: int = 2) -> subprocess.Popen:
    """``celery -A worker worker`` from the repository root; returns once it is ready."""
    log = open(log_path, "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "worker", "worker", "--loglevel", "INFO",
         "--concurrency", str(concurrency), "--hostname", f"{name}@%h", "--without-mingle",
         "--without-gossip"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while "ready." not in log_path.read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"celery worker did not start:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.1)
    return process


class Workers:
    """Two ``celery worker`` processes sharing the one Redis; their logs."""

    def __init__(self, logs: list[Path]):
        self.logs = logs

    def read_text(self) -> str:
        return "".join(log.read_text() for log in self.logs)


@pytest.fixture(scope="session")
def celery_worker(worker_env, tmp_path_factory):
    directory = tmp_path_factory.mktemp("celery")
    logs, processes = [], []
    try:
        for i in range(2):
            logs.append(directory / f"worker-{i}.log")
            processes.append(start_worker(worker_env, logs[-1],
                                          f"itest{i}-{uuid.uuid4().hex[:6]}", concurrency=1))
        yield Workers(logs)
    finally:
        for process in processes:
            stop_process(process)


@pytest.fixture(scope="session")
def api(redis_url, prefix, celery_worker):
    """Base URL of the API in Redis mode, served over real HTTP."""
    from service import create_app

    app = create_app({"REDIS_URL": redis_url, "SCA_KEY_PREFIX": prefix,
                      "SCA_CHUNK_BYTES": CHUNK_BYTES, "SCA_JOB_TTL": 600,
                      "SCA_ALLOW_ANONYMOUS": 1, "SCA_RATE_LIMIT": 0})
    server = make_server("127.0.0.1", free_port(), app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(10)


@pytest.fixture(scope="session")
def store(redis_url, prefix):
    from worker.store import RedisStore

    return RedisStore.from_url(redis_url, ttl=600, chunk_bytes=CHUNK_BYTES, prefix=prefix)


def wait_job(api: str, job_id: str, timeout: float = 120, seen: list | None = None) -> dict:
    """Poll ``GET /v1/jobs/{id}`` until the job has finished."""
    deadline = time.monotonic() + timeout
    while True:
        job = requests.get(f"{api}/v1/jobs/{job_id}", timeout=30).json()
        if seen is not None:
            seen.append((job["status"], job["stage"], job["progress"]))
        if job["status"] not in ("queued", "running"):
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {job['status']} after {timeout}s")
        time.sleep(0.05)
