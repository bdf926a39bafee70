"""``sca serve``: its arguments, added to the core's command line (:mod:`sca.cli`)
through the ``sca.commands`` entry point (pyproject.toml).

This module imports nothing but the standard library, so ``sca serve`` can
say which extra to install when the web stack is missing; :mod:`.cli`, which
serves, is imported when the command runs.
"""

from __future__ import annotations

import sys

SERVER_EXTRA = "pip install 'stochastic-clustering[server]'"


def add_serve_command(sub) -> None:
    """Add ``serve`` to an argparse subparsers action."""
    serve = sub.add_parser(
        "serve",
        help="serve the HTTP API (embedded default without REDIS_URL); needs the server extra",
        description="Serve the HTTP API: without REDIS_URL the embedded "
        "default (one process, jobs in memory); with it, the API enqueues "
        "for `celery -A worker worker`.",
    )
    # Their defaults are read by sca_service with the other settings (a bad value is named).
    serve.add_argument("--host", help="address to listen on (default: $SCA_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default: $SCA_PORT or 8000)")
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="API processes (REDIS_URL only; the embedded default uses one)",
    )
    serve.add_argument(
        "--threads", type=int, default=8, metavar="N", help="threads per API process (default: 8)"
    )
    serve.set_defaults(run=run_serve)


def run_serve(args) -> int:
    """Carry out ``sca serve``; exit 2, naming the extra, without the web stack."""
    try:
        from .cli import serve  # the web stack: the server extra
    except ImportError as exc:
        print(
            f"sca serve: the server extra is not installed ({exc.name} is missing): {SERVER_EXTRA}",
            file=sys.stderr,
        )
        return 2
    return serve(args.host, args.port, args.workers, args.threads)
