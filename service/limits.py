"""Per-key limits: requests per second and jobs queued or running (429 + ``Retry-After``),
and bytes stored (413).

* ``SCA_RATE_LIMIT`` requests per second per key on ``/v1`` (a counter per
  key and second, shared by every API process through Redis);
* ``SCA_MAX_ACTIVE_JOBS`` jobs per key that are queued or running at once
  (a set of job ids per key, pruned of finished jobs, in one round trip, when
  it looks full);
* ``SCA_MAX_KEY_BYTES`` bytes of input arrays per key (413 beyond, naming the
  input): each job's input bytes are added, when it is submitted, to its key's
  counter of that hour, and taken back when the job is cancelled or deleted
  (:func:`refund_storage`, once per job); a key's usage is the sum of its
  counters of the last ``SCA_JOB_TTL``, each expiring once every job of its
  hour has (so jobs that expire are counted no more).  Identical jobs each
  count their input, though the store keeps it once: the quota is what the
  key sent and keeps, whatever the cache shares.

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

import math
import time

from flask import current_app

from sca_worker.jobs import ACTIVE
from sca_worker.problems import PROBLEM_BASE, store_full
from sca_worker.store import Store, keys

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
    if store.prune_active(owner, ACTIVE, keep=job_id) > limit:  # the finished ones pruned
        store.remove_active(owner, job_id)
        raise ProblemError(
            429,
            "Too Many Requests",
            f"this API key already has {limit} jobs queued or running; retry when one has finished",
            errors={"jobs": [f"at most {limit} active jobs per key"]},
            headers={"Retry-After": "5"},
        )


#: Fields of a job's record: the input bytes counted against its key's quota,
#: and the hour they were counted in.
STORED_BYTES, STORED_HOUR = "stored_bytes", "stored_hour"
HOUR = 3600


def charge_storage(store: Store, field: str, arrays) -> dict:
    """Count a new job's input ``arrays`` against its key's quota (413 naming
    ``field`` beyond it); the fields its record keeps, for :func:`refund_storage`."""
    limit = current_app.config["SCA_MAX_KEY_BYTES"]
    if limit <= 0:
        return {}
    amount = int(sum(array.nbytes for array in arrays.values()))
    owner, now, ttl = _name(current_owner()), time.time(), current_app.config["SCA_JOB_TTL"]
    hour = int(now // HOUR)
    counters = [keys.usage(owner, h) for h in range(int((now - ttl) // HOUR), hour + 1)]
    expire = math.ceil((hour + 1) * HOUR + ttl - now)  # once its hour's jobs have expired
    added, used = store.charge(counters, amount, limit, expire)
    if not added:
        message = (
            f"this API key's jobs hold {used} bytes of input and may hold {limit}; this "
            f"input has {amount}: delete jobs (DELETE /v1/jobs/{{id}}) or let them expire"
        )
        raise ProblemError(
            413,
            "Storage quota exceeded",
            message,
            type=PROBLEM_BASE + "storage-quota-exceeded",
            errors={field: [message]},
        )
    return {STORED_BYTES: amount, STORED_HOUR: hour}


def uncharge_storage(store: Store, charged: dict) -> None:
    """Take back a charge (:func:`charge_storage`) that no job record holds.  A full
    Redis refuses it: the charge then lapses with its hour's counter."""
    if not charged:
        return
    counter = keys.usage(_name(current_owner()), charged[STORED_HOUR])
    try:
        store.uncharge(counter, charged[STORED_BYTES])
    except Exception as exc:
        if not store_full(exc):
            raise


def refund_storage(store: Store, record: dict) -> None:
    """Take a job's input bytes off its key's usage, once however often it is called."""
    if STORED_BYTES in record:
        counter = keys.usage(_name(record.get("owner")), record[STORED_HOUR])
        store.refund(record["id"], STORED_BYTES, counter)


def init_app(app) -> None:
    """Register the rate limit (after authentication); the counters are in the store."""
    app.before_request(_rate_limit)
