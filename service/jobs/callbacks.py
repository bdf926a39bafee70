"""The webhook fields of a job request: ``callback_url`` and ``callback_secret``.

They are taken out of the request before its schema is applied and checked
here (422 naming the field): an ``http(s)`` URL without credentials whose
host resolves, here and now, only to addresses that may be called (no
loopback, private, link-local or reserved address in any IPv4 or IPv6
spelling, no local name, nothing outside ``SCA_WEBHOOK_ALLOW`` when that is
set; each delivery resolves and checks it again, see
:mod:`sca_worker.webhooks.addresses`), and a secret of 16 to 256 characters, required
unless the service has ``SCA_WEBHOOK_SECRET``.  The secret is kept in the job
record for the workers and never shown.
"""

from __future__ import annotations

from flask import current_app

from sca_worker.webhooks import Allow, Refused, target

from ..errors import invalid

FIELDS = ("callback_url", "callback_secret")
SECRET_LENGTH = (16, 256)


def take(body: dict) -> dict | None:
    """Remove the callback fields from ``body``; the job's ``callback`` (None without one)."""
    url, secret = (body.pop(name, None) for name in FIELDS)
    if url is None:
        if secret is not None:
            raise invalid("callback_secret", "callback_secret is only allowed with callback_url")
        return None
    config = current_app.config
    try:
        target(url, Allow.parse(config.get("SCA_WEBHOOK_ALLOW")))
    except Refused as exc:
        raise invalid("callback_url", f"callback_url {exc}") from None
    if secret is None:
        if not config.get("SCA_WEBHOOK_SECRET"):
            raise invalid(
                "callback_secret",
                "a callback_url needs a callback_secret (16 to 256 "
                "characters): the service has no "
                "SCA_WEBHOOK_SECRET",
            )
    elif not isinstance(secret, str) or not (SECRET_LENGTH[0] <= len(secret) <= SECRET_LENGTH[1]):
        raise invalid("callback_secret", "callback_secret must be a string of 16 to 256 characters")
    return {"url": url, "secret": secret}


def public(record: dict) -> dict | None:
    """The job document's ``callback`` member: where and how delivery went (no secret)."""
    callback = record.get("callback")
    if not callback:
        return None
    return {
        "url": callback["url"],
        "state": record.get("callback_state") or "pending",
        "attempts": int(record.get("callback_attempts") or 0),
        "error": record.get("callback_error"),
    }
