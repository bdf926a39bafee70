"""Progress events of a job, kept per job for ``GET /v1/jobs/{id}/events``.

The workers (and the API, at submission and cancellation) append an event
whenever a job moves: ``queued``; ``stage`` when a stage starts and when it
finishes; ``progress`` as ensemble runs finish; and one terminal event,
``succeeded``, ``failed`` or ``cancelled``.  Every event's data is a small
snapshot of the job (``status``, ``stage``, ``progress``, ``ensemble``,
``timings``, ``cached``, ``error``) plus what is particular to it, so a reader
that missed some events is still up to date with the next one.

The events of a job are a Redis stream ``job:<id>:events`` (``XADD ...
MAXLEN ~ 1000``, expiring with the job: see
:meth:`sca_worker.store.Store.append_event`), and an event's id is its stream
id (``<milliseconds>-<sequence>``); a reader resumes after any id it saw
(``XREAD``).  Events are a view of the job, not its state:
writing one never fails a stage (a full or unreachable Redis only costs the
event), and a reader that finds the job finished without its terminal event
is told so from the job record.

:func:`finished` is called once per job, by whoever moved it to a terminal
status (the ``expect=ACTIVE`` update that succeeded): it appends the terminal
event and hands the job's webhook, if any, to the store's dispatcher (see
:mod:`sca_worker.webhooks`).
"""

from __future__ import annotations

import json
import logging
import re

from . import webhooks
from .jobs import now, progress, timings
from .store import Store

log = logging.getLogger(__name__)

TERMINAL = ("succeeded", "failed", "cancelled")
#: The form of an event id (``Last-Event-ID``).
EVENT_ID = re.compile(r"^[0-9]{1,20}-[0-9]{1,20}$")
#: Ensemble progress is reported in steps of this fraction of the runs.
PROGRESS_STEPS = 20


def snapshot(record: dict, finished_stage: str | None = None) -> dict:
    """What a reader needs to show the job's progress (``GET /v1/jobs/{id}``'s fields)."""
    out = {
        "id": record["id"],
        "status": record["status"],
        "stage": record.get("stage"),
        "progress": progress(record),
        "timings": timings(record),
        "cached": bool(record.get("cached")),
    }
    stages = record.get("stages") or []
    if finished_stage in stages and record["status"] != "succeeded":
        out["progress"] = round((stages.index(finished_stage) + 1) / len(stages), 4)
    if record.get("runs_total"):
        out["ensemble"] = {
            "done": min(int(record.get("runs_done", 0)), int(record["runs_total"])),
            "total": int(record["runs_total"]),
        }
    if record["status"] == "failed" and record.get("error"):
        out["error"] = record["error"]
    return out


def data(event: str, record: dict, finished_stage: str | None = None, **fields) -> str:
    """An event's data (JSON): the job's :func:`snapshot`, what is particular to the
    event, and the time."""
    payload = {"event": event, **snapshot(record, finished_stage), **fields, "at": now()}
    return json.dumps(payload, separators=(",", ":"))


def emit(
    store: Store,
    job_id: str,
    event: str,
    record: dict | None = None,
    finished_stage: str | None = None,
    **fields,
) -> str | None:
    """Append an event to the job's log; its id (None when the job is gone or the
    store refused the write, which is logged and otherwise ignored)."""
    try:
        record = record if record is not None else store.get_job(job_id)
        if record is None:
            return None
        return store.append_event(job_id, event, data(event, record, finished_stage, **fields))
    except Exception as exc:  # an event is never worth failing a stage for
        log.warning("job %s: event %s not recorded: %s", job_id, event, type(exc).__name__)
        return None


def read(store: Store, job_id: str, after: str | None = None, wait: float = 0.0) -> list[tuple]:
    """The job's events after the id ``after`` (all of them when None), oldest
    first, as ``(id, event, data)``; waits up to ``wait`` seconds for one."""
    return store.read_events(job_id, after, wait)


# -- the points where a job moves ----------------------------------------------------------
def stage_done(store: Store, job_id: str, stage: str, record: dict | None = None) -> None:
    """A stage function returned: a finished stage, or (ensemble runs) progress;
    ``record`` is the job as the stage left it (read here when not given)."""
    try:
        _stage_done(store, job_id, stage, record)
    except Exception as exc:  # noqa: BLE001 - the stage itself went well
        log.warning("job %s: stage event not recorded: %s", job_id, type(exc).__name__)


def public_stage(stage: str) -> str:
    """The stage a client sees: the ensemble's runs together and their collection
    are the ensemble."""
    return "ensemble" if stage in ("ensemble_runs", "ensemble_collect") else stage


def finished_fields(stage: str, record: dict) -> dict:
    """The fields of ``stage``'s "finished" event, from the job's record after it."""
    public = public_stage(stage)
    return {
        "finished_stage": public,
        "stage": public,
        "state": "finished",
        "seconds": timings(record).get(public),
    }


def _stage_done(store: Store, job_id: str, stage: str, record: dict | None) -> None:
    if stage == "ensemble_runs":  # its progress went out as the runs finished
        return
    record = record if record is not None else store.get_job(job_id)
    if stage == "ensemble":
        _progress(store, job_id, record, 1)
        return
    if record is not None:
        emit(store, job_id, "stage", record, **finished_fields(stage, record))


def runs_done(store: Store, job_id: str, amount: int = 1) -> dict | None:
    """Count ``amount`` more of a job's ensemble runs done, with a progress event
    where the count passes one of :data:`PROGRESS_STEPS`; the job's record after
    (None when it is gone)."""
    if store.incr_job(job_id, "runs_done", amount) is None:
        return None
    record = store.get_job(job_id)
    _progress(store, job_id, record, amount)
    return record


def _progress(store: Store, job_id: str, record: dict | None, amount: int) -> None:
    """The progress event of ``amount`` runs just counted, if it passes a step."""
    if record is None or not record.get("runs_total"):
        return
    done, total = int(record.get("runs_done", 0)), int(record["runs_total"])
    if done * PROGRESS_STEPS // total != (done - amount) * PROGRESS_STEPS // total:
        emit(store, job_id, "progress", record, stage="ensemble", done=done, total=total)


def finished(
    store: Store, job_id: str, status: str, record: dict | None = None, recorded: bool = False
) -> None:
    """The job has just reached ``status`` (terminal): its last event (unless
    ``recorded``: appended with the update that ended the job) and its webhook."""
    try:
        record = record if record is not None else store.get_job(job_id)
    except Exception as exc:  # noqa: BLE001 - readers learn it from the record later
        log.warning(
            "job %s: %s, but its record is unreadable: %s", job_id, status, type(exc).__name__
        )
        return
    if record is None:
        return
    if not recorded:
        emit(store, job_id, status, record)
    webhooks.dispatch(store, record, status)
