"""API keys: ``Authorization: Bearer <key>`` on every ``/v1`` route.

Keys come from ``SCA_API_KEYS`` (comma-separated) and ``SCA_API_KEYS_FILE``
(one key per line; blank lines and ``#`` comments are skipped).  A request
to ``/v1`` without a valid key is a 401 problem; ``/healthz``, ``/readyz`` and
``/openapi.yaml`` stay open, and so does a ``/v1`` view marked :func:`public`
(only the job page's static shell, which reveals nothing about any job).
Each key is an owner: its jobs are stored with ``owner`` = a digest of the
key (never the key) and are invisible (404) to other keys; their cached
artifacts are kept apart too.

The presented key is hashed and compared with every known key's digest by
:func:`hmac.compare_digest` (no early exit), so the time taken does not tell
how much of a key was right.  Keys are never logged or stored.

Without any key the embedded default runs open (anonymous owner, logged at
start-up); with ``REDIS_URL`` that needs ``SCA_ALLOW_ANONYMOUS=1``.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from pathlib import Path

from flask import g, request

from .errors import ProblemError

log = logging.getLogger(__name__)

ANONYMOUS = None


def _digest(key: str) -> bytes:
    return hashlib.sha256(b"sca-api-key\x00" + key.encode("utf-8")).digest()


def load_keys(config) -> list[str]:
    keys = [k.strip() for k in (config.get("SCA_API_KEYS") or "").split(",")]
    path = config.get("SCA_API_KEYS_FILE")
    if path:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                keys.append(line)
    return [k for k in keys if k]


class Keys:
    """The known keys, as digests only."""

    def __init__(self, keys: list[str]):
        self.digests = [_digest(k) for k in keys]

    def __bool__(self) -> bool:
        return bool(self.digests)

    def owner(self, presented: str) -> str | None:
        """The owner id of a valid key, else None (constant time in the key)."""
        candidate = _digest(presented)
        found = None
        for digest in self.digests:
            if hmac.compare_digest(candidate, digest):
                found = digest
        return None if found is None else "key-" + found.hex()[:32]


def public(view):
    """Serve ``view`` without a key (the caller is anonymous there).  Only for
    responses that depend on no job, no owner and nothing stored."""
    view.sca_public = True
    return view


def _unauthorised(message: str) -> ProblemError:
    return ProblemError(
        401,
        "Unauthorized",
        message,
        errors={"Authorization": [message]},
        headers={"WWW-Authenticate": 'Bearer realm="sca"'},
    )


def is_api_path() -> bool:
    """Whether the request is for the ``/v1`` API (keys and rate limits apply)."""
    return request.path == "/v1" or request.path.startswith("/v1/")


def _authenticate():
    if not is_api_path():
        return None
    keys = _keys()
    if not keys or is_public_view():
        g.sca_owner = ANONYMOUS
        return None
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorised("send Authorization: Bearer <API key>")
    owner = keys.owner(token.strip())
    if owner is None:
        raise _unauthorised("the API key is not valid")
    g.sca_owner = owner
    return None


def _keys() -> Keys:
    from flask import current_app

    return current_app.extensions["sca_keys"]


def is_public_view() -> bool:
    from flask import current_app

    view = current_app.view_functions.get(request.endpoint) if request.endpoint else None
    return getattr(view, "sca_public", False) is True


def current_owner() -> str | None:
    """The owner of the current request (None when the service runs without keys)."""
    return g.get("sca_owner", ANONYMOUS)


def init_app(app) -> Keys:
    keys = Keys(load_keys(app.config))
    app.extensions["sca_keys"] = keys
    if not keys:
        if app.config.get("REDIS_URL") and not app.config.get("SCA_ALLOW_ANONYMOUS"):
            raise RuntimeError(
                "REDIS_URL is set but no API keys are: set SCA_API_KEYS or "
                "SCA_API_KEYS_FILE (or SCA_ALLOW_ANONYMOUS=1 to run open)"
            )
        log.warning(
            "no API keys configured: /v1 is open to anyone who can reach this "
            "service and every caller sees every job"
        )
    else:
        log.info("API keys required on /v1 (%d key(s) loaded)", len(keys.digests))
    app.before_request(_authenticate)
    return keys
