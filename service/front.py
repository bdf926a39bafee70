"""The HTTP front of ``sca serve``: waitress, so that slow clients cannot starve it.

A server that gives a connection to a worker thread as soon as it is
accepted (gunicorn's gthread, werkzeug) lets a handful of clients that
trickle their headers or body in hold every thread, and then nobody else is
answered.  waitress reads on one asynchronous loop and hands a request to a
thread only once it has arrived whole (bodies beyond ``inbuf_overflow`` are
spooled to a temporary file), so a slow client costs a socket, not a thread.
On top of waitress's limits this module adds:

* a header deadline: a request line and headers still incomplete
  ``SCA_HEADER_TIMEOUT`` seconds after their first byte close the
  connection (waitress alone only closes a connection silent for
  ``channel_timeout``, which is ``SCA_BODY_TIMEOUT`` here, so one byte now
  and then would keep it open);
* waitress's own error answers (request line and headers over
  ``SCA_MAX_HEADER_BYTES``, a body over ``SCA_MAX_BODY_BYTES``, a malformed
  request) as ``application/problem+json`` like every other error, with 414
  when the limit is reached while the request line is still arriving and 431
  once it is in the headers.  Such requests never reach the app.

:func:`create_server` builds the server of one process and
:func:`serve_until` runs it; with gunicorn installed ``sca serve`` runs
:class:`FrontWorker` processes under gunicorn's arbiter (see :mod:`sca_service.cli`).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Mapping

from waitress import wasyncore
from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.server import TcpWSGIServer
from waitress.task import ErrorTask
from waitress.utilities import Error, RequestEntityTooLarge, RequestHeaderFieldsTooLarge

from .config import DEFAULTS
from .errors import PROBLEM_MEDIA_TYPE, problem_document

#: The field each of waitress's own errors is about (the problem's ``errors`` key).
_FIELDS = {400: "request", 413: "body", 414: "url", 431: "headers", 501: "Transfer-Encoding"}


class UriTooLong(Error):
    code = 414
    reason = "URI Too Long"


class FrontParser(HTTPRequestParser):
    """waitress's request parser, noting when the request began and how long its
    request line is (to tell 414 from 431)."""

    line_length = 0
    line_ended = False

    def __init__(self, adj):
        super().__init__(adj)
        self.started = time.time()

    def received(self, data):
        if not self.line_ended:
            head = (self.header_plus + data).lstrip()
            end = head.find(b"\n")
            self.line_ended, self.line_length = end >= 0, end if end >= 0 else len(head)
        consumed = super().received(data)
        limit = self.adj.max_request_header_size
        if isinstance(self.error, RequestHeaderFieldsTooLarge):
            self.error = (
                UriTooLong(f"the request line exceeds {limit} bytes")
                if self.line_length >= limit or not self.line_ended
                else RequestHeaderFieldsTooLarge(
                    f"the request line and headers exceed {limit} bytes"
                )
            )
        elif isinstance(self.error, RequestEntityTooLarge):
            self.error = RequestEntityTooLarge(
                f"the body exceeds {self.adj.max_request_body_size - 1} bytes"
            )
        return consumed


class ProblemErrorTask(ErrorTask):
    """waitress's answer to a request it refused, as problem+json."""

    def execute(self):
        error = self.request.error
        detail = error.body or error.reason
        field = _FIELDS.get(error.code, "request")
        body = json.dumps(
            problem_document(error.code, error.reason, detail, errors={field: [detail]})
        ).encode()
        self.status = f"{error.code} {error.reason}"
        self.response_headers.append(("Content-Type", PROBLEM_MEDIA_TYPE))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class FrontChannel(HTTPChannel):
    parser_class = FrontParser
    error_task_class = ProblemErrorTask


class FrontServer(TcpWSGIServer):
    """waitress's TCP server with :class:`FrontChannel` and the header deadline."""

    channel_class = FrontChannel
    header_timeout = DEFAULTS["SCA_HEADER_TIMEOUT"]

    def maintenance(self, now):
        super().maintenance(now)  # closes connections silent for channel_timeout
        for channel in self.active_channels.values():
            request = channel.request
            if (
                request is not None
                and not request.headers_finished
                and now - request.started > self.header_timeout
            ):
                channel.will_close = True

    def busy(self) -> bool:
        """Whether a request is being handled or an answer is still being sent."""
        return any(
            channel.requests or channel.total_outbufs_len
            for channel in list(self.active_channels.values())
        )


def adjustments(settings: Mapping, threads: int) -> dict:
    """waitress's settings from ours (``settings`` over :data:`sca_service.config.DEFAULTS`)."""
    settings = {**DEFAULTS, **settings}
    return {
        "threads": threads,
        "channel_timeout": settings["SCA_BODY_TIMEOUT"],
        "connection_limit": settings["SCA_MAX_CONNECTIONS"],
        "max_request_header_size": settings["SCA_MAX_HEADER_BYTES"],
        # One byte over the app's limit, so that the app's own 413 names the field
        # when Content-Length is exactly at the limit (waitress refuses >= max).
        "max_request_body_size": settings["SCA_MAX_BODY_BYTES"] + 1,
        # Deadlines are checked this often (seconds).
        "cleanup_interval": 1,
        # poll(), not select(): more than 1024 descriptors.
        "asyncore_use_poll": True,
        "ident": "sca",
    }


def create_server(app, sock: socket.socket, settings: Mapping, threads: int) -> FrontServer:
    """A :class:`FrontServer` for ``app`` on the listening socket ``sock``."""
    adj = Adjustments(sockets=[sock], **adjustments(settings, threads))
    server = FrontServer(
        app,
        map={},
        _sock=sock,
        adj=adj,
        bind_socket=False,
        sockinfo=(sock.family, sock.type, sock.proto, sock.getsockname()),
    )
    server.header_timeout = {**DEFAULTS, **settings}["SCA_HEADER_TIMEOUT"]
    return server


def serve_until(
    server: FrontServer, alive=lambda: True, tick=lambda: None, grace: float = 30
) -> None:
    """Serve until ``alive()`` turns false (``tick()`` is called at least once a
    second meanwhile), then stop accepting and let the requests under way finish
    for at most ``grace`` seconds."""
    while alive():
        tick()
        wasyncore.loop(timeout=1, map=server._map, use_poll=True, count=1)
    server.accepting = False
    deadline = time.monotonic() + grace
    while server.busy() and time.monotonic() < deadline:
        tick()
        wasyncore.loop(timeout=0.1, map=server._map, use_poll=True, count=1)
    server.task_dispatcher.shutdown(timeout=max(0.0, deadline - time.monotonic()))
    wasyncore.close_all(server._map)


def listen(host: str, port: int, backlog: int = 1024) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv6 when ``host`` is an IPv6 address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=backlog)


try:
    from gunicorn.workers.base import Worker
except ImportError:  # the one-process fallback of sca_service.cli needs no gunicorn
    Worker = None

if Worker is not None:

    class FrontWorker(Worker):
        """A gunicorn worker process serving through :class:`FrontServer`: gunicorn
        forks, supervises and restarts the API processes; waitress reads requests."""

        def run(self):
            server = create_server(
                self.wsgi, self.sockets[0].sock, self.wsgi.config, self.cfg.threads
            )
            parent = self.ppid

            def alive() -> bool:
                return self.alive and os.getppid() == parent

            serve_until(server, alive, self.notify, self.cfg.graceful_timeout)
