"""``/healthz`` (process up), ``/readyz`` (store and broker reachable, Redis set up
as the service needs), ``/openapi.yaml``."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, jsonify

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
