"""Polling a job cheaply: ``Retry-After`` while it runs, ``ETag`` and ``304``.

``Retry-After`` (seconds) on the 202 of a submission and on every answer
about a job still queued or running says when a new poll is worth it: 1 s
while queued (waiting for a worker; 0 on the 202 of a job answered from the
cache, which can be read at once), then about a quarter of the time the
job has run so far (polls thin out as a long job goes on), at least 1 s
(2 s in the ensemble stage), at most 10 s, and no later than the ensemble's
remaining runs are expected to take at their pace so far.

The ``ETag`` of ``GET /v1/jobs/{id}`` is a digest of everything the job
document shows: the document without its result (status, stage, progress,
times, timings, cache flag, error ...), and for a succeeded job its result's
content key and whether the result is still stored (an expired result turns
the document into a failure).  It changes whenever the document does; an
``If-None-Match`` naming it is answered ``304`` without reading the result,
and a 304 counts against the request rate as any request (see :mod:`..limits`).
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime, timezone

from flask import Response, current_app, request

from sca_worker.jobs import ACTIVE
from sca_worker.store.keys import artifact_keys

#: Seconds to wait between polls: while queued, and the bounds while running.
QUEUED_SECONDS = 1
STAGE_SECONDS = {"ensemble": 2}
MIN_SECONDS, MAX_SECONDS = 1, 10


def _age(stamp: str) -> float:
    """Seconds since an ISO timestamp of :func:`sca_worker.jobs.now`."""
    then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return max(0.0, (datetime.now(timezone.utc) - then).total_seconds())


def retry_after(record: dict) -> int | None:
    """Seconds before the next poll is worth it; None for a finished job."""
    if record["status"] not in ACTIVE:
        return None
    if record["status"] == "queued":
        return QUEUED_SECONDS
    elapsed = _age(record["created"])
    seconds = elapsed / 4
    done, total = int(record.get("runs_done") or 0), int(record.get("runs_total") or 0)
    if record.get("stage") == "ensemble" and 0 < done < total:
        seconds = min(seconds, elapsed * (total - done) / done)
    floor = STAGE_SECONDS.get(record.get("stage") or "", MIN_SECONDS)
    return int(min(MAX_SECONDS, max(floor, math.ceil(seconds))))


def after_submission(status: str) -> int:
    """``Retry-After`` of a 202: a queued job, or one already finished (0)."""
    return QUEUED_SECONDS if status in ACTIVE else 0


def etag(store, record: dict, summary: dict) -> str:
    """The entity tag of the job's document (quoted, strong): a digest of
    ``summary`` (the document without its result) and, for a succeeded job, its
    result's content key and whether the result is still stored."""
    visible = dict(summary)
    if record["status"] == "succeeded":
        key = artifact_keys(record)["result"]
        visible["result"] = [key, store.has(key)]
    text = json.dumps(visible, sort_keys=True, separators=(",", ":"), default=str)
    return '"' + hashlib.sha256(text.encode()).hexdigest()[:32] + '"'


def not_modified(tag: str) -> bool:
    """Whether the request's ``If-None-Match`` names ``tag`` (weak comparison, or ``*``)."""
    return request.if_none_match.contains_weak(tag.strip('"'))


def headers(record: dict, tag: str | None = None) -> dict:
    """``ETag`` (when given), ``Retry-After`` while active, and a cache policy that
    makes any cache revalidate (the document is the caller's and changes)."""
    out = {"Cache-Control": "private, no-cache"}
    if tag is not None:
        out["ETag"] = tag
    seconds = retry_after(record)
    if seconds is not None:
        out["Retry-After"] = str(seconds)
    return out


def not_modified_response(record: dict, tag: str) -> Response:
    response = current_app.response_class(status=304)
    response.headers.update(headers(record, tag))
    return response
