"""Errors as ``application/problem+json`` (RFC 9457), from one place.

Modules raise; :func:`init_app` registers the handlers that turn every
exception into a problem document ``{type, title, status, detail, errors?}``:

* :class:`ProblemError` -- raised by our own code with any status;
* ``HTTPException`` -- routing 404/405, 400 unreadable JSON, 413 ... (headers
  such as ``Allow`` are kept);
* ``marshmallow.ValidationError`` -- 422 with ``errors`` naming each bad
  field (dotted paths, ``ensemble[0].k``);
* :class:`sca.SCAError` (422, naming its field) and
  :class:`sca_worker.store.ArtifactMissing` (410, an expired intermediate) -- the
  same problems a failed job reports (:func:`sca_worker.problems.problem_for`);
* Redis or broker unreachable -- 503; Redis full (a write refused at
  ``maxmemory``) -- 503 ``store-full``, with ``Retry-After``;
* anything else -- 500 with a generic detail; the traceback goes to the log.
"""

from __future__ import annotations

import json
import logging

from flask import Response
from kombu.exceptions import OperationalError
from marshmallow import ValidationError
from redis.exceptions import OutOfMemoryError
from werkzeug.exceptions import HTTPException

import sca
from sca.errors import field_summary
from sca_worker.problems import FULL_RETRY_AFTER, PROBLEM_BASE, TRANSIENT, problem_for, store_full
from sca_worker.store import ArtifactMissing

log = logging.getLogger(__name__)

PROBLEM_MEDIA_TYPE = "application/problem+json"
#: Redis or the broker unreachable (503).
UNAVAILABLE = (*TRANSIENT, OperationalError)


class ProblemError(Exception):
    """An HTTP error to report as problem+json.

    ``errors`` maps field names to lists of messages; other keyword arguments
    become extension members of the problem.
    """

    def __init__(
        self,
        status: int,
        title: str,
        detail: str | None = None,
        type: str = "about:blank",
        errors: dict | None = None,
        headers: dict | None = None,
        **extensions,
    ):
        super().__init__(detail or title)
        self.status = status
        self.title = title
        self.detail = detail
        self.type = type
        self.errors = errors
        self.headers = headers or {}
        self.extensions = extensions


def problem_document(
    status: int,
    title: str,
    detail: str | None = None,
    type: str = "about:blank",
    errors: dict | None = None,
    **extensions,
) -> dict:
    """The members of a problem: ``{type, title, status, detail, errors?, ...}``."""
    body = {
        "type": type,
        "title": title,
        "status": status,
        "detail": detail if detail is not None else title,
    }
    if errors:
        body["errors"] = errors
    body.update(extensions)
    return body


def problem_response(
    status: int,
    title: str,
    detail: str | None = None,
    type: str = "about:blank",
    errors: dict | None = None,
    headers=None,
    **extensions,
) -> Response:
    body = problem_document(status, title, detail, type, errors, **extensions)
    response = Response(json.dumps(body), status=status, mimetype=PROBLEM_MEDIA_TYPE)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def flatten_messages(messages, prefix: str = "") -> dict[str, list[str]]:
    """marshmallow's nested messages as ``{"options.k": [...], "ensemble[0].k": [...]}``."""
    if isinstance(messages, str):
        return {prefix or "_schema": [messages]}
    if isinstance(messages, list) and all(isinstance(m, str) for m in messages):
        return {prefix or "_schema": list(messages)}
    flat: dict[str, list[str]] = {}
    items = messages.items() if isinstance(messages, dict) else enumerate(messages)
    for key, value in items:
        if isinstance(key, int):
            path = f"{prefix}[{key}]"
        elif key == "_schema":
            path = prefix or "_schema"
        else:
            path = f"{prefix}.{key}" if prefix else str(key)
        for name, msgs in flatten_messages(value, path).items():
            flat.setdefault(name, []).extend(msgs)
    return flat


def invalid(field: str, message: str) -> ProblemError:
    """A 422 problem naming one field."""
    return ProblemError(
        422,
        "Invalid input",
        message,
        type=PROBLEM_BASE + "invalid-input",
        errors={field: [message]},
    )


def _handle_problem(exc: ProblemError):
    return problem_response(
        exc.status, exc.title, exc.detail, exc.type, exc.errors, exc.headers, **exc.extensions
    )


def _handle_http(exc: HTTPException):
    original = exc.get_response()
    headers = {
        k: v
        for k, v in original.headers.items()
        if k.lower() not in ("content-type", "content-length")
    }
    detail = exc.description or exc.name
    return problem_response(exc.code or 500, exc.name, detail, headers=headers)


def _handle_validation(exc: ValidationError):
    errors = flatten_messages(exc.messages)
    detail = field_summary(errors)
    return problem_response(422, "Invalid input", detail, PROBLEM_BASE + "invalid-input", errors)


def _handle_known(exc: Exception):
    return problem_response(**problem_for(exc))


def _handle_full(exc: Exception):
    log.warning("Redis is full: %s", exc)
    return problem_response(**problem_for(exc), headers={"Retry-After": str(FULL_RETRY_AFTER)})


def _handle_unavailable(exc: Exception):
    if store_full(exc):  # kombu's error for a publish that Redis refused
        return _handle_full(exc)
    log.warning("backend unavailable: %s", exc)
    return problem_response(
        503,
        "Service Unavailable",
        "the job store or broker is unreachable; retry later",
        headers={"Retry-After": "5"},
    )


def _handle_unexpected(exc: Exception):
    log.exception("unhandled error")
    return problem_response(
        500, "Internal Server Error", "an unexpected error occurred; it has been logged"
    )


def init_app(app) -> None:
    app.register_error_handler(ProblemError, _handle_problem)
    app.register_error_handler(HTTPException, _handle_http)
    app.register_error_handler(ValidationError, _handle_validation)
    for cls in (sca.SCAError, ArtifactMissing):
        app.register_error_handler(cls, _handle_known)
    for cls in UNAVAILABLE:
        app.register_error_handler(cls, _handle_unavailable)
    app.register_error_handler(OutOfMemoryError, _handle_full)
    app.register_error_handler(Exception, _handle_unexpected)
