"""One webhook request: a POST to the checked address, whole within the deadline.

The connection goes to the address :func:`~sca_worker.webhooks.addresses.target`
has just checked, under the URL's name (``Host`` and TLS server name).  The
deadline is total, not per read: a timer cuts the socket off when it passes, and
an answer counts only if its status line, headers and whole body arrived
before that; a receiver that sends ``200 OK`` and trickles the rest fails.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading

from .addresses import Allow, target

#: Bytes of the answer's body read at a time (and dropped).
READ = 65536


class _Pinned(http.client.HTTPConnection):
    """An HTTP connection to one checked address (the Host header keeps the name)."""

    def __init__(self, host, port, address, timeout):
        super().__init__(host, port, timeout=timeout)
        self.address = address
        #: The socket, kept after ``getresponse`` lets go of it (``Connection: close``).
        self.held = None

    def connect(self):
        self.sock = self.held = socket.create_connection((self.address, self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedTLS(_Pinned):
    default_port = 443

    def connect(self):
        super().connect()
        context = ssl.create_default_context()
        self.sock = self.held = context.wrap_socket(self.sock, server_hostname=self.host)


class _Deadline:
    """Shuts a connection's socket ``seconds`` from now; ``passed`` says whether it did."""

    def __init__(self, connection, seconds: float):
        self.connection, self.seconds = connection, seconds
        self.passed = threading.Event()
        self.timer = threading.Timer(seconds, self._shut)
        self.timer.daemon = True

    def _shut(self) -> None:
        self.passed.set()
        sock = self.connection.held
        if sock is None:
            return
        try:
            # Bytes still trickling in stay readable after a shutdown (Linux):
            # every further read times out at once instead.
            sock.settimeout(1e-6)
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def check(self) -> None:
        if self.passed.is_set():
            raise TimeoutError(f"no whole answer within {self.seconds:g} s")

    def __enter__(self):
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.timer.cancel()


def post(url: str, body: bytes, headers: dict, timeout: float, allow: Allow) -> int:
    """POST ``body`` to ``url`` (checked, resolved and pinned); the status of an
    answer that arrived whole within ``timeout`` seconds.  Raises
    :class:`~sca_worker.webhooks.addresses.Refused`, ``OSError`` (``TimeoutError``
    past the deadline) or ``http.client.HTTPException``."""
    scheme, host, port, path, addresses = target(url, allow)
    kind = _PinnedTLS if scheme == "https" else _Pinned
    connection = kind(host, port, addresses[0], timeout)
    try:
        with _Deadline(connection, timeout) as deadline:
            try:
                connection.request(
                    "POST",
                    path,
                    body=body,
                    headers={
                        "Content-Type": "application/json",
                        "User-Agent": "sca-webhook",
                        **headers,
                    },
                )
                response = connection.getresponse()
                while response.read(READ) and not deadline.passed.is_set():
                    pass
            except (OSError, http.client.HTTPException):
                deadline.check()  # the cut, not what it left behind, is the reason
                raise
            deadline.check()
            if response.length:  # the receiver closed before its Content-Length
                raise http.client.IncompleteRead(b"", response.length)
            return response.status
    finally:
        connection.close()
        if connection.held is not None:
            connection.held.close()
