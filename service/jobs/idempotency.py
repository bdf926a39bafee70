"""``Idempotency-Key`` on ``POST /v1/jobs``
(IETF httpapi, draft-ietf-httpapi-idempotency-key-header).

A caller that may send a submission twice (a timeout, a retry after a lost
answer) names it with a key of its choosing.  Keys are scoped per API key
(the request's owner) and kept ``SCA_IDEMPOTENCY_TTL`` seconds:

* the first request with a key claims it with a *pending* marker, set only
  when absent (Redis ``SET NX``, on the Redis server or, in the embedded
  default, in process), so of two requests arriving together in any API processes
  exactly one goes on;
* once accepted, the marker is replaced (compare-and-set on the marker, so a
  claim that lapsed is never overwritten) by the answer: status, body and
  ``Location``/``Retry-After``, replayed byte for byte to any later request
  with the same key and body, with ``Idempotent-Replayed: true``;
* a request with the key while the first is still being accepted: 409 with
  ``Retry-After``; the same key with another body: 422; both problem+json
  naming ``Idempotency-Key``;
* the claim names the job the first request makes (its id is chosen before
  the claim): once a watchdog has taken that job over (it had no sign of life
  for the heartbeat timeout: the first request's API process died after
  creating it), a request with the key is answered with that job (202, as a
  replay) and the answer is stored for the next ones.  An API process that
  dies after creating the job's record and before enqueueing it so blocks
  its key for no longer than the heartbeat bound (``SCA_HEARTBEAT_TIMEOUT``
  plus an interval), not :data:`PENDING_SECONDS`;
* a first request that ends in an error (invalid input, over a limit, Redis
  away) stores nothing and frees the key: the error is not replayed, so a
  retry after a 429 or 503 is judged afresh.

The body is compared by a fingerprint: the SHA-256 of the raw body, or for
``multipart/form-data`` of the parts (names, file names, contents), whose
boundary changes from one send to the next.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import uuid

from flask import Response, current_app, request

from sca_worker.jobs import new_job_id
from sca_worker.problems import PROBLEM_BASE
from sca_worker.store import keys

from ..auth import current_owner
from ..backend import backend
from ..errors import ProblemError

log = logging.getLogger(__name__)

HEADER = "Idempotency-Key"
#: Longest key accepted (characters).
MAX_LENGTH = 255
#: Longest a claim stays pending: past it, a request that died while being
#: accepted, before its job's record existed, no longer blocks its key (a live
#: one finishes well within it).
PENDING_SECONDS = 300
#: Headers of the first answer that a replay repeats.
REPLAYED_HEADERS = ("Location", "Retry-After")


def _key_from_header() -> str | None:
    """The request's key (an sf-string ``"..."`` or a bare token); 400 when malformed."""
    raw = request.headers.get(HEADER)
    if raw is None:
        return None
    key = raw.strip()
    if len(key) >= 2 and key[0] == key[-1] == '"':
        key = key[1:-1]
    if not key or len(key) > MAX_LENGTH or not key.isprintable() or not key.isascii():
        message = f"{HEADER} must be 1 to {MAX_LENGTH} printable ASCII characters"
        raise ProblemError(400, "Bad Request", message, errors={HEADER: [message]})
    return key


def fingerprint() -> str:
    """SHA-256 of what the request sends (see the module docstring)."""
    h = hashlib.sha256(request.mimetype.encode() + b"\x00")
    if request.mimetype != "multipart/form-data":
        h.update(request.get_data(cache=True))
        return h.hexdigest()
    # A part may lack a name (None): order by text.
    for name, value in sorted(request.form.items(multi=True), key=lambda item: str(item)):
        h.update(json.dumps(["form", name, value]).encode() + b"\x00")
    for name, upload in sorted(request.files.items(multi=True), key=lambda item: str(item[0])):
        h.update(json.dumps(["file", name, upload.filename]).encode() + b"\x00")
        for block in iter(functools.partial(upload.stream.read, 1 << 20), b""):
            h.update(block)
        upload.stream.seek(0)
        h.update(b"\x00")
    return h.hexdigest()


def _name(key: str) -> str:
    owner = current_owner() or "anonymous"
    return keys.idempotency(owner, hashlib.sha256(key.encode()).hexdigest())


def _conflict(key: str) -> ProblemError:
    message = "a request with this key is still being accepted; retry after Retry-After"
    return ProblemError(
        409,
        "Conflict",
        f"{HEADER} {key!r}: {message}",
        type=PROBLEM_BASE + "idempotency-key-in-use",
        errors={HEADER: [message]},
        headers={"Retry-After": "1"},
    )


def _mismatch(key: str) -> ProblemError:
    message = "this key was already used with another body"
    return ProblemError(
        422,
        "Invalid input",
        f"{HEADER} {key!r}: {message}",
        type=PROBLEM_BASE + "idempotency-key-reused",
        errors={HEADER: [message]},
    )


def _replay(stored: dict) -> Response:
    response = current_app.response_class(
        stored["body"], status=stored["status"], mimetype="application/json"
    )
    response.headers.update(stored["headers"])
    response.headers["Idempotent-Replayed"] = "true"
    return response


def _release(store, name: str, pending: bytes) -> None:
    """Free a key whose first request failed (its claim then lapses by itself if
    Redis refuses even this)."""
    try:
        store.delete_if(name, pending)
    except Exception as exc:
        log.warning("%s: the claim could not be freed (%s)", HEADER, type(exc).__name__)


def _answer(digest: str, response: Response) -> dict:
    return {
        "state": "done",
        "fingerprint": digest,
        "status": response.status_code,
        "body": response.get_data(as_text=True),
        "headers": {h: response.headers[h] for h in REPLAYED_HEADERS if h in response.headers},
    }


def _adopted(store, name: str, raw: bytes, stored: dict, adopt, ttl: int) -> Response | None:
    """The answer to a pending claim whose job a watchdog took over (see the
    module docstring), stored in place of the claim; None while the claim pends."""
    job_id = stored.get("job")
    response = adopt(job_id) if job_id else None
    if response is None:
        return None
    answer = _answer(stored["fingerprint"], response)
    try:
        store.set_if(name, json.dumps(answer).encode(), ttl, expected=raw)
    except Exception as exc:  # answered anyway: the next request decides again
        log.warning("%s: the answer could not be stored (%s)", HEADER, type(exc).__name__)
    return _replay(answer)


def idempotent(handle, adopt):
    """Answer the request by ``handle(job_id)`` (a Response), at most once per key
    and body; ``adopt(job_id)`` answers for a job whose first request no process
    finishes any more (None while it may still be accepted)."""
    job_id = new_job_id()
    key = _key_from_header()
    if key is None:
        return handle(job_id)
    store, name, ttl = backend().store, _name(key), current_app.config["SCA_IDEMPOTENCY_TTL"]
    digest = fingerprint()
    pending = json.dumps(
        {"state": "pending", "fingerprint": digest, "token": uuid.uuid4().hex, "job": job_id}
    ).encode()
    for _ in range(3):  # a key that expires between the claim and the read: claim again
        if store.set_if(name, pending, min(PENDING_SECONDS, ttl)):
            break
        raw = store.get_value(name)
        if raw is None:
            continue
        stored = json.loads(raw)
        if stored["fingerprint"] != digest:
            raise _mismatch(key)
        if stored["state"] == "pending":
            adopted = _adopted(store, name, raw, stored, adopt, ttl)
            if adopted is None:
                raise _conflict(key)
            return adopted
        return _replay(stored)
    else:  # pragma: no cover - the key appeared and vanished three times in a row
        raise _conflict(key)
    try:
        response = handle(job_id)
    except BaseException:
        _release(store, name, pending)
        raise
    if not 200 <= response.status_code < 300:
        _release(store, name, pending)
        return response
    try:
        stored = store.set_if(
            name, json.dumps(_answer(digest, response)).encode(), ttl, expected=pending
        )
    except Exception as exc:  # the job exists: answer it; a retry meets the pending claim
        log.warning("%s: the answer could not be stored (%s)", HEADER, type(exc).__name__)
        return response
    if not stored:
        log.warning("%s: the claim lapsed or was answered for its job meanwhile", HEADER)
    return response
