"""Routes of the jobs resource: ``/v1/jobs`` and the queries on a finished job."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request

from ..errors import ProblemError, invalid
from . import operations
from .schemas import CustomClusterRequestSchema, SimilarQuerySchema
from .uploads import parse_job_request

bp = Blueprint("jobs", __name__, url_prefix="/v1/jobs")


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


def _json_body() -> dict:
    if not (request.mimetype == "application/json" or request.mimetype.endswith("+json")):
        raise ProblemError(415, "Unsupported Media Type", "send application/json",
                           errors={"Content-Type": [f"unsupported: {request.mimetype or 'none'}"]})
    body = request.get_json(silent=True)
    if body is None:
        raise ProblemError(400, "Bad Request", "the body is not valid JSON",
                           errors={"body": ["not valid JSON"]})
    return body


@bp.post("/<job_id>/custom-clusters")
def custom_clusters(job_id: str):
    operations.get_record(job_id)
    body = CustomClusterRequestSchema().load(_json_body())
    cap = current_app.config["SCA_MAX_ITERATIONS"]
    if body["max_iterations"] > cap:
        raise invalid("max_iterations", f"max_iterations must be at most {cap}")
    return jsonify(operations.custom_clusters(job_id, body))


@bp.get("/<job_id>/elements/<element>/similar")
def similar(job_id: str, element: str):
    operations.get_record(job_id)
    query = SimilarQuerySchema().load(request.args.to_dict())
    return jsonify(operations.similar(job_id, element, query["method"], query["limit"]))
