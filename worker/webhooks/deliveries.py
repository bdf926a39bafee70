"""What a webhook delivery sends, and what each attempt leaves behind.

A job submitted with ``callback_url`` is announced once it has succeeded,
failed or been cancelled.  The request is a JSON ``POST`` (the
:func:`summary` of the job) signed like Stripe's: the header

    SCA-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of f"{t}.{body}">

keyed with the job's ``callback_secret`` or else the service's
``SCA_WEBHOOK_SECRET``; ``SCA-Delivery`` (``<job id>:<status>``) and the
body's ``job`` are the same for every attempt (``sent``, ``t`` and the
signature change), so a receiver can drop repeats.  What a delivery needs is
kept under ``webhook:<job id>`` until it is delivered or given up, so deleting
a job right after it finished does not lose its webhook.

:func:`dispatch` (wherever a job finishes, API or worker) keeps that and puts
the delivery in the store's webhook queue; a
:class:`~sca_worker.webhooks.deliverer.Deliverer` makes the :func:`attempt`
(see :mod:`sca_worker.webhooks.client` for the request itself).
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import logging
import time
from urllib.parse import urlsplit

from ..jobs import now, timings
from ..store import ArtifactMissing, Store, keys
from .addresses import Allow, Refused
from .client import post

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "SCA-Signature"
#: Seconds between attempts: ``backoff * 2**attempt``, at most this.
MAX_BACKOFF = 600.0


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The ``SCA-Signature`` header value of ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def summary(record: dict, status: str) -> dict:
    """The job as its webhook shows it: no result (``links.self`` has it)."""
    job = {
        "id": record["id"],
        "status": status,
        "stage": record.get("stage"),
        "created": record.get("created"),
        "updated": record.get("updated"),
        "timings": timings(record),
        "cached": bool(record.get("cached")),
        "links": {"self": f"/v1/jobs/{record['id']}"},
    }
    if status == "failed" and record.get("error"):
        job["error"] = record["error"]
    return job


def prepare(store: Store, record: dict, status: str) -> None:
    """Keep what the delivery needs under ``webhook:<job id>`` (until delivered or
    given up, at most the job TTL), so that deleting the job does not drop it."""
    store.save_json(
        keys.webhook(record["id"]),
        {
            "url": record["callback"]["url"],
            "secret": record["callback"].get("secret"),
            "status": status,
            "job": summary(record, status),
            "result": keys.artifact_keys(record)["result"] if status == "succeeded" else None,
            "sender": sender(record),
        },
    )


def _with_result(store: Store, pending: dict) -> dict:
    """The job of a succeeded job's webhook with ``k`` and the cluster sizes, read
    here, on a worker, once (later attempts send the same body)."""
    job = pending["job"]
    if pending.get("result") and "k" not in job:
        try:
            result = store.load_json(pending["result"])
            job["k"] = result.get("k")
            job["sizes"] = result.get("cluster_sizes") or [  # paged, or listed
                len(members) for members in result.get("clusters", [])
            ]
        except Exception:  # noqa: BLE001 - deleted or expired meanwhile: the summary says less
            job["k"] = None
        store.save_json(keys.webhook(job["id"]), pending)
    return job


def attempt(store: Store, job_id: str, status: str, number: int, settings) -> bool | None:
    """Deliver a job's webhook once (attempt ``number``, from 1).  True: delivered;
    False: failed, try again; None: nothing (more) to deliver."""
    try:
        pending = store.load_json(keys.webhook(job_id))
    except ArtifactMissing:  # delivered, given up, or expired
        return None
    if pending["status"] != status:
        return None
    secret = pending.get("secret") or settings.get("SCA_WEBHOOK_SECRET")
    if not secret:
        _give_up(store, job_id, number, "no callback_secret and no SCA_WEBHOOK_SECRET")
        return None
    payload = {"type": f"job.{status}", "job": _with_result(store, pending), "sent": now()}
    body = json.dumps(payload, separators=(",", ":")).encode()
    headers = {
        SIGNATURE_HEADER: sign(secret, int(time.time()), body),
        "SCA-Delivery": f"{job_id}:{status}",
    }
    try:
        code = post(
            pending["url"],
            body,
            headers,
            float(settings["SCA_WEBHOOK_TIMEOUT"]),
            Allow.parse(settings.get("SCA_WEBHOOK_ALLOW")),
        )
        error = None if 200 <= code < 300 else f"HTTP {code}"
    except Refused as exc:
        error = f"refused: {exc}"
    except (OSError, http.client.HTTPException) as exc:
        error = f"{type(exc).__name__}: {exc}"[:300]
    if error is None:
        store.delete(keys.webhook(job_id))
        _note(store, job_id, "delivered", number, None)
        return True
    if number > int(settings["SCA_WEBHOOK_RETRIES"]):
        _give_up(store, job_id, number, error)
        return None
    pending["attempts"] = number
    store.save_json(keys.webhook(job_id), pending)
    _note(store, job_id, "retrying", number, error)
    log.warning("job %s: webhook attempt %d failed: %s", job_id, number, error)
    return False


def _give_up(store: Store, job_id: str, number: int, error: str) -> None:
    store.delete(keys.webhook(job_id))
    _note(store, job_id, "failed", number, error)
    log.warning("job %s: webhook given up after attempt %d: %s", job_id, number, error)
    return None


def _note(store: Store, job_id: str, state: str, number: int, error: str | None) -> None:
    try:
        store.update_job(
            job_id, {"callback_state": state, "callback_attempts": number, "callback_error": error}
        )
    except Exception as exc:  # noqa: BLE001 - a note only
        log.warning("job %s: webhook state not recorded: %s", job_id, type(exc).__name__)


def backoff(retries: int, settings) -> float:
    """Seconds before attempt ``retries + 2``."""
    return min(MAX_BACKOFF, float(settings["SCA_WEBHOOK_BACKOFF"]) * 2**retries)


def sender(record: dict) -> str:
    """Whose deliveries share a cap (see :class:`~sca_worker.webhooks.deliverer.Deliverer`):
    the job's API key, or its receiver's host for a job without one."""
    owner = record.get("owner")
    if owner:
        return f"key:{owner}"
    return f"host:{(urlsplit(record['callback']['url']).hostname or '').lower()}"


def next_attempt(store: Store, job_id: str) -> tuple[int, str] | None:
    """The number of a pending delivery's next attempt and its sender (None: nothing
    to deliver)."""
    try:
        pending = store.load_json(keys.webhook(job_id))
    except ArtifactMissing:
        return None
    return int(pending.get("attempts") or 0) + 1, str(pending.get("sender") or "")


def dispatch(store: Store, record: dict, status: str) -> None:
    """Queue a finished job's webhook, due now (any process; the deliverers send it)."""
    if not record.get("callback"):
        return
    try:
        prepare(store, record, status)
        store.queue_webhook(f"{record['id']}:{status}", time.time())
        if store.on_webhook is not None:
            store.on_webhook()
    except Exception as exc:  # noqa: BLE001 - the job is finished whatever happens here
        log.warning("job %s: webhook not queued: %s", record["id"], exc)
        _note(store, record["id"], "failed", 0, f"not queued: {type(exc).__name__}")
