"""``sca.webhook``: a delivery sent as a task by an earlier version, queued again.

Webhooks now wait in the store's own queue and are delivered on threads
apart from the stages' pool (see :mod:`sca_worker.webhooks.deliverer`); a
message of this name still in the broker's queue after an upgrade puts its
delivery there, due now, and returns at once.
"""

from __future__ import annotations

import time

from .celery_app import app, get_store
from .problems import TRANSIENT


@app.task(name="sca.webhook", bind=True, ignore_result=True)
def webhook(self, job_id: str, status: str) -> None:
    try:
        get_store(self.app).queue_webhook(f"{job_id}:{status}", time.time())
    except TRANSIENT as exc:  # Redis restarting: the same again shortly
        raise self.retry(exc=exc, countdown=2, max_retries=60) from None
