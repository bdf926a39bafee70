"""The Celery application: JSON only, late acknowledgement, limits from settings.

``create_celery(settings)`` builds an app from a settings mapping (see
:mod:`sca_worker.config`); the module-level :data:`app` is the one
``celery -A worker worker`` runs.  The API builds its own client app from
its Flask config with the same function and sends tasks by name only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from urllib.parse import parse_qs, urlparse

from celery import Celery, signals

import sca

from .broker import TRANSPORT, RedisBackend
from .capacity import check_redis
from .config import resolve, settings_from_env
from .store import Store, keys, store_from_settings
from .webhooks import Deliverer

LOCAL_REDIS = "redis://127.0.0.1:6379/0"
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
    """Celery's configuration for resolved settings (see :func:`sca_worker.config.resolve`)."""
    url = settings["REDIS_URL"]
    timeout = settings["SCA_REDIS_TIMEOUT"]
    transport = {
        "visibility_timeout": settings["SCA_VISIBILITY_TIMEOUT"],
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
    }
    tls = ssl_options(url)
    full_wait = settings["SCA_STORE_FULL_WAIT"]
    return {
        "broker_url": url,
        # A transport and (create_celery: the app's backend_cls) a result backend
        # that ride out a full Redis (see sca_worker.broker).
        "broker_transport": TRANSPORT,
        "result_backend": url,
        # A refused write in the consumer restarts it rather than end the worker.
        "broker_channel_error_retry": True,
        "result_backend_always_retry": True,
        "result_backend_max_retries": max(10, full_wait),
        "result_backend_base_sleep_between_retries_ms": 100,
        "result_backend_max_sleep_between_retries_ms": 2000,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "result_accept_content": ["json"],
        "result_expires": settings["SCA_JOB_TTL"],
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_time_limit": settings["SCA_TASK_TIME_LIMIT"],
        "task_soft_time_limit": settings["SCA_TASK_SOFT_TIME_LIMIT"],
        "broker_transport_options": transport,
        "result_backend_transport_options": transport,
        "redis_socket_timeout": timeout,
        "redis_socket_connect_timeout": timeout,
        "broker_use_ssl": tls,
        "redis_backend_use_ssl": tls,
        "event_serializer": "json",
        "broker_connection_retry_on_startup": True,
        "broker_connection_max_retries": None,  # a worker waits for Redis to come back
        # A finished stage publishes the next one; ride out a Redis restart, or
        # a full Redis for about SCA_STORE_FULL_WAIT seconds, meanwhile.
        "task_publish_retry_policy": {
            "max_retries": max(60, full_wait // 2),
            "interval_start": 0.5,
            "interval_step": 0.5,
            "interval_max": 2,
        },
        "task_default_queue": settings["SCA_KEY_PREFIX"] + keys.queue(),
        "worker_hijack_root_logger": False,
    }


def create_celery(settings: Mapping) -> Celery:
    """A Celery app for ``settings`` (Redis on localhost when they name none); the
    store it uses is ``app.sca_store``, its heartbeat watchdog ``app.sca_watchdog``,
    its webhook deliverer ``app.sca_deliverer``."""
    settings = resolve(settings)
    settings["REDIS_URL"] = settings["REDIS_URL"] or LOCAL_REDIS
    app = Celery("sca", include=["sca_worker.tasks", "sca_worker.webhook_tasks"])
    app.backend_cls = RedisBackend  # on result_backend's URL
    app.config_from_object(celery_config(settings))
    app.sca_settings = settings
    app.sca_store = None
    app.sca_watchdog = None
    app.sca_deliverer = None
    return app


def get_store(app: Celery) -> Store:
    """The app's store, created on first use (after the worker has forked)."""
    if app.sca_store is None:
        app.sca_store = store_from_settings(app.sca_settings)
    return app.sca_store


def _watchdog(sender):
    """The watchdog of the app a signal's sender (worker or consumer) belongs to."""
    return getattr(getattr(sender, "app", None), "sca_watchdog", None)


def _warn_about_redis(store) -> None:
    """Say in the log, at start-up, what is wrong with Redis's settings."""
    log = logging.getLogger(__name__)
    try:
        report = check_redis(store)
    except Exception as exc:  # Redis away: the consumer says so on its own
        log.warning("could not read Redis's settings: %s", type(exc).__name__)
        return
    for text in report["problems"] + report["warnings"]:
        log.warning("Redis: %s", text)


@signals.worker_init.connect
def _warm(sender=None, **kwargs):
    """Each worker compiles (or loads) the kernels before its pool starts: the pool's
    processes, forked from it, take their first task warm (:func:`sca.warm`)."""
    celery = getattr(sender, "app", None)
    settings = getattr(celery, "sca_settings", None)
    if settings is not None and settings["SCA_WARM"]:
        celery.sca_warmed = sca.warm()  # logged when the worker is ready (logging is set up)


@signals.worker_ready.connect
def _start_watchdog(sender=None, **kwargs):
    """Each worker's main process checks Redis's settings, then watches the
    heartbeats of every worker's tasks and delivers webhooks on threads of its
    own (not the pool's, which runs the stages)."""
    # Here, not at the top: the API imports this module, and the heartbeat's
    # stages load scikit-learn, which only workers need.
    from .heartbeat import Watchdog

    celery = getattr(sender, "app", None)
    settings = getattr(celery, "sca_settings", None)
    if settings is None:
        return
    store = store_from_settings(settings)
    _warn_about_redis(store)
    watchdog = Watchdog(
        store,
        lambda job_id: celery.send_task("sca.start", kwargs={"job_id": job_id}),
        settings["SCA_HEARTBEAT_INTERVAL"],
        settings["SCA_HEARTBEAT_TIMEOUT"],
        settings["SCA_MAX_TAKEOVERS"],
    )
    watchdog.start()
    celery.sca_watchdog = watchdog
    log = logging.getLogger(__name__)
    if getattr(celery, "sca_warmed", None) is not None:
        log.info("kernels warmed in %.1f s", celery.sca_warmed)
    log.info("watchdog: resuming jobs whose tasks stop beating for %ss", watchdog.timeout)
    if settings["SCA_WEBHOOK_CONCURRENCY"] > 0:
        celery.sca_deliverer = Deliverer(store, settings).start()
        log.info("webhooks: delivered on %d threads", settings["SCA_WEBHOOK_CONCURRENCY"])


@signals.task_received.connect
def _beat_on_receipt(sender=None, request=None, **kwargs):
    watchdog = _watchdog(sender)
    if watchdog is not None:
        watchdog.received(request)


@signals.worker_shutdown.connect
def _stop_watchdog(sender=None, **kwargs):
    watchdog = _watchdog(sender)
    if watchdog is not None:
        watchdog.stop()
    deliverer = getattr(getattr(sender, "app", None), "sca_deliverer", None)
    if deliverer is not None:
        deliverer.stop()


try:
    app = create_celery(settings_from_env())
except ValueError as exc:  # a setting of the wrong type, or limits that contradict
    raise SystemExit(f"sca worker: {exc}") from None
