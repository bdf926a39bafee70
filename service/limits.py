"""Per-key limits: requests per second and jobs queued or running (429 + ``Retry-After``).

* ``SCA_RATE_LIMIT`` requests per second per key on ``/v1`` (a counter per
  key and second, shared by every API process through Redis);
* ``SCA_MAX_ACTIVE_JOBS`` jobs per key that are queued or running at once
  (a set of job ids per key, pruned of finished jobs when it looks full).

``0`` turns a limit off.  Without keys every caller shares one anonymous quota.
Views marked :func:`sca_service.auth.public` (the job page's static shell) are no
API call: they count against no limit and so never need Redis.  Every other
request counts before its view runs, whatever it asks: a conditional poll
answered ``304 Not Modified`` costs a record read and an ETag, and
``If-None-Match: *`` matches every job, so a 304 that did not count would be
an unlimited read.
While Redis is full (it refuses the counter's write) requests are not
counted: reads go on, and the routes that write answer 503 ``store-full``.
"""

from __future__ import annotations

import time

from flask import current_app

from sca_worker.jobs import ACTIVE
from sca_worker.problems import store_full
from sca_worker.store import Store

from .auth import current_owner, is_api_path, is_public_view
from .backend import backend
from .errors import ProblemError


def _hit(owner: str, second: int) -> int:
    """The requests of ``owner`` in ``second`` so far (0 when Redis is full)."""
    try:
        return backend().store.count_request(owner, second)
    except Exception as exc:
        if not store_full(exc):
            raise
        return 0


def _name(owner) -> str:
    return owner or "anonymous"


def _rate_limit():
    if not is_api_path() or is_public_view():
        return None
    return count_request()


def count_request():
    """Count the request against its key's rate (429 with ``Retry-After`` beyond)."""
    limit = current_app.config["SCA_RATE_LIMIT"]
    if limit <= 0:
        return None
    now = time.time()
    if _hit(_name(current_owner()), int(now)) > limit:
        raise ProblemError(
            429,
            "Too Many Requests",
            f"more than {limit} requests per second for this API key",
            errors={"Authorization": ["request rate over the limit"]},
            headers={"Retry-After": "1"},
        )
    return None


def reserve_job(store: Store, job_id: str) -> None:
    """Count a new job against its key's limit of active jobs (429 when full)."""
    limit = current_app.config["SCA_MAX_ACTIVE_JOBS"]
    if limit <= 0:
        return
    owner = _name(current_owner())
    if store.add_active(owner, job_id) <= limit:
        return
    for other in store.active_jobs(owner) - {job_id}:  # prune the finished ones
        record = store.get_job(other)
        if record is None or record.get("status") not in ACTIVE:
            store.remove_active(owner, other)
    if len(store.active_jobs(owner)) > limit:
        store.remove_active(owner, job_id)
        raise ProblemError(
            429,
            "Too Many Requests",
            f"this API key already has {limit} jobs queued or running; retry when one has finished",
            errors={"jobs": [f"at most {limit} active jobs per key"]},
            headers={"Retry-After": "5"},
        )


def init_app(app) -> None:
    """Register the rate limit (after authentication); the counters are in the store."""
    app.before_request(_rate_limit)
