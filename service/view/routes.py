"""Route of the job page: HTML with inline CSS and script, no external assets.

The page polls the JSON API (``GET /v1/jobs/{id}``) for progress by stage,
then shows k, the clusters, the plots and a form that calls the custom
cluster and similar-elements endpoints.
"""

from __future__ import annotations

import json
from pathlib import Path

from flask import Blueprint, Response

from ..jobs import operations

bp = Blueprint("view", __name__, url_prefix="/v1/jobs")

PAGE = Path(__file__).resolve().parent / "page.html"


def _script_literal(value: str) -> str:
    """A JSON string literal safe inside an HTML <script> element."""
    return (json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026"))


@bp.get("/<job_id>/view")
def view(job_id: str):
    operations.get_record(job_id)
    html = PAGE.read_text(encoding="utf-8").replace('"__JOB_ID__"', _script_literal(job_id))
    response = Response(html, mimetype="text/html")
    response.headers["Content-Security-Policy"] = (
        "default-src 'self'; img-src 'self' data:; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; connect-src 'self'")
    response.headers["Cache-Control"] = "no-store"
    return response
