"""The open routes: ``/`` (where to go from here), ``/healthz`` (process up),
``/readyz`` (store and broker reachable, Redis set up as the service needs),
``/openapi.yaml``."""

from __future__ import annotations

from html import escape
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from flask import Blueprint, Response, jsonify, request

from sca_worker.capacity import check_redis

from ..backend import backend
from ..errors import ProblemError

bp = Blueprint("health", __name__)

SPEC_PATHS = (
    Path(__file__).resolve().parent.parent / "openapi.yaml",
    Path(__file__).resolve().parent.parent.parent / "openapi.yaml",
)


@bp.get("/healthz")
def healthz():
    return jsonify({"status": "ok"})


def _redis_check(store, checks: dict) -> tuple[list, list]:
    """Problems and warnings of Redis's settings and memory (:func:`check_redis`);
    sets ``checks["redis"]``."""
    try:
        report = check_redis(store)
    except Exception as exc:  # INFO disabled, say: warn, the store itself answered
        checks["redis"] = "unchecked"
        return [], [f"Redis's settings could not be read ({type(exc).__name__})"]
    checks["redis"] = "; ".join(report["problems"]) or "ok"
    return report["problems"], report["warnings"]


@bp.get("/readyz")
def readyz():
    b = backend()
    checks = {}
    for name, probe in (("store", b.store.ping), ("broker", b.queue.ping)):
        try:
            checks[name] = "ok" if probe() else "unreachable"
        except Exception as exc:  # any failure to reach it means not ready
            checks[name] = f"unreachable: {type(exc).__name__}"
    mode = "embedded" if b.embedded else "redis"
    reachable = all(value == "ok" for value in checks.values())
    problems, warnings = [], []
    if reachable and not b.embedded:  # a Redis server's settings matter
        problems, warnings = _redis_check(b.store, checks)
    extra = {"warnings": warnings} if warnings else {}
    if reachable and not problems:
        return jsonify({"status": "ok", "mode": mode, "checks": checks, **extra})
    detail = "; ".join(problems) if problems else "a dependency is unreachable"
    raise ProblemError(
        503,
        "Service Unavailable",
        detail,
        checks=checks,
        mode=mode,
        headers={"Retry-After": "5"},
        **extra,
    )


@bp.get("/openapi.yaml")
def openapi():
    for path in SPEC_PATHS:
        if path.is_file():
            return Response(path.read_bytes(), mimetype="application/yaml")
    raise ProblemError(404, "Not Found", "openapi.yaml is not installed")


#: What ``GET /`` points to: (name, path, what it is).
LINKS = (
    ("openapi", "/openapi.yaml", "the HTTP API's specification (OpenAPI 3.1)"),
    ("jobs", "/v1/jobs", "submit a job (POST) or list yours (GET)"),
    ("job_page", "/v1/jobs/{id}/view", "a job's page in the browser: progress, clusters, plots"),
    ("health", "/healthz", "the process is up"),
    ("ready", "/readyz", "the store and the broker are reachable"),
)
#: Where the documentation lives: it is built from the source, not served.
DOCS = "docs/ in the source: `make docs` builds the site (HTTP API, guides, operations)"


def _version() -> str | None:
    try:
        return version("stochastic-clustering")
    except PackageNotFoundError:
        return None


@bp.get("/")
def home():
    """Where to go from here: JSON for programs, a page of links for a browser."""
    links = {name: path for name, path, _ in LINKS}
    if request.accept_mimetypes.best_match(["application/json", "text/html"]) == "text/html":
        items = "".join(
            f'<li><a href="{escape(path)}">{escape(path)}</a>: {escape(what)}</li>'
            if "{" not in path
            else f"<li><code>{escape(path)}</code>: {escape(what)}</li>"
            for _, path, what in LINKS
        )
        page = (
            '<!doctype html><html lang="en"><meta charset="utf-8">'
            "<title>Stochastic clustering</title><h1>Stochastic clustering</h1>"
            f"<p>The HTTP API of the Stochastic Clustering Algorithm.</p><ul>{items}</ul>"
            f"<p>Documentation: {escape(DOCS)}.</p></html>"
        )
        response = Response(page, mimetype="text/html")
        response.headers["Content-Security-Policy"] = "default-src 'none'"
    else:
        response = jsonify(
            {
                "service": "stochastic-clustering",
                "version": _version(),
                "links": links,
                "documentation": DOCS,
            }
        )
    response.vary.add("Accept")
    return response
