"""Route of the plots resource: one PNG or SVG image per plot of a finished job."""

from __future__ import annotations

from flask import Blueprint, Response, current_app, request

from . import operations, render
from .schemas import plot_query_schema

bp = Blueprint("plots", __name__, url_prefix="/v1/jobs")
bp.record_once(lambda state: render.init_app(state.app))


@bp.get("/<job_id>/plots/<name>.<fmt>")
def plot(job_id: str, name: str, fmt: str):
    operations.check_name(name, fmt)
    query = plot_query_schema(current_app.config).load(request.args.to_dict())
    image, media_type = operations.plot(job_id, name, fmt, query)
    response = Response(image, mimetype=media_type)
    response.headers["Content-Disposition"] = f'inline; filename="{name}.{fmt}"'
    return response
