"""Service settings: defaults, read from the environment in this one place.

``create_app`` applies, in order, :data:`DEFAULTS`, :func:`from_env` and the
mapping a test passes.  Every setting is a plain upper-case key of the Flask
config; the worker's own settings (:mod:`sca_worker.config`) use the same names.
"""

from __future__ import annotations

import os

from sca_worker.config import DEFAULTS as WORKER_DEFAULTS
from sca_worker.config import convert

MIB = 1024 * 1024

DEFAULTS = {
    # The worker's settings (Redis, TTL, chunks, task limits, heartbeats) are
    # shared: the service passes them on to the Celery client and the store.
    **WORKER_DEFAULTS,
    "SCA_MAX_BODY_BYTES": 512 * MIB,
    # A JSON body (or a JSON part of a multipart upload) becomes Python objects
    # at about ten times its size once parsed, so it has its own, far lower limit
    # (413 before parsing); large matrices go as .npy, .npz or .csv uploads.
    "SCA_MAX_JSON_BYTES": 16 * MIB,
    # Size limits (413 when exceeded).  Array bytes are counted at 8 per entry
    # from an uploaded file's headers, before it is decompressed or read.
    "SCA_MAX_ARRAY_BYTES": 512 * MIB,
    "SCA_MAX_N": 1_000_000,
    "SCA_MAX_DENSE_N": 20_000,
    "SCA_MAX_M": 100_000,
    "SCA_MAX_RUNS": 1_000,
    # Value limits (422 when exceeded).
    "SCA_MAX_K": 1_000,
    "SCA_MAX_K_HAT": 1_000,
    "SCA_MAX_ITERATIONS": 100_000,
    "SCA_MAX_STARTS": 1_000,
    # Threads running jobs in the embedded default.
    "SCA_EMBEDDED_WORKERS": 2,
    # Access: API keys (comma-separated, and/or one per line in a file).  With
    # REDIS_URL the API refuses to start without keys unless SCA_ALLOW_ANONYMOUS=true.
    "SCA_API_KEYS": None,
    "SCA_API_KEYS_FILE": None,
    "SCA_ALLOW_ANONYMOUS": False,
    # Host names the service answers for (comma-separated; * = any; 400 otherwise).
    # Unset: the loopback names while it runs without keys, any host with keys.
    "SCA_ALLOWED_HOSTS": None,
    # Per key: requests per second, and jobs queued or running (429 beyond; 0 = off).
    "SCA_RATE_LIMIT": 100,
    "SCA_MAX_ACTIVE_JOBS": 20,
    # Per key: bytes of input arrays its jobs may hold in the store (413 beyond; 0 = off).
    "SCA_MAX_KEY_BYTES": 2048 * MIB,
    # Seconds the first answer to a POST /v1/jobs with an Idempotency-Key is
    # kept, and replayed to a repeat of that request (per API key).
    "SCA_IDEMPOTENCY_TTL": 86_400,
    # Bearer token for GET /metrics (never a job API key); unset, /metrics answers
    # only clients in SCA_METRICS_NETWORKS (loopback by default; 403 otherwise).
    "SCA_METRICS_KEY": None,
    "SCA_METRICS_NETWORKS": "127.0.0.0/8,::1/128",
    # Seconds between two censuses of the store's jobs and artifacts (one process
    # of the whole service takes it; every scrape meanwhile reads the last one).
    "SCA_METRICS_CENSUS_SECONDS": 15.0,
    # Balanced operators (and small job facts) kept in each API process for queries.
    "SCA_QUERY_CACHE_ITEMS": 32,
    # Seconds a custom-cluster query may run (422 beyond), and the queries past
    # their first 0.05 s that may run at once in each API process (503 beyond).
    "SCA_QUERY_TIME_BUDGET": 10.0,
    "SCA_MAX_LONG_QUERIES": 2,
    # Seconds a plot may take to draw (in a process of its own, killed beyond:
    # 503), and the plots drawn at once per API process (503 beyond).
    "SCA_PLOT_TIME_BUDGET": 30.0,
    "SCA_MAX_PLOT_RENDERS": 2,
    # The HTTP front of `sca serve` (sca_service.front), which reads every request
    # whole before a thread handles it: seconds to receive a request line and
    # its headers, longest silence inside a body (or on an idle connection),
    # connections held per API process, and bytes of request line + headers
    # (414 or 431 beyond).
    "SCA_HEADER_TIMEOUT": 10,
    "SCA_BODY_TIMEOUT": 30,
    "SCA_MAX_CONNECTIONS": 1000,
    "SCA_MAX_HEADER_BYTES": 65536,
    # Server-Sent Events (GET /v1/jobs/{id}/events): seconds between keep-alive
    # comments, longest life of one stream (the client then reconnects), and
    # streams open at once per API process (503 beyond), each holding a thread.
    "SCA_EVENTS_HEARTBEAT": 15.0,
    "SCA_EVENTS_MAX_SECONDS": 300.0,
    "SCA_MAX_EVENT_STREAMS": 4,
}


def from_env(environ=None) -> dict:
    """The settings present in the environment, converted to their default's type."""
    return convert(os.environ if environ is None else environ, DEFAULTS)


def worker_settings(config) -> dict:
    """The subset of the Flask config that the worker package understands."""
    return {name: config.get(name) for name in WORKER_DEFAULTS}
