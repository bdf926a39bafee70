"""The ``sca`` command: the core's ``cluster`` and ``custom``, plus ``serve``.

``sca serve`` runs the API under gunicorn (a production WSGI server) when it
is installed, else under werkzeug's threaded server.  Without ``REDIS_URL``
it is the embedded default: one process, jobs on a thread pool, the
in-memory store.  With ``REDIS_URL`` the API only enqueues; start workers
with ``celery -A worker worker``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from sca.cli import add_commands, execute

from .config import from_env

log = logging.getLogger("sca.serve")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sca", description="Stochastic clustering algorithm")
    sub = p.add_subparsers(dest="command", required=True)
    add_commands(sub)
    serve = sub.add_parser("serve", help="serve the HTTP API (embedded default without REDIS_URL)")
    serve.add_argument("--host", default=os.environ.get("SCA_HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(os.environ.get("SCA_PORT", "8000")))
    serve.add_argument("--workers", type=int, default=None,
                       help="API processes (REDIS_URL only; the embedded default uses one)")
    serve.add_argument("--threads", type=int, default=8, help="threads per API process")
    return p


def serve(host: str, port: int, workers: int | None = None, threads: int = 8) -> int:
    settings = from_env()  # what create_app will read
    embedded = not settings.get("REDIS_URL")
    if not (settings.get("SCA_API_KEYS") or settings.get("SCA_API_KEYS_FILE")):
        print("sca serve: no API keys (SCA_API_KEYS, SCA_API_KEYS_FILE): the API is open to "
              "anyone who can reach it" + ("" if embedded else
                                           "; refused with REDIS_URL unless "
                                           "SCA_ALLOW_ANONYMOUS=1"), file=sys.stderr)
    if embedded:
        workers = 1
        print(f"sca serve: embedded default (no REDIS_URL): jobs run in this process, "
              f"kept in memory; http://{host}:{port}", file=sys.stderr)
    else:
        workers = workers or 2
        print(f"sca serve: jobs go to Redis; run workers with `celery -A worker worker`; "
              f"http://{host}:{port}", file=sys.stderr)
    try:
        from gunicorn.app.base import BaseApplication
    except ImportError:
        BaseApplication = None
    if BaseApplication is None:
        from werkzeug.serving import run_simple

        from . import create_app

        run_simple(host, port, create_app(), threaded=True)
        return 0

    class _App(BaseApplication):
        def load_config(self):
            self.cfg.set("bind", f"{host}:{port}")
            self.cfg.set("workers", workers)
            self.cfg.set("threads", threads)
            self.cfg.set("worker_class", "gthread")
            self.cfg.set("timeout", 120)
            self.cfg.set("accesslog", "-")
            if "control_socket_disable" in self.cfg.settings:  # gunicorn >= 27
                self.cfg.set("control_socket_disable", True)

        def load(self):
            from . import create_app

            return create_app()

    _App().run()
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)
    if args.command == "serve":
        return serve(args.host, args.port, args.workers, args.threads)
    return execute(args)


if __name__ == "__main__":
    sys.exit(main())
