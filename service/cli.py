"""``sca serve``: :mod:`sca_service.commands` adds it to the core's command line
(:mod:`sca.cli`) and calls :func:`serve`, importing this module only then.

``sca serve`` serves the API through :mod:`sca_service.front` (waitress, which
reads each request whole before a thread handles it, so slow clients cannot
starve the service).  Without ``REDIS_URL`` it is the embedded default: one
process, jobs on a thread pool, the store in process.  With ``REDIS_URL`` the
API only enqueues (start workers with ``celery -A worker worker``) and runs
``--workers`` processes under gunicorn's arbiter, each a waitress front with
``--threads`` threads; without gunicorn installed, one such process.

A setting of the wrong type, limits that contradict each other, or Redis
without API keys stop start-up with one line naming the setting (exit 2).
"""

from __future__ import annotations

import os
import signal
import sys
import threading

from sca.cli import build_parser, execute
from sca_worker.config import check_settings, convert

# The web stack (Flask through auth, waitress through front): a missing server
# extra fails this import, which `sca serve` (sca_service.commands) names.
from . import create_app, front
from .auth import load_keys
from .config import from_env, worker_settings
from .origin import LOOPBACK_NAMES

#: The ``sca`` command's parser (the core's commands and every package's).
parser = build_parser


def start_up_problem(settings: dict) -> str | None:
    """Why the API cannot start with ``settings`` (one line), or None."""
    try:
        check_settings(worker_settings(settings))
    except ValueError as exc:
        return str(exc)
    keys = settings.get("SCA_API_KEYS") or settings.get("SCA_API_KEYS_FILE")
    metrics_key = settings.get("SCA_METRICS_KEY")
    if metrics_key and metrics_key in _api_keys(settings):
        return "SCA_METRICS_KEY must differ from every API key"
    if settings.get("REDIS_URL") and not keys and not settings.get("SCA_ALLOW_ANONYMOUS"):
        return (
            "REDIS_URL is set but no API keys are: set SCA_API_KEYS or SCA_API_KEYS_FILE "
            "(or SCA_ALLOW_ANONYMOUS=true to run open)"
        )
    return None


def _api_keys(settings: dict) -> list[str]:
    return load_keys(settings)


#: Where ``sca serve`` listens unless ``--host``/``--port`` say otherwise.
LISTEN_DEFAULTS = {"SCA_HOST": "127.0.0.1", "SCA_PORT": 8000}


def serve(
    host: str | None = None, port: int | None = None, workers: int | None = None, threads: int = 8
) -> int:
    try:
        settings = from_env()  # what create_app will read
        listen = {**LISTEN_DEFAULTS, **convert(os.environ, LISTEN_DEFAULTS)}  # typed, named
    except ValueError as exc:
        return _refuse(str(exc))
    host = listen["SCA_HOST"] if host is None else host
    port = listen["SCA_PORT"] if port is None else port
    problem = start_up_problem(settings)
    if problem:
        return _refuse(problem)
    try:  # taken or forbidden: said in one line, before the serving lines and any retry
        probe = front.listen(host, port)
    except OSError as exc:
        return _refuse(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} "
            "(choose another address with --host/--port or SCA_HOST/SCA_PORT)"
        )
    embedded = not settings.get("REDIS_URL")
    if not (settings.get("SCA_API_KEYS") or settings.get("SCA_API_KEYS_FILE")):
        print(
            "sca serve: no API keys (SCA_API_KEYS, SCA_API_KEYS_FILE): the API is open to "
            "anyone who can reach it",
            file=sys.stderr,
        )
        if host not in LOOPBACK_NAMES and not settings.get("SCA_ALLOWED_HOSTS"):
            print(
                f"sca serve: listening on {host}, but without API keys only requests for "
                f"{', '.join(LOOPBACK_NAMES)} are answered (set SCA_ALLOWED_HOSTS)",
                file=sys.stderr,
            )
    if embedded:
        workers = 1
        print(
            f"sca serve: embedded default (no REDIS_URL): jobs run in this process, "
            f"kept in memory; http://{host}:{port}",
            file=sys.stderr,
        )
    else:
        workers = workers or 2
        print(
            f"sca serve: jobs go to Redis; run workers with `celery -A worker worker`; "
            f"http://{host}:{port}",
            file=sys.stderr,
        )
    try:
        from gunicorn.app.base import BaseApplication  # optional: one process without it
    except ImportError:
        if workers > 1:
            print(
                "sca serve: one API process (install gunicorn, the `server` extra, for --workers)",
                file=sys.stderr,
            )
        return _serve_one(probe, threads)
    probe.close()  # gunicorn's arbiter binds the address itself

    class _App(BaseApplication):
        def load_config(self):
            self.cfg.set("bind", f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
            self.cfg.set("workers", workers)
            self.cfg.set("threads", threads)
            self.cfg.set("worker_class", "sca_service.front.FrontWorker")
            self.cfg.set("timeout", 120)  # the front's loop checks in every second
            if "control_socket_disable" in self.cfg.settings:  # gunicorn >= 27
                self.cfg.set("control_socket_disable", True)

        def load(self):
            return create_app()

    _App().run()
    return 0


def _serve_one(sock, threads: int) -> int:
    """One process, no gunicorn: the front on the listening ``sock`` until SIGTERM or SIGINT."""
    stop = threading.Event()
    for name in (signal.SIGTERM, signal.SIGINT):
        signal.signal(name, lambda *_: stop.set())
    app = create_app()
    server = front.create_server(app, sock, app.config, threads)
    front.serve_until(server, alive=lambda: not stop.is_set())
    return 0


def _refuse(problem: str) -> int:
    print(f"sca serve: {problem}", file=sys.stderr)
    return 2


def main(argv=None) -> int:
    """The ``sca`` command (as :func:`sca.cli.main`)."""
    return execute(parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
