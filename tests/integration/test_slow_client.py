"""A slow client (a body trickling in, then stalling) against ``sca serve``
(gunicorn, embedded default) does not hold up other clients."""

from __future__ import annotations

import socket
import time
from urllib.parse import urlparse

import pytest
import requests

from tests.conftest import BASEBALL_S
from tests.service.serving import sca_serve


@pytest.fixture
def served(tmp_path):
    """``sca serve`` with an API key and four threads: its base URL and port."""
    log = tmp_path / "serve.log"
    with sca_serve(env={"SCA_API_KEYS": "slow-key"}, args=("--threads", "4"), log=log) as base:
        yield base, urlparse(base).port
    assert "no API keys" not in log.read_text()


def test_a_stalled_upload_does_not_block_others(served):
    base, port = served
    auth = {"Authorization": "Bearer slow-key"}
    slow = []
    for _ in range(3):  # more stalled clients than one thread
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer slow-key\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
                     b'{"consensus": [[1, ')
        slow.append(sock)
    try:
        for _ in range(5):
            start = time.monotonic()
            response = requests.post(f"{base}/v1/jobs", json={"consensus": BASEBALL_S},
                                     headers=auth, timeout=10)
            assert response.status_code == 202 and time.monotonic() - start < 2
            assert requests.get(f"{base}/healthz", timeout=5).status_code == 200
            time.sleep(0.2)
    finally:
        for sock in slow:
            sock.close()
    # The half-sent bodies were dropped, and the server is still well.
    assert requests.get(f"{base}/readyz", timeout=5).status_code == 200
