"""Worker settings, read from the environment in this one place.

The worker process (``celery -A worker worker``) calls :func:`settings_from_env`
once, when its Celery app is built; the service reads its own settings with
the same :func:`convert` and hands the worker's subset to
:func:`sca_worker.celery_app.create_celery` and
:func:`sca_worker.store.store_from_settings`, which both :func:`resolve` it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from sca.storage import parse_roots

DEFAULTS: dict[str, Any] = {
    "REDIS_URL": None,
    # Jobs, results and artifacts expire this many seconds after their last use.
    "SCA_JOB_TTL": 86_400,
    # Artifacts larger than this are split over several Redis values (a Redis
    # string holds at most 512 MB).
    "SCA_CHUNK_BYTES": 64 * 1024 * 1024,
    "SCA_KEY_PREFIX": "sca:",
    # Hard and soft time limits of one task, seconds.  They must stay below
    # the broker's visibility timeout, or a long task is delivered twice.
    "SCA_TASK_TIME_LIMIT": 3_000,
    "SCA_TASK_SOFT_TIME_LIMIT": 2_900,
    "SCA_VISIBILITY_TIMEOUT": 3_600,
    # Seconds to wait for Redis to connect or answer one command.
    "SCA_REDIS_TIMEOUT": 10,
    # A running task beats every SCA_HEARTBEAT_INTERVAL seconds; when a task's
    # beats stop for SCA_HEARTBEAT_TIMEOUT seconds (its worker was killed or
    # lost), a live worker resumes the job from its cached stages, at most
    # SCA_MAX_TAKEOVERS times before failing it.
    "SCA_HEARTBEAT_INTERVAL": 10,
    "SCA_HEARTBEAT_TIMEOUT": 60,
    "SCA_MAX_TAKEOVERS": 3,
    # While Redis is full (used memory at maxmemory, policy noeviction) a task
    # waits this many seconds for room, then fails its job with a problem
    # saying so; publishing the next stage and storing results wait as long.
    "SCA_STORE_FULL_WAIT": 300,
    # A job of at most this many elements runs all its stages in one task
    # (sca.start): a small job pays one Celery hop, not one per stage.  0 = every
    # stage its own task, whatever the size.
    "SCA_SMALL_JOB_ELEMENTS": 2_000,
    # Warm the compiled kernels (sca.warm: load them from numba's disk cache, or
    # compile them into it) and the stages' first calls before taking work: in
    # each Celery worker, before its pool starts, and in the embedded default.
    "SCA_WARM": True,
    # Webhooks (sca_worker.webhooks): hosts and networks callbacks may reach
    # (unset: any public address), the signing secret when a job brings none,
    # seconds per attempt (the whole answer within it), retries after the
    # first, and the first retry's delay in seconds (doubled each time, at
    # most 600).
    "SCA_WEBHOOK_ALLOW": None,
    "SCA_WEBHOOK_SECRET": None,
    "SCA_WEBHOOK_TIMEOUT": 10.0,
    "SCA_WEBHOOK_RETRIES": 8,
    "SCA_WEBHOOK_BACKOFF": 2.0,
    # Delivery threads per worker process (apart from the stages' pool; 0:
    # this worker delivers none) and of the embedded runner, and how many of
    # them one sender (an API key, or a receiver's host without keys) may hold.
    "SCA_WEBHOOK_CONCURRENCY": 8,
    "SCA_WEBHOOK_PER_SENDER": 2,
    # Stage tasks of one API key's jobs running at once across every worker
    # (sca_worker.share); more wait, so other keys get the processes.  0: no cap.
    "SCA_MAX_RUNNING_PER_KEY": 0,
    # Storage roots a job may name its labels under (name=directory or URL,
    # comma-separated; sca.storage), and where the labels of a job run on Dask
    # are written (a root's name; unset: beside the input, in its own root).
    "SCA_DATA_ROOTS": None,
    "SCA_RESULTS_ROOT": None,
    # A Dask scheduler (tcp://host:8786): jobs named by reference, and jobs of at
    # least SCA_DASK_MIN_ELEMENTS elements, run on its cluster (sca_worker.distributed);
    # seconds to reach it, and to wait for it when it goes away, before the job fails.
    "SCA_DASK_SCHEDULER": None,
    "SCA_DASK_MIN_ELEMENTS": 1_000_000,
    "SCA_DASK_TIMEOUT": 10.0,
    # A job run on Dask from labels named by reference with more elements than
    # this has no per-element lists in its result: its labels and confidences are
    # written as npy stacks and read a page at a time (GET /v1/jobs/{id}/labels).
    "SCA_RESULT_LIST_MAX": 1_000_000,
}

#: Spellings of a flag's two values (any case).
FLAGS = {
    "true": True,
    "yes": True,
    "on": True,
    "1": True,
    "false": False,
    "no": False,
    "off": False,
    "0": False,
}
_EXPECTED = {
    bool: "true or false (also yes/no, on/off, 1/0)",
    int: "a whole number",
    float: "a finite number",
}


class SettingError(ValueError):
    """A setting whose value is not of its type; the message names the variable."""


def parse(name: str, value, default):
    """``value`` (text from the environment, or already typed) as the type of ``default``:
    a flag, a whole number, a number, or text when the default is text or None.

    Raises :class:`SettingError` naming ``name`` and the type expected.
    """
    kind = type(default)
    if kind not in _EXPECTED or isinstance(value, kind):
        return value
    text = str(value).strip()
    try:
        if kind is bool:
            return FLAGS[text.lower()]
        if kind is int and not isinstance(value, (bool, float)):
            return int(text)
        if kind is float and not isinstance(value, bool) and math.isfinite(float(text)):
            return float(text)
    except (KeyError, ValueError):
        pass
    raise SettingError(f"{name} must be {_EXPECTED[kind]}, not {text!r}")


def convert(values: Mapping, defaults: Mapping = DEFAULTS) -> dict:
    """The names of ``defaults`` that ``values`` sets (not None or ""), each
    converted to its default's type by :func:`parse` (the environment gives text)."""
    return {
        name: parse(name, values[name], default)
        for name, default in defaults.items()
        if values.get(name) not in (None, "")
    }


def resolve(settings: Mapping) -> dict:
    """Every worker setting: :data:`DEFAULTS` overridden by ``settings``.

    Raises ``ValueError`` naming limits that contradict each other.
    """
    resolved = {**DEFAULTS, **convert(settings)}
    soft, hard = resolved["SCA_TASK_SOFT_TIME_LIMIT"], resolved["SCA_TASK_TIME_LIMIT"]
    visibility = resolved["SCA_VISIBILITY_TIMEOUT"]
    if not 0 < soft < hard < visibility:
        raise ValueError(
            f"need 0 < SCA_TASK_SOFT_TIME_LIMIT ({soft}) < SCA_TASK_TIME_LIMIT "
            f"({hard}) < SCA_VISIBILITY_TIMEOUT ({visibility}): a task still "
            f"running when the visibility timeout ends is delivered twice"
        )
    interval, timeout = resolved["SCA_HEARTBEAT_INTERVAL"], resolved["SCA_HEARTBEAT_TIMEOUT"]
    if not 0 < 2 * interval <= timeout:
        raise ValueError(
            f"SCA_HEARTBEAT_TIMEOUT ({timeout}) must be at least twice "
            f"SCA_HEARTBEAT_INTERVAL ({interval})"
        )
    for name in ("SCA_WEBHOOK_TIMEOUT", "SCA_WEBHOOK_BACKOFF", "SCA_DASK_TIMEOUT"):
        if not resolved[name] > 0:
            raise ValueError(f"{name} ({resolved[name]}) must be positive")
    for name, least in (
        ("SCA_SMALL_JOB_ELEMENTS", 0),
        ("SCA_WEBHOOK_RETRIES", 0),
        ("SCA_WEBHOOK_CONCURRENCY", 0),
        ("SCA_WEBHOOK_PER_SENDER", 1),
        ("SCA_MAX_RUNNING_PER_KEY", 0),
        ("SCA_DASK_MIN_ELEMENTS", 0),
        ("SCA_RESULT_LIST_MAX", 1),
    ):
        if resolved[name] < least:
            raise ValueError(f"{name} ({resolved[name]}) must be {least} or more")
    roots = parse_roots(resolved["SCA_DATA_ROOTS"])
    results = resolved["SCA_RESULTS_ROOT"]
    if results and (results not in roots or "://" in roots[results]):
        raise ValueError(
            f"SCA_RESULTS_ROOT ({results}) must name a directory root of SCA_DATA_ROOTS"
        )
    return resolved


def check_settings(settings: Mapping) -> None:
    """Refuse limits that contradict each other (a ``ValueError`` naming them)."""
    resolve(settings)


def settings_from_env(environ: Mapping | None = None) -> dict:
    """The worker's settings: :data:`DEFAULTS` overridden by the environment."""
    return resolve(os.environ if environ is None else environ)
