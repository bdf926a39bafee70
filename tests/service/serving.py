"""A real HTTP server for tests that talk HTTP (the client, the browser).

:func:`serve` runs an app on werkzeug's threaded WSGI server on a free
loopback port in a background thread; :func:`sca_serve` starts the real
``sca serve`` command (embedded default unless told otherwise) as a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import requests
from werkzeug.serving import make_server

from tests.conftest import ROOT, free_port, stop_process


@contextmanager
def serve(app):
    """Serve ``app`` on 127.0.0.1:<free port>; yields the base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)
        queue = app.extensions["sca"].queue
        if hasattr(queue, "shutdown"):
            queue.shutdown()


def wait_until_up(url: str, process=None, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if requests.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer within {timeout} s")
        time.sleep(0.1)


@contextmanager
def sca_serve(env: dict | None = None, args=(), log: Path | None = None, hide=()):
    """``sca serve`` on 127.0.0.1:<free port> with extra command-line ``args``; yields the URL.

    The environment is this process's without ``REDIS_URL`` and API keys (the
    embedded default, open), plus ``env``.  Its output (standard output and
    error) goes to the file ``log`` when given, else to a temporary file shown
    if the server does not come up.  The packages named in ``hide`` cannot be
    imported by it (as if they were not installed).
    """
    port = free_port()
    environment = {
        k: v for k, v in os.environ.items() if k != "REDIS_URL" and not k.startswith("SCA_API_KEY")
    }
    environment.update(PYTHONPATH=str(ROOT), **(env or {}))
    output = open(log, "w+b") if log is not None else tempfile.TemporaryFile()
    main = (
        f"import sys; sys.modules.update(dict.fromkeys({list(hide)!r})); "
        "from sca_service.cli import main; sys.exit(main())"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", main, "serve", "--host", "127.0.0.1", "--port", str(port), *args],
        cwd=ROOT,
        env=environment,
        stdout=output,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_until_up(url, process)
        except RuntimeError as exc:
            output.seek(0)
            raise RuntimeError(
                f"{exc}; its log:\n{output.read().decode(errors='replace')}"
            ) from None
        yield url
    finally:
        stop_process(process, 15)
        output.close()
