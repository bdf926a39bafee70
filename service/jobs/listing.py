"""``GET /v1/jobs``: the caller's jobs, newest first, in pages (as Stripe's list API).

Every job is entered, when submitted, in its API key's index (a sorted set
``jobs:<owner>`` scored by the time the API accepted it; the embedded
default keeps the same index in memory).  A page is read after the job named
by ``starting_after``: its rank and the page are read in one atomic step, and
a new job always enters above every existing one, so jobs submitted while a
caller pages through never shift, repeat or hide a job on a later page.

A deleted job leaves the index in the same step as it enters a second
sorted set of deleted jobs at the same score (:func:`untrack`), so a page
never reads past deleted jobs one by one, and a page after a deleted job is
still found from its place.  (Deleted entries used to stay in the index as
markers, skipped one by one: a page of one job under 4,000 deleted ones took
over a second.)  Entries of jobs expired stay and are skipped; both sets drop
entries older than twice ``SCA_JOB_TTL``, past which no job record can remain.
"""

from __future__ import annotations

import time

from flask import current_app
from marshmallow import fields, validate

from sca_worker.store import keys

from ..auth import current_owner
from ..backend import backend
from ..errors import invalid
from .schemas import BaseSchema

DEFAULT_LIMIT, MAX_LIMIT = 10, 100
#: Index entries read per step beyond those a page needs (skipping deleted jobs).
SLACK = 10


class ListQuerySchema(BaseSchema):
    limit = fields.Integer(
        load_default=DEFAULT_LIMIT, validate=validate.Range(min=1, max=MAX_LIMIT)
    )
    starting_after = fields.String(load_default=None, validate=validate.Length(min=1))


def track(store, owner: str | None, job_id: str) -> None:
    """Enter a new job in its owner's index (before its record exists: a
    listed id without a record is skipped, a record never goes unlisted)."""
    stamp, keep = time.time(), 2 * current_app.config["SCA_JOB_TTL"]
    store.index_add(keys.owner_jobs(owner), job_id, stamp, ttl=keep, drop_below=stamp - keep)


def untrack(store, owner: str | None, job_id: str) -> None:
    """Move a deleted job from its owner's index to the owner's deleted jobs
    (after its record is deleted: a listed id without a record is skipped)."""
    keep = 2 * current_app.config["SCA_JOB_TTL"]
    store.index_remove(
        keys.owner_jobs(owner),
        keys.deleted_jobs(owner),
        job_id,
        ttl=keep,
        drop_below=time.time() - keep,
    )


def page(query: dict, summary) -> dict:
    """One page of the caller's jobs (``summary(record)`` of each), Stripe's shape:
    ``{object, url, data, has_more, next_cursor}``."""
    store = backend().store
    owner = current_owner()
    limit, after = query["limit"], query["starting_after"]
    records: list[dict] = []
    while len(records) <= limit:
        members = store.index_page(
            keys.owner_jobs(owner),
            after,
            limit + 1 - len(records) + SLACK,
            removed=keys.deleted_jobs(owner),
        )
        if members is None:
            if after == query["starting_after"]:
                raise invalid(
                    "starting_after",
                    f"no job {after!r} of this API key (deleted "
                    f"long ago or never made); list from the start",
                )
            break  # the entry paged after was dropped meanwhile: nothing older is left
        for job_id in members:
            record = store.get_job(job_id)
            if record is not None and record.get("owner") == owner:
                records.append(record)
            if len(records) > limit:
                break
        if not members or len(records) > limit:
            break
        after = members[-1]
    has_more = len(records) > limit
    data = [summary(record) for record in records[:limit]]
    return {
        "object": "list",
        "url": "/v1/jobs",
        "data": data,
        "has_more": has_more,
        "next_cursor": data[-1]["id"] if has_more else None,
    }
