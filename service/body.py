"""Reading request bodies within their limits.

* :class:`BodyLimit` counts a body sent without ``Content-Length`` (chunked)
  as the application reads it and answers 413 the moment it passes
  ``SCA_MAX_BODY_BYTES``.  werkzeug alone stops reading such a stream at the
  limit and hands over what it read as if it were the whole body, so an
  oversized JSON body was read up to the limit and then refused as broken
  JSON (400).  The count lives in the application, at the WSGI input,
  whatever server runs it (a body with ``Content-Length`` is refused by
  werkzeug before it is read).
* A JSON body has its own limit, ``SCA_MAX_JSON_BYTES``, far below
  ``SCA_MAX_BODY_BYTES``: parsed, JSON takes about ten times its size as
  Python objects (a 210 MB body held 2.5 GB).  :func:`check_json_length`
  refuses one whose ``Content-Length`` is over it before anything is read,
  :class:`BodyLimit` counts a chunked one against it, and :func:`read_json`
  checks the length of what it is given (a JSON part of a multipart upload)
  before parsing it.  Uploads of files keep ``SCA_MAX_BODY_BYTES``.
* :func:`read_json` parses a JSON document after checking, without parsing,
  that its arrays and objects nest at most :data:`MAX_JSON_DEPTH` deep: the
  parser recurses once per level, and a few hundred kilobytes of ``[`` would
  otherwise exhaust the interpreter's recursion limit.
"""

from __future__ import annotations

import json
import re

import numpy as np
from flask import current_app, request
from werkzeug.http import parse_options_header

from .errors import ProblemError, invalid

#: Deepest nesting of arrays and objects in a JSON body (a job request needs 4).
MAX_JSON_DEPTH = 32
#: A JSON string once its escaped backslashes and quotes are removed.
_STRING = re.compile(rb'"[^"]*"')
_OTHER_THAN_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
_LEVEL = np.zeros(256, dtype=np.int8)
_LEVEL[list(b"[{")] = 1
_LEVEL[list(b"]}")] = -1
#: Brackets whose levels are summed at a time (bounds the scan's memory).
_BLOCK = 1 << 20


def body_too_large(limit: int, field: str = "body", what: str = "the body") -> ProblemError:
    message = f"{what} is larger than {limit} bytes"
    return ProblemError(413, "Content Too Large", message, errors={field: [message]})


def is_json(mimetype: str) -> bool:
    """Whether ``mimetype`` (without parameters) is JSON."""
    return mimetype == "application/json" or mimetype.endswith("+json")


def _json_too_large(limit: int, field: str = "body") -> ProblemError:
    what = "the JSON body" if field == "body" else f"the JSON part '{field}'"
    return body_too_large(limit, field, what + " (SCA_MAX_JSON_BYTES; send matrices as files)")


class _CountedInput:
    """``wsgi.input`` counted as it is read; past ``limit`` bytes, a 413.

    Readers stop at the limit (werkzeug asks for no more), so a read that
    reaches it exactly looks one byte further to tell a body of exactly
    ``limit`` bytes from a longer one.
    """

    def __init__(self, stream, limit: int, error=body_too_large):
        self.stream, self.limit, self.count, self.error = stream, limit, 0, error

    def _counted(self, data: bytes) -> bytes:
        self.count += len(data)
        if data and self.count == self.limit:
            self.count += len(self.stream.read(1))
        if self.count > self.limit:
            raise self.error(self.limit)
        return data

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            return b"".join(iter(lambda: self.read(1 << 16), b""))
        return self._counted(self.stream.read(size))

    def readline(self, size: int | None = -1) -> bytes:
        return self._counted(self.stream.readline(-1 if size is None else size))

    def __iter__(self):
        return iter(self.readline, b"")


class BodyLimit:
    """WSGI middleware: a body without ``Content-Length`` is read through
    :class:`_CountedInput` (the error surfaces in the view that reads it),
    against ``json_limit`` when it is JSON."""

    def __init__(self, app, limit: int, json_limit: int | None = None):
        self.app, self.limit, self.json_limit = app, limit, json_limit

    def __call__(self, environ, start_response):
        if not environ.get("CONTENT_LENGTH"):
            mimetype = parse_options_header(environ.get("CONTENT_TYPE", ""))[0].lower()
            if self.json_limit is not None and self.json_limit < self.limit and is_json(mimetype):
                counted = _CountedInput(environ["wsgi.input"], self.json_limit, _json_too_large)
            else:
                counted = _CountedInput(environ["wsgi.input"], self.limit)
            environ["wsgi.input"] = counted
        return self.app(environ, start_response)


def check_json_length() -> None:
    """Before any view: 413 for a JSON body whose ``Content-Length`` is over
    ``SCA_MAX_JSON_BYTES``, before a byte of it is read."""
    limit = current_app.config["SCA_MAX_JSON_BYTES"]
    length = request.content_length
    if length is not None and length > limit and is_json(request.mimetype):
        raise _json_too_large(limit)


def json_depth(raw: bytes, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep arrays and objects nest in the JSON text ``raw`` (counted up
    to a level past ``limit``), found without parsing it.

    Escaped backslashes, then escaped quotes, then strings are dropped, and
    the brackets left are summed as levels.  On valid JSON this is exact; on
    invalid JSON it may overcount past the first error, never undercount
    before it, which is what bounds the parser.
    """
    text = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = _STRING.sub(b"", text).translate(None, _OTHER_THAN_BRACKETS)
    steps = np.frombuffer(brackets, dtype=np.uint8)
    depth = deepest = 0
    for start in range(0, steps.size, _BLOCK):
        levels = depth + np.cumsum(_LEVEL[steps[start : start + _BLOCK]], dtype=np.int64)
        deepest, depth = max(deepest, int(levels.max())), int(levels[-1])
        if deepest > limit:
            break
    return deepest


def read_json(raw: bytes, field: str):
    """The JSON document ``raw`` (UTF-8, as RFC 8259 requires): 422 naming
    ``field`` when it nests deeper than :data:`MAX_JSON_DEPTH`, 413 naming it
    when it is longer than ``SCA_MAX_JSON_BYTES``, 400 when it is not JSON."""
    limit = current_app.config["SCA_MAX_JSON_BYTES"]
    if len(raw) > limit:
        raise _json_too_large(limit, field)
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise invalid(
            field, f"{field} nests arrays and objects deeper than {MAX_JSON_DEPTH} levels"
        )
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError:
        raise ProblemError(
            400,
            "Bad Request",
            "the body is not valid JSON"
            if field == "body"
            else f"the part '{field}' is not valid JSON",
            errors={field: ["not valid JSON"]},
        ) from None
