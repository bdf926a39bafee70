"""The Celery application: JSON only, late acknowledgement, limits from settings.

``create_celery(settings)`` builds an app from a settings mapping (see
:mod:`worker.config`); the module-level :data:`app` is the one
``celery -A worker worker`` runs.  The API builds its own client app from
its Flask config with the same function and sends tasks by name only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from urllib.parse import parse_qs, urlparse

from celery import Celery, signals

from .config import DEFAULTS, check_settings, settings_from_env
from .store import ArtifactStore, store_from_settings

_CERT_REQS = {"required": "CERT_REQUIRED", "optional": "CERT_OPTIONAL", "none": "CERT_NONE"}


def ssl_options(url: str) -> dict | None:
    """TLS options of a ``rediss://`` URL (``?ssl_cert_reqs=required&ssl_ca_certs=...``)."""
    parsed = urlparse(url)
    if parsed.scheme != "rediss":
        return None
    import ssl

    query = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
    reqs = query.get("ssl_cert_reqs", "required").lower().removeprefix("cert_")
    options = {"ssl_cert_reqs": getattr(ssl, _CERT_REQS.get(reqs, "CERT_REQUIRED"))}
    for name in ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile"):
        if query.get(name):
            options[name] = query[name]
    return options


def celery_config(settings: Mapping) -> dict:
    check_settings(settings)
    url = settings.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    ttl = int(settings.get("SCA_JOB_TTL", DEFAULTS["SCA_JOB_TTL"]))
    visibility = int(settings.get("SCA_VISIBILITY_TIMEOUT", DEFAULTS["SCA_VISIBILITY_TIMEOUT"]))
    timeout = int(settings.get("SCA_REDIS_TIMEOUT") or DEFAULTS["SCA_REDIS_TIMEOUT"])
    transport = {"visibility_timeout": visibility, "socket_timeout": timeout,
                 "socket_connect_timeout": timeout}
    tls = ssl_options(url)
    return {
        "broker_url": url,
        "result_backend": url,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "result_accept_content": ["json"],
        "result_expires": ttl,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_time_limit": int(settings.get("SCA_TASK_TIME_LIMIT",
                                            DEFAULTS["SCA_TASK_TIME_LIMIT"])),
        "task_soft_time_limit": int(settings.get("SCA_TASK_SOFT_TIME_LIMIT",
                                                 DEFAULTS["SCA_TASK_SOFT_TIME_LIMIT"])),
        "broker_transport_options": transport,
        "result_backend_transport_options": transport,
        "redis_socket_timeout": timeout,
        "redis_socket_connect_timeout": timeout,
        "broker_use_ssl": tls,
        "redis_backend_use_ssl": tls,
        "event_serializer": "json",
        "broker_connection_retry_on_startup": True,
        "broker_connection_max_retries": None,  # a worker waits for Redis to come back
        # A finished stage publishes the next one; ride out a Redis restart meanwhile.
        "task_publish_retry_policy": {"max_retries": 60, "interval_start": 0.5,
                                      "interval_step": 0.5, "interval_max": 2},
        "task_default_queue": "sca",
        "worker_hijack_root_logger": False,
    }


def create_celery(settings: Mapping) -> Celery:
    """A Celery app for ``settings``; the store it uses is ``app.sca_store``."""
    app = Celery("sca", include=["worker.tasks"])
    app.config_from_object(celery_config(settings))
    app.sca_settings = dict(settings)
    app.sca_store = None
    return app


def get_store(app: Celery) -> ArtifactStore:
    """The app's store, created on first use (after the worker has forked)."""
    if app.sca_store is None:
        settings = dict(app.sca_settings)
        settings.setdefault("REDIS_URL", app.conf.broker_url)
        if not settings.get("REDIS_URL"):
            settings["REDIS_URL"] = app.conf.broker_url
        app.sca_store = store_from_settings(settings)
    return app.sca_store


_watchdogs: dict = {}


@signals.worker_ready.connect
def _start_watchdog(sender=None, **kwargs):
    """Each worker's main process watches the heartbeats of every worker's tasks."""
    from .heartbeat import Watchdog

    celery = getattr(sender, "app", None)
    settings = getattr(celery, "sca_settings", None)
    if settings is None or not settings.get("REDIS_URL") and not celery.conf.broker_url:
        return
    settings = dict(settings, REDIS_URL=settings.get("REDIS_URL") or celery.conf.broker_url)
    get = lambda name: int(settings.get(name) or DEFAULTS[name])  # noqa: E731
    watchdog = Watchdog(store_from_settings(settings),
                        lambda job_id: celery.send_task("sca.start", kwargs={"job_id": job_id}),
                        get("SCA_HEARTBEAT_INTERVAL"), get("SCA_HEARTBEAT_TIMEOUT"),
                        get("SCA_MAX_TAKEOVERS"))
    watchdog.start()
    _watchdogs[id(celery)] = watchdog
    logging.getLogger(__name__).info("watchdog: resuming jobs whose tasks stop beating for "
                                     "%ss", watchdog.timeout)


@signals.task_received.connect
def _beat_on_receipt(sender=None, request=None, **kwargs):
    for watchdog in _watchdogs.values():
        watchdog.received(request)


@signals.worker_shutdown.connect
def _stop_watchdog(sender=None, **kwargs):
    for watchdog in _watchdogs.values():
        watchdog.stop()


app = create_celery(settings_from_env())
