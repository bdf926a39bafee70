"""Slow clients: connections that trickle a request in, a few bytes at a time.

A server that hands a connection to a worker thread before the whole request
has arrived lets a few such clients hold every thread; the service must keep
answering others meanwhile.  :class:`SlowClients` holds ``count`` connections
of one kind open from one background thread:

* ``"headers"``: a request line, then header bytes that never end;
* ``"body"``: complete headers announcing a large body, then body bytes.

A connection the server closes (a read timeout) is counted and opened again,
so the pressure stays for as long as the clients run.  :func:`latencies`
polls a path meanwhile.  Used by ``scripts/load.py`` (its hostile phase) and
by the slow-client tests; only the standard library, so both can import it.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time

KINDS = ("headers", "body")


def _preamble(kind: str, path: str, headers: dict, body_bytes: int) -> bytes:
    lines = [
        f"POST {path} HTTP/1.1" if kind == "body" else f"GET {path} HTTP/1.1",
        "Host: 127.0.0.1",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    if kind == "body":
        lines += ["Content-Type: application/json", f"Content-Length: {body_bytes}", "", ""]
        return "\r\n".join(lines).encode() + b'{"consensus": [[1, '
    return "\r\n".join(lines).encode() + b"\r\nX-Slow: "


class SlowClients:
    """``count`` connections of ``kind`` to ``port``, each sending a byte or three every
    ``interval`` seconds, from :meth:`start` until :meth:`stop`; the ``"body"``
    kind announces ``body_bytes`` (never sent in full).

    ``closed`` counts connections the server ended; ``opened`` every connection made.
    """

    def __init__(
        self,
        port: int,
        kind: str,
        count: int,
        interval: float = 0.5,
        path: str = "/v1/jobs",
        headers: dict | None = None,
        host: str = "127.0.0.1",
        body_bytes: int = 1_000_000,
    ):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}")
        self.address, self.kind, self.count, self.interval = (host, port), kind, count, interval
        self.preamble = _preamble(kind, path, headers or {}, body_bytes)
        self.opened = self.closed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._socks: list[socket.socket | None] = [None] * count

    def _open(self) -> socket.socket | None:
        try:
            sock = socket.create_connection(self.address, timeout=5)
            sock.sendall(self.preamble)
        except OSError:
            return None
        self.opened += 1
        return sock

    def _trickle(self, sock: socket.socket) -> bool:
        """A few more bytes; False when the server has closed the connection."""
        try:
            sock.settimeout(0)
            try:
                if sock.recv(1024) == b"":  # an answer or the end: the server gave up on us
                    return False
            except BlockingIOError:
                pass
            sock.settimeout(5)
            sock.sendall(b"a" if self.kind == "headers" else b"1, ")
            return True
        except OSError:
            return False

    def _run(self) -> None:
        for i in range(self.count):
            if self._stop.is_set():
                return
            self._socks[i] = self._open()
        while not self._stop.wait(self.interval):
            for i, sock in enumerate(self._socks):
                if sock is not None and self._trickle(sock):
                    continue
                if sock is not None:
                    self.closed += 1
                    sock.close()
                self._socks[i] = self._open()

    def start(self) -> SlowClients:
        self._thread.start()
        deadline = time.monotonic() + 30
        while self.opened < self.count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        for sock in self._socks:
            if sock is not None:
                sock.close()

    def __enter__(self) -> SlowClients:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def latencies(
    port: int,
    path: str = "/healthz",
    duration: float = 5,
    interval: float = 0.05,
    timeout: float = 5,
    host: str = "127.0.0.1",
) -> list[float | None]:
    """Seconds of each ``GET path`` (a new connection each) for ``duration`` seconds;
    None for a request that failed or did not answer 200 within ``timeout``."""
    out: list[float | None] = []
    deadline = time.monotonic() + duration
    while time.monotonic() < deadline:
        start = time.perf_counter()
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            out.append(time.perf_counter() - start if response.status == 200 else None)
        except (OSError, http.client.HTTPException):
            out.append(None)
        finally:
            conn.close()
        time.sleep(interval)
    return out
