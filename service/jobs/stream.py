"""``GET /v1/jobs/{id}/events``: a job's progress as Server-Sent Events.

The stream replays the job's events (:mod:`sca_worker.events`) after the
request's ``Last-Event-ID`` (all of them without one), then follows new ones
as the workers write them, and ends after the terminal event (``succeeded``,
``failed``, ``cancelled``).  A job found finished without its terminal event
(an event the store refused) gets one made from its record, without an id.

Each event is ``id: <id>``, ``event: <name>``, ``data: <JSON>``.  The stream
opens with ``retry: 2000``; a comment line (``: keep-alive``) goes out after
``SCA_EVENTS_HEARTBEAT`` seconds without an event, so proxies keep the
connection open and a departed client is noticed; after
``SCA_EVENTS_MAX_SECONDS`` the stream ends and the client reconnects with
its ``Last-Event-ID`` (``EventSource`` does so by itself).

A stream holds one of the API process's threads for as long as it is open
(waitress hands a response's chunks to the socket as they are written, but
from the request's thread), so streams are bounded twice: in time, as above,
and in number, ``SCA_MAX_EVENT_STREAMS`` per API process (503 with
``Retry-After`` beyond; clients then poll ``GET /v1/jobs/{id}``).
"""

from __future__ import annotations

import json
import logging
import threading
import time

from flask import Blueprint, Response, current_app, request

from sca_worker import events
from sca_worker.jobs import now

from ..backend import backend
from ..errors import ProblemError, invalid
from .operations import get_record

log = logging.getLogger(__name__)

bp = Blueprint("job_events", __name__, url_prefix="/v1/jobs")
RETRY_MS = 2000
#: Longest wait for an event before the job record is looked at again.
WAIT = 1.0


class Slots:
    """Streams open at once in this process, at most ``limit``."""

    def __init__(self, limit: int):
        self.limit = int(limit)
        self.open = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self.open >= self.limit:
                return False
            self.open += 1
            return True

    def give(self) -> None:
        with self._lock:
            self.open -= 1


bp.record_once(
    lambda state: state.app.extensions.setdefault(
        "sca_streams", Slots(state.app.config["SCA_MAX_EVENT_STREAMS"])
    )
)


def _last_event_id() -> str | None:
    value = request.headers.get("Last-Event-ID")
    if value is None or value == "":
        return None
    if not events.EVENT_ID.match(value):
        raise invalid(
            "Last-Event-ID", "Last-Event-ID must be an event id of this stream (<digits>-<digits>)"
        )
    return value


def _format(event_id: str | None, name: str, data: str) -> str:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {name}\ndata: {data}\n\n"


def follow(store, job_id: str, after: str | None, heartbeat: float, duration: float):
    """The text of the stream, chunk by chunk (see the module)."""
    yield f"retry: {RETRY_MS}\n\n"
    start = last = time.monotonic()
    heartbeat = max(heartbeat, 0.1)  # a zero would spin
    wait = min(WAIT, heartbeat)
    while True:
        found = events.read(store, job_id, after, wait)
        for event_id, name, data in found:
            yield _format(event_id, name, data)
            after, last = event_id, time.monotonic()
            if name in events.TERMINAL:
                return
        if not found:
            record = store.get_job(job_id)
            if record is None:
                return  # deleted: a reconnection is answered 404
            if record["status"] in events.TERMINAL:
                late = events.read(store, job_id, after)
                for event_id, name, data in late:
                    yield _format(event_id, name, data)
                    if name in events.TERMINAL:
                        return
                data = {"event": record["status"], **events.snapshot(record), "at": now()}
                yield _format(None, record["status"], json.dumps(data, separators=(",", ":")))
                return
        moment = time.monotonic()
        if moment - start >= duration:
            return
        if moment - last >= heartbeat:
            yield ": keep-alive\n\n"
            last = moment


class Stream:
    """The response body: gives the slot back when the server closes it, whether
    or not the body was ever read, and ends quietly if the store goes away."""

    def __init__(self, chunks, slots: Slots, job_id: str):
        self.chunks, self.slots, self.job_id = chunks, slots, job_id
        self.closed = False

    def __iter__(self):
        try:
            for chunk in self.chunks:
                yield chunk.encode()
        except Exception as exc:  # noqa: BLE001 - the store went away: the client reconnects
            log.warning("job %s: event stream ended: %s", self.job_id, type(exc).__name__)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.chunks.close()
            self.slots.give()


@bp.get("/<job_id>/events")
def job_events(job_id: str):
    get_record(job_id)  # 404 for an unknown job or another key's
    after = _last_event_id()
    slots = current_app.extensions["sca_streams"]
    if not slots.take():
        raise ProblemError(
            503,
            "Service Unavailable",
            f"this API process already serves {slots.limit} event streams; "
            f"poll GET /v1/jobs/{job_id} or retry later",
            errors={"events": ["too many event streams"]},
            headers={"Retry-After": "5"},
        )
    config = current_app.config
    chunks = follow(
        backend().store,
        job_id,
        after,
        float(config["SCA_EVENTS_HEARTBEAT"]),
        float(config["SCA_EVENTS_MAX_SECONDS"]),
    )
    response = Response(Stream(chunks, slots, job_id), mimetype="text/event-stream")
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Accel-Buffering"] = "no"  # nginx: pass each event on at once
    return response
