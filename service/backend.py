"""Where the API keeps jobs and sends work: Redis + Celery, or the embedded default.

:func:`init_app` puts a :class:`Backend` in ``app.extensions["sca"]``:

* ``REDIS_URL`` set: a :class:`sca_worker.store.Store` on Redis and a
  :class:`CeleryQueue` that sends the task ``sca.start`` by name (the API
  never runs a stage itself);
* no ``REDIS_URL``: a :class:`sca_worker.store.Store` in this process and an
  :class:`sca_worker.embedded.EmbeddedRunner` thread pool in this process.

Tests may pass ``SCA_STORE`` and ``SCA_QUEUE`` objects in the config.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from flask import current_app

from sca_worker.store import Store, store_from_settings

from .config import worker_settings


class CeleryQueue:
    """Submits jobs to Celery workers by task name."""

    START_TASK = "sca.start"
    RETRY_POLICY = {
        "max_retries": 2,
        "interval_start": 0.2,
        "interval_step": 0.3,
        "interval_max": 0.5,
    }

    def __init__(self, celery):
        self.celery = celery

    def submit(self, job_id: str, task_id: str | None = None) -> str:
        """Send ``sca.start`` for the job, as the task ``task_id`` when given; its id."""
        # Fail fast (503) when Redis is away rather than hold the request.  The task
        # keeps no result (sca.start ignores it): no subscription to one either.
        result = self.celery.send_task(
            self.START_TASK,
            kwargs={"job_id": job_id},
            task_id=task_id,
            ignore_result=True,
            retry=True,
            retry_policy=self.RETRY_POLICY,
        )
        return result.id

    def revoke(self, job_id: str, task_ids=()) -> None:
        ids = [t for t in task_ids if t]
        if ids:
            self.celery.control.revoke(ids, terminate=True, signal="SIGTERM")

    def ping(self) -> bool:
        with self.celery.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1, timeout=2)
        return True


class OperatorCache:
    """A few balanced operators kept in memory for repeated queries on one job."""

    def __init__(self, size: int = 4):
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, load):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = load()
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value


class Backend:
    def __init__(self, store: Store, queue, embedded: bool, size: int):
        self.store = store
        self.queue = queue
        self.embedded = embedded
        self.operators = OperatorCache(size)


def init_app(app) -> Backend:
    config = app.config
    settings = worker_settings(config)
    store = config.get("SCA_STORE") or store_from_settings(settings)
    queue = config.get("SCA_QUEUE")
    embedded = not config.get("REDIS_URL")
    if queue is None:
        if embedded:
            from sca_worker.embedded import EmbeddedRunner

            queue = EmbeddedRunner(store, config["SCA_EMBEDDED_WORKERS"], settings)
        else:
            from sca_worker.celery_app import create_celery

            queue = CeleryQueue(create_celery(settings))
    backend = Backend(store, queue, embedded, config["SCA_QUERY_CACHE_ITEMS"])
    app.extensions["sca"] = backend
    return backend


def backend() -> Backend:
    return current_app.extensions["sca"]
