"""``/healthz`` (process up), ``/readyz`` (store and broker reachable), ``/openapi.yaml``."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, jsonify

from ..backend import backend
from ..errors import ProblemError

bp = Blueprint("health", __name__)

SPEC_PATHS = (Path(__file__).resolve().parent.parent / "openapi.yaml",
              Path(__file__).resolve().parent.parent.parent / "openapi.yaml")


@bp.get("/healthz")
def healthz():
    return jsonify({"status": "ok"})


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
    if all(value == "ok" for value in checks.values()):
        return jsonify({"status": "ok", "mode": mode, "checks": checks})
    raise ProblemError(503, "Service Unavailable", "a dependency is unreachable",
                       checks=checks, mode=mode, headers={"Retry-After": "5"})


@bp.get("/openapi.yaml")
def openapi():
    for path in SPEC_PATHS:
        if path.is_file():
            return Response(path.read_bytes(), mimetype="application/yaml")
    raise ProblemError(404, "Not Found", "openapi.yaml is not installed")
