"""Routes of the jobs resource: ``/v1/jobs`` and the queries on a finished job."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request
from werkzeug.routing import PathConverter

from . import budget, operations
from .schemas import SimilarQuerySchema, custom_cluster_schema
from .uploads import json_body, parse_job_request

bp = Blueprint("jobs", __name__, url_prefix="/v1/jobs")
bp.record_once(lambda state: budget.init_app(state.app))


class ElementConverter(PathConverter):
    """An element id in a path: any text, slashes included (``A/Perth/16/2009``,
    ``/data/s1``), sent percent-encoded or not."""

    regex = ".+?"
    part_isolating = False  # it spans path segments


bp.record_once(lambda state: state.app.url_map.converters.setdefault("element",
                                                                     ElementConverter))


@bp.post("")
def create_job():
    accepted = operations.submit(parse_job_request())
    response = jsonify(accepted)
    response.status_code = 202
    response.headers["Location"] = accepted["links"]["self"]
    return response


@bp.get("/<job_id>")
def get_job(job_id: str):
    return jsonify(operations.view(operations.get_record(job_id)))


@bp.delete("/<job_id>")
def delete_job(job_id: str):
    cancelled = operations.cancel_or_delete(job_id)
    if cancelled is None:
        return "", 204
    return jsonify(cancelled)


@bp.post("/<job_id>/custom-clusters")
def custom_clusters(job_id: str):
    record = operations.get_record(job_id)
    body = custom_cluster_schema(current_app.config).load(json_body())
    return jsonify(operations.custom_clusters(record, body))


@bp.get("/<job_id>/elements/<element:element>/similar", merge_slashes=False)
def similar(job_id: str, element: str):
    record = operations.get_record(job_id)
    query = SimilarQuerySchema().load(request.args.to_dict())
    return jsonify(operations.similar(record, element, query["method"], query["limit"]))
