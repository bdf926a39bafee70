"""Route of the plots resource: one PNG or SVG image per plot of a finished job."""

from __future__ import annotations

from flask import Blueprint, Response, request

from . import operations
from .schemas import PlotQuerySchema

bp = Blueprint("plots", __name__, url_prefix="/v1/jobs")


@bp.get("/<job_id>/plots/<name>.<fmt>")
def plot(job_id: str, name: str, fmt: str):
    operations.check_name(name, fmt)
    query = PlotQuerySchema().load(request.args.to_dict())
    image, media_type = operations.plot(job_id, name, fmt, query)
    response = Response(image, mimetype=media_type)
    response.headers["Content-Disposition"] = f'inline; filename="{name}.{fmt}"'
    return response
