"""The Celery task that delivers a job's webhook (see :mod:`sca_worker.webhooks`).

One attempt per run; a failed attempt is retried with exponential backoff
(``SCA_WEBHOOK_BACKOFF`` seconds, doubled each time, at most
``SCA_WEBHOOK_RETRIES`` retries).  The retry is a new message with a
countdown, so no worker process waits for a receiver that is down; an
unreachable Redis is ridden out like the stages do.
"""

from __future__ import annotations

from . import webhooks
from .celery_app import app, get_store
from .problems import TRANSIENT


@app.task(name="sca.webhook", bind=True, ignore_result=True)
def webhook(self, job_id: str, status: str) -> None:
    settings = self.app.sca_settings
    try:
        delivered = webhooks.attempt(
            get_store(self.app), job_id, status, self.request.retries + 1, settings
        )
    except TRANSIENT as exc:  # Redis restarting: the same attempt again shortly
        raise self.retry(exc=exc, countdown=2, max_retries=60) from None
    if delivered is False:
        raise self.retry(
            countdown=webhooks.backoff(self.request.retries, settings), max_retries=None
        )
