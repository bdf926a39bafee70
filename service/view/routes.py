"""Route of the job page: HTML with inline CSS and script, no external assets.

The route serves a *shell*: one static document, byte for byte the same for
every job id, every caller and every configuration.  Its script reads the
job id from its own URL, then loads everything about the job through the
JSON API (``GET /v1/jobs/{id}`` polled for progress by stage, then the plots,
the custom cluster and similar-elements endpoints).  When the service has API
keys, the first call answers 401 and the page asks for a key; it keeps the
key in ``sessionStorage`` (this tab only) and sends it as
``Authorization: Bearer <key>`` on every same-origin call, plots included
(fetched, then shown from ``blob:`` URLs, since ``<img src>`` cannot send a
header).

So the shell needs no key (see :func:`sca_service.auth.public`), and access
control stays with the JSON API: a wrong key gets its 401, another key's job
or a missing one its 404, which the page shows.  The shell's response is
likewise uniform without keys: it never looks the job up, so it cannot tell
whether a job exists, and it does not depend on the store at all.  A missing
job is still reported, by the page, from the API's 404 problem.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from pathlib import Path

from flask import Blueprint, Response

from ..auth import public

bp = Blueprint("view", __name__, url_prefix="/v1/jobs")

HERE = Path(__file__).resolve().parent
SCRIPT_MARKER = "<!-- page-script.html, inlined when served -->"


@lru_cache(maxsize=1)
def _shell() -> tuple[str, str]:
    """The page (page.html with page-script.html in place of its marker) and its
    Content-Security-Policy, which allows that one inline script by its hash."""
    element = (HERE / "page-script.html").read_text(encoding="utf-8")
    script = element.removeprefix("<script>").removesuffix("\n").removesuffix("</script>")
    if element != f"<script>{script}</script>\n" or "</script" in script.lower():
        raise RuntimeError("page-script.html must be one <script> element")
    # The event-stream reader goes first: its declarations exist before the page starts.
    stream = (HERE / "page-events.js").read_text(encoding="utf-8")
    if "</script" in stream.lower():
        raise RuntimeError("page-events.js must not close the script element")
    script = stream + script
    element = f"<script>{script}</script>\n"
    html = (HERE / "page.html").read_text(encoding="utf-8").replace(SCRIPT_MARKER, element)
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    csp = (
        "default-src 'none'; connect-src 'self'; img-src blob:; "
        f"style-src 'unsafe-inline'; script-src 'sha256-{digest}'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return html, csp


@bp.get("/<job_id>/view")
@public
def view(job_id: str):
    """The job page's shell; ``job_id`` is deliberately unused (see the module)."""
    html, csp = _shell()
    response = Response(html, mimetype="text/html")
    response.headers["Content-Security-Policy"] = csp
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response
