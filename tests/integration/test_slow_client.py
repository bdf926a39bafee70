"""Slow clients against ``sca serve``: 64 connections trickling their headers in and
64 trickling a body, held open while ``/healthz`` is polled and a job is submitted.
The front reads requests whole before a thread sees them, so neither waits on them:
``/healthz`` p99 stays under half a second, in the embedded default (under gunicorn,
and in one process without it) and with Redis.  A front whose threads wait on slow
clients answers after seconds (when they time out) or not at all; half a second
leaves room for a shared machine's scheduling without letting that through."""

from __future__ import annotations

from urllib.parse import urlparse

import numpy as np
import pytest
import requests

from scripts.slow_clients import SlowClients, latencies
from tests.conftest import BASEBALL_S
from tests.integration.conftest import CHUNK_BYTES
from tests.service.serving import sca_serve

KEY = "slow-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
#: Slow connections of each kind.
SLOW = 64


@pytest.fixture(params=["embedded", "embedded-one-process", "redis"])
def served(request, tmp_path):
    """``sca serve`` with an API key and four threads per process: its base URL and port."""
    env, args, hide = {"SCA_API_KEYS": KEY}, ("--threads", "4"), ()
    if request.param == "redis":
        env.update(
            REDIS_URL=request.getfixturevalue("redis_url"),
            SCA_KEY_PREFIX=request.getfixturevalue("prefix"),
            SCA_CHUNK_BYTES=str(CHUNK_BYTES),
            SCA_JOB_TTL="600",
        )
        request.getfixturevalue("celery_worker")
        args += ("--workers", "2")
    elif request.param == "embedded-one-process":
        hide = ("gunicorn",)
    log = tmp_path / "serve.log"
    with sca_serve(env=env, args=args, log=log, hide=hide) as base:
        yield base, urlparse(base).port
    text = log.read_text()
    assert "no API keys" not in text and "Traceback" not in text, text[-3000:]
    assert ("gunicorn" in text) == (request.param != "embedded-one-process"), text[-3000:]


def test_slow_clients_do_not_starve_the_service(served):
    base, port = served
    with (
        SlowClients(port, "headers", SLOW, headers=AUTH) as headers,
        SlowClients(port, "body", SLOW, headers=AUTH) as bodies,
    ):
        polled = latencies(port, "/healthz", duration=4, interval=0.02)
        for _ in range(3):
            response = requests.post(
                f"{base}/v1/jobs", json={"consensus": BASEBALL_S}, headers=AUTH, timeout=10
            )
            assert response.status_code == 202 and response.elapsed.total_seconds() < 1
        assert headers.opened >= SLOW and bodies.opened >= SLOW
        assert headers.closed == bodies.closed == 0  # all held open throughout
    assert None not in polled and len(polled) > 50
    p99 = float(np.percentile(polled, 99))
    assert p99 < 0.5, f"/healthz p99 {p99 * 1000:.0f} ms with {2 * SLOW} slow clients"
    # The half-sent requests were dropped, and the server is still well.
    assert requests.get(f"{base}/readyz", timeout=5).status_code == 200
