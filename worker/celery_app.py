"""The Celery application: JSON only, late acknowledgement, limits from settings.

``create_celery(settings)`` builds an app from a settings mapping (see
:mod:`worker.config`); the module-level :data:`app` is the one
``celery -A worker worker`` runs.  The API builds its own client app from
its Flask config with the same function and sends tasks by name only.
"""

from __future__ import annotations

from collections.abc import Mapping

from celery import Celery

from .config import DEFAULTS, settings_from_env
from .store import ArtifactStore, store_from_settings


def celery_config(settings: Mapping) -> dict:
    url = settings.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    ttl = int(settings.get("SCA_JOB_TTL", DEFAULTS["SCA_JOB_TTL"]))
    visibility = int(settings.get("SCA_VISIBILITY_TIMEOUT", DEFAULTS["SCA_VISIBILITY_TIMEOUT"]))
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
        "broker_transport_options": {"visibility_timeout": visibility},
        "result_backend_transport_options": {"visibility_timeout": visibility},
        "broker_connection_retry_on_startup": True,
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


app = create_celery(settings_from_env())
