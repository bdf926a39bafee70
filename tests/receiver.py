"""A real webhook receiver for tests: an ``http.server`` thread on 127.0.0.1.

It answers each POST with the next status of ``statuses`` (the last one
repeats), after ``delay`` seconds, and records every request; :func:`verify`
checks a signature the way the README tells receivers to.  :class:`Trickler`
answers ``200 OK`` at once and the rest a byte at a time; :func:`fake_dns`
answers name lookups from a table (no lookup leaves the machine).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def verify(secret: str, header: str, body: bytes, tolerance: int = 300) -> bool:
    """Whether ``SCA-Signature: t=...,v1=...`` signs ``body`` with ``secret``."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        t = int(fields["t"])
    except (KeyError, ValueError):
        return False
    expected = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return abs(time.time() - t) <= tolerance and hmac.compare_digest(expected, fields.get("v1", ""))


class Receiver:
    def __init__(self, statuses=(200,), delay: float = 0.0, headers: dict | None = None):
        self.statuses, self.delay, self.extra = list(statuses), delay, headers or {}
        self.requests: list[dict] = []
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.arrived:
                    index = len(receiver.requests)
                    receiver.requests.append(
                        {
                            "path": self.path,
                            "headers": dict(self.headers),
                            "body": body,
                            "at": time.monotonic(),
                        }
                    )
                    receiver.arrived.notify_all()
                time.sleep(receiver.delay)
                status = receiver.statuses[min(index, len(receiver.statuses) - 1)]
                self.send_response(status)
                for name, value in receiver.extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            do_GET = do_POST  # a followed redirect would arrive here

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"

    def wait(self, count: int, timeout: float = 60) -> list[dict]:
        """The first ``count`` requests, once they have arrived."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.requests) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"{len(self.requests)} of {count} webhook requests arrived in {timeout} s"
                    )
                self.arrived.wait(remaining)
            return self.requests[:count]

    def payload(self, index: int) -> dict:
        return json.loads(self.requests[index]["body"])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Trickler:
    """A receiver on 127.0.0.1 that reads the request, sends ``head`` at once, then
    ``rest`` one byte every ``interval`` seconds."""

    def __init__(self, head: bytes, rest: bytes, interval: float = 0.2):
        self.head, self.rest, self.interval = head, rest, interval
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/hook"
        self.closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection) -> None:
        with connection:
            try:
                connection.recv(65536)
                connection.sendall(self.head)
                for byte in self.rest:
                    if self.closed.wait(self.interval):
                        return
                    connection.sendall(bytes([byte]))
                # Closed with the request unread, the socket would reset the connection.
                connection.settimeout(5)
                while connection.recv(65536):
                    pass
            except OSError:
                return

    def close(self) -> None:
        self.closed.set()
        self.listener.close()


def fake_dns(monkeypatch, table: dict[str, list[str]]) -> list[str]:
    """Answer ``socket.getaddrinfo`` from ``table`` (name -> addresses; literals as
    themselves, any other name unknown); the names looked up, in order.

    ``socket.create_connection`` is held to loopback meanwhile: a check that
    wrongly lets a documentation or metadata address through fails the test
    instead of sending anything off this machine."""
    looked_up: list[str] = []
    connect = socket.create_connection

    def loopback_only(address, *args, **kwargs):
        try:
            loopback = ipaddress.ip_address(address[0]).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise AssertionError(f"a test tried to connect to {address[0]}")
        return connect(address, *args, **kwargs)

    def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
        looked_up.append(host)
        addresses = table.get(host)
        if addresses is None:
            try:
                addresses = [str(ipaddress.ip_address(host))]
            except ValueError:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None
        return [
            (
                socket.AF_INET6 if ":" in a else socket.AF_INET,
                socket.SOCK_STREAM,
                6,
                "",
                (a, port, 0, 0) if ":" in a else (a, port),
            )
            for a in addresses
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket, "create_connection", loopback_only)
    return looked_up
