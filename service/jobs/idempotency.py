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
#: accepted no longer blocks its key (a live one finishes well within it).
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


def idempotent(handle):
    """Answer the request by ``handle()`` (a Response), at most once per key and body."""
    key = _key_from_header()
    if key is None:
        return handle()
    store, name, ttl = backend().store, _name(key), current_app.config["SCA_IDEMPOTENCY_TTL"]
    digest = fingerprint()
    pending = json.dumps(
        {"state": "pending", "fingerprint": digest, "token": uuid.uuid4().hex}
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
            raise _conflict(key)
        return _replay(stored)
    else:  # pragma: no cover - the key appeared and vanished three times in a row
        raise _conflict(key)
    try:
        response = handle()
    except BaseException:
        _release(store, name, pending)
        raise
    if not 200 <= response.status_code < 300:
        _release(store, name, pending)
        return response
    answer = {
        "state": "done",
        "fingerprint": digest,
        "status": response.status_code,
        "body": response.get_data(as_text=True),
        "headers": {h: response.headers[h] for h in REPLAYED_HEADERS if h in response.headers},
    }
    try:
        stored = store.set_if(name, json.dumps(answer).encode(), ttl, expected=pending)
    except Exception as exc:  # the job exists: answer it; a retry meets the pending claim
        log.warning("%s: the answer could not be stored (%s)", HEADER, type(exc).__name__)
        return response
    if not stored:
        log.warning("%s: the claim lapsed before the answer was stored", HEADER)
    return response
