"""Which hosts the service answers for, and which pages may post to it.

* **Host allow-list** (``SCA_ALLOWED_HOSTS``).  A service that runs open (no
  API keys: the embedded default) trusts whoever reaches it, so it must only
  be reached as itself: a web page whose name is made to resolve to
  127.0.0.1 (DNS rebinding) is same-origin with the service in the browser
  and could read every job, but its requests carry its own name in ``Host``.
  Such a request is answered 400 naming ``Host``.  Unset, the list is the
  loopback names (``localhost``, ``127.0.0.1``, ``::1``) while the service
  runs without keys, and any host with keys (a page cannot present a key it
  does not have); ``*`` allows any host.  ``/healthz`` and ``/readyz`` answer
  any host (probes name the address they reach, and they tell nothing).
* **No cross-site writes.**  A form posted by another site is sent without a
  preflight, with whatever the browser holds for this service.  A POST,
  PUT, PATCH or DELETE that a browser marks as coming from another site
  (``Sec-Fetch-Site`` other than ``same-origin`` or ``none``, or, from a
  browser that does not send it, an ``Origin`` whose host is not the
  request's) is answered 403 naming ``Origin``.  Clients other than browsers
  send neither header and are not concerned; the job page's own requests
  are same-origin.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import current_app, request

from .auth import load_keys
from .errors import ProblemError

#: The host names of the loopback interface (the default of an open service).
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
#: Paths any host may ask for (health probes).
ANY_HOST_PATHS = ("/healthz", "/readyz")
#: Methods that change something (a browser sends some of them cross-site unasked).
UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: ``Sec-Fetch-Site`` values of a request the page itself made (or the user typed).
SAME_SITE = frozenset({"same-origin", "none"})


def allowed_hosts(setting, open_service: bool) -> frozenset[str] | None:
    """The host names ``SCA_ALLOWED_HOSTS`` = ``setting`` allows (lower case,
    IPv6 without brackets) for a service that runs open or with keys; None for
    any host."""
    if setting is None or not str(setting).strip():
        return frozenset(LOOPBACK_NAMES) if open_service else None
    names = {name.strip().lower().strip("[]") for name in str(setting).split(",")}
    names.discard("")
    return None if "*" in names else frozenset(names)


def _hostname(netloc: str) -> str | None:
    """The host name of ``host[:port]`` (lower case, IPv6 without brackets); None
    when it is not one."""
    try:
        split = urlsplit("//" + netloc)
        split.port  # noqa: B018 - raises ValueError on a port out of range
    except ValueError:
        return None
    return split.hostname


def _check_host():
    allowed = current_app.extensions["sca_allowed_hosts"]
    if allowed is None or request.path in ANY_HOST_PATHS:
        return None
    given = request.headers.get("Host", "")
    if _hostname(given) in allowed:
        return None
    message = "this service does not answer for that host name (SCA_ALLOWED_HOSTS)"
    raise ProblemError(400, "Bad Request", message, errors={"Host": [message]})


def _cross_site() -> bool:
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None:
        return site.strip().lower() not in SAME_SITE
    origin = request.headers.get("Origin")
    if origin is None:
        return False
    netloc = urlsplit(origin.strip()).netloc.lower()
    return netloc != request.headers.get("Host", "").strip().lower()


def _check_origin():
    if request.method not in UNSAFE or not _cross_site():
        return None
    message = "a request from another site's page may not change anything here"
    raise ProblemError(403, "Forbidden", message, errors={"Origin": [message]})


def init_app(app) -> None:
    """Register the checks (before authentication: nothing else runs for a
    foreign host)."""
    open_service = not load_keys(app.config)
    setting = app.config.get("SCA_ALLOWED_HOSTS")
    app.extensions["sca_allowed_hosts"] = allowed_hosts(setting, open_service)
    app.before_request(_check_host)
    app.before_request(_check_origin)
