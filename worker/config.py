"""Worker settings, read from the environment in this one place.

The worker process (``celery -A worker worker``) calls :func:`settings_from_env`
once at import; the service builds the same mapping from its own Flask config
and hands it to :func:`worker.celery_app.create_celery` and
:func:`worker.store.store_from_settings`.
"""

from __future__ import annotations

import os

DEFAULTS = {
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
}

_INTS = ("SCA_JOB_TTL", "SCA_CHUNK_BYTES", "SCA_TASK_TIME_LIMIT",
         "SCA_TASK_SOFT_TIME_LIMIT", "SCA_VISIBILITY_TIMEOUT", "SCA_REDIS_TIMEOUT",
         "SCA_HEARTBEAT_INTERVAL", "SCA_HEARTBEAT_TIMEOUT", "SCA_MAX_TAKEOVERS")


def check_settings(settings) -> None:
    """Refuse limits that contradict each other (a ``ValueError`` naming them)."""
    get = lambda name: int(settings.get(name) or DEFAULTS[name])  # noqa: E731
    soft, hard = get("SCA_TASK_SOFT_TIME_LIMIT"), get("SCA_TASK_TIME_LIMIT")
    visibility = get("SCA_VISIBILITY_TIMEOUT")
    if not 0 < soft < hard < visibility:
        raise ValueError(f"need 0 < SCA_TASK_SOFT_TIME_LIMIT ({soft}) < SCA_TASK_TIME_LIMIT "
                         f"({hard}) < SCA_VISIBILITY_TIMEOUT ({visibility}): a task still "
                         f"running when the visibility timeout ends is delivered twice")
    interval, timeout = get("SCA_HEARTBEAT_INTERVAL"), get("SCA_HEARTBEAT_TIMEOUT")
    if not 0 < 2 * interval <= timeout:
        raise ValueError(f"SCA_HEARTBEAT_TIMEOUT ({timeout}) must be at least twice "
                         f"SCA_HEARTBEAT_INTERVAL ({interval})")


def settings_from_env(environ=None) -> dict:
    """The worker's settings: :data:`DEFAULTS` overridden by the environment."""
    environ = os.environ if environ is None else environ
    settings = dict(DEFAULTS)
    for name in DEFAULTS:
        value = environ.get(name)
        if value is None or value == "":
            continue
        settings[name] = int(value) if name in _INTS else value
    return settings
