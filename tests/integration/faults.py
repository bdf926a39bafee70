"""Process helpers of the integration tests: a private Redis that can be stopped
and restarted (append-only file, so queued jobs survive), worker processes in
their own process group (so SIGKILL takes the main process and its pool at
once), and the API over HTTP with API keys."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
from werkzeug.serving import make_server

from tests.conftest import DATA, ROOT, answers, free_port, stop_process, wait_for

KEY = "fault-test-key-3f9c2a"
AUTH = {"Authorization": f"Bearer {KEY}"}
#: Short heartbeats, so that a lost worker's job is taken over within seconds.
FAST_TAKEOVER = {"SCA_HEARTBEAT_INTERVAL": "1", "SCA_HEARTBEAT_TIMEOUT": "4"}


class RedisProcess:
    """``redis-server`` on a fixed port and directory, restartable with its data."""

    def __init__(self, directory: Path, extra: tuple = ()):
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            pytest.fail("no redis-server binary: `make install-test` installs one")
        self.directory, self.extra = directory, tuple(extra)
        self.port = free_port()
        self.process = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, wait_url: str | None = None) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--dir",
                str(self.directory),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                *self.extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 15
        while not answers(wait_url or self.url):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            stop_process(self.process, 15)


class Worker:
    """``celery -A worker worker`` in its own process group."""

    def __init__(self, env: dict, log: Path, name: str, concurrency: int = 1):
        self.log = log
        # The child keeps its own copy of the descriptor; ours is closed at once.
        with open(log, "w") as out:
            self.process = self._start(env, name, concurrency, out)
        deadline = time.monotonic() + 60
        while "ready." not in log.read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"worker did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.1)

    @staticmethod
    def _start(env: dict, name: str, concurrency: int, out) -> subprocess.Popen:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "worker",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(concurrency),
                "--hostname",
                f"{name}@%h",
                "--without-mingle",
                "--without-gossip",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the main process and its pool (SIGSTOP pauses, SIGCONT resumes)."""
        try:
            os.killpg(self.process.pid, signum)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        """SIGKILL the main process and its pool children together."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                self.kill()


def worker_env(url: str, prefix: str, fast_takeover: bool = True, **extra) -> dict:
    """The environment of a worker on Redis ``url`` under key ``prefix``: one BLAS thread,
    short heartbeats when ``fast_takeover``, plus ``extra`` settings."""
    env = dict(os.environ)
    env.update(
        REDIS_URL=url,
        SCA_KEY_PREFIX=prefix,
        SCA_JOB_TTL="600",
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        PYTHONPATH=str(ROOT),
        **(FAST_TAKEOVER if fast_takeover else {}),
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Api:
    """The API in Redis mode, served over HTTP from a thread."""

    def __init__(self, url: str, prefix: str, **config):
        from sca_service import create_app

        app = create_app(
            {
                "REDIS_URL": url,
                "SCA_KEY_PREFIX": prefix,
                "SCA_JOB_TTL": 600,
                "SCA_API_KEYS": KEY,
                "SCA_REDIS_TIMEOUT": 3,
                **config,
            }
        )
        self.app = app
        self.server = make_server("127.0.0.1", free_port(), app, threaded=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.server.server_port}"

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        kwargs.setdefault("timeout", 30)
        headers = {**AUTH, **kwargs.pop("headers", {})}
        return requests.request(method, self.base + path, headers=headers, **kwargs)

    def get(self, path: str) -> requests.Response:
        return self.request("get", path)

    def wait(self, job_id: str, timeout: float = 120) -> dict:
        """The job's document once it has finished (:func:`tests.conftest.wait_for`)."""
        return wait_for(self.get, job_id, timeout, interval=0.1)

    def close(self) -> None:
        self.server.shutdown()
        self.thread.join(10)


def leukemia_job(api: Api, runs: int, seed: int) -> str:
    """Submit an ensemble of ``runs`` NMF clusterings of the leukemia data; the job's id."""
    files = {"file": ("X.csv", (DATA / "leukemia" / "X.csv").read_bytes(), "text/csv")}
    form = {
        "input": "data",
        "ensemble": json.dumps([{"algorithm": "nmf", "k": 6, "runs": runs}]),
        "options": json.dumps({"ensemble_seed": seed}),
    }
    response = api.request("post", "/v1/jobs", files=files, data=form, timeout=60)
    assert response.status_code == 202, response.text
    return response.json()["id"]
