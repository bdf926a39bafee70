"""The HTTP front (:mod:`sca_service.front`): its own refusals are problem+json and never
reach the app; a request line and headers have a deadline; a silent body is dropped."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from sca_service import create_app, front
from scripts.slow_clients import SlowClients

LIMITS = {
    "SCA_MAX_HEADER_BYTES": 4096,
    "SCA_MAX_BODY_BYTES": 10_000,
    "SCA_HEADER_TIMEOUT": 1,
    "SCA_BODY_TIMEOUT": 2,
}


@pytest.fixture(scope="module")
def front_server():
    """The API behind the front on a free port (in this process): its port and the
    paths the app was asked for."""
    app = create_app(LIMITS)
    seen = []

    def recording(environ, start_response):
        seen.append(environ["PATH_INFO"])
        return app(environ, start_response)

    server = front.create_server(recording, front.listen("127.0.0.1", 0), app.config, 2)
    stop = threading.Event()
    thread = threading.Thread(
        target=front.serve_until,
        args=(server, lambda: not stop.is_set()),
        kwargs={"grace": 2},
        daemon=True,
    )
    thread.start()
    yield int(server.effective_port), seen
    stop.set()
    thread.join(10)
    app.extensions["sca"].queue.shutdown()


@pytest.fixture
def served(front_server):
    front_server[1].clear()
    return front_server


def exchange(port: int, raw: bytes) -> tuple[int, dict, bytes]:
    """Send ``raw``; the status, headers and body of the answer (read to the close)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(raw)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


@pytest.mark.parametrize(
    "raw, status, field",
    [
        (b"GET /v1/jobs/" + b"x" * 5000 + b" HTTP/1.1\r\nHost: a\r\n\r\n", 414, "url"),
        (
            b"GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: " + b"y" * 5000 + b"\r\n\r\n",
            431,
            "headers",
        ),
        (
            b"POST /v1/jobs HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
            b"Content-Length: 20000\r\n\r\n{",
            413,
            "body",
        ),
        (b"GET /healthz HTTP/1.1\r\nHost: a\r\nBad Header\r\n\r\n", 400, "request"),
    ],
    ids=["long-url", "long-headers", "long-body", "malformed"],
)
def test_the_fronts_refusals_are_problems_the_app_never_sees(served, raw, status, field):
    port, seen = served
    code, headers, body = exchange(port, raw)
    assert code == status and headers["content-type"] == "application/problem+json"
    problem = json.loads(body)
    assert problem["status"] == status and set(problem["errors"]) == {field}
    assert problem["detail"] and problem["title"]
    assert seen == []


def test_a_body_at_the_limit_reaches_the_app(served):
    port, seen = served
    body = b'{"consensus": [[1]]' + b" " * (10_000 - 20) + b"}"
    code, headers, _ = exchange(
        port,
        b"POST /v1/jobs HTTP/1.1\r\nHost: a\r\nConnection: close\r\n"
        b"Content-Type: application/json\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body,
    )
    assert len(body) == 10_000 and seen == ["/v1/jobs"] and code != 413


@pytest.mark.parametrize("kind", ["headers", "body"])
def test_trickling_headers_are_cut_off_a_trickling_body_is_not(served, kind):
    """Headers still arriving SCA_HEADER_TIMEOUT (1 s) after their first byte are
    dropped; a body trickling in keeps its connection (each pause is under
    SCA_BODY_TIMEOUT)."""
    port, seen = served
    with SlowClients(port, kind, 4, interval=0.2, body_bytes=9000) as clients:
        time.sleep(2.5)
    if kind == "headers":
        assert clients.closed >= 4
    else:
        assert clients.closed == 0
    assert seen == []


def test_a_silent_body_is_dropped(served):
    port, seen = served
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n{")
        start = time.monotonic()
        assert sock.recv(1024) == b""  # closed, unanswered
    assert 1.5 < time.monotonic() - start < 6 and seen == []
