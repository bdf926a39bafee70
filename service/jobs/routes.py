"""Routes of the jobs resource: ``/v1/jobs`` and the queries on a finished job."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request
from werkzeug.routing import PathConverter

from ..backend import backend
from . import budget, listing, newelements, operations, polling, versions
from .idempotency import idempotent
from .listing import ListQuerySchema
from .schemas import (
    LabelsPageSchema,
    SimilarQuerySchema,
    custom_cluster_schema,
    new_elements_schema,
)
from .uploads import json_body, parse_job_request

bp = Blueprint("jobs", __name__, url_prefix="/v1/jobs")
bp.record_once(lambda state: budget.init_app(state.app))


class ElementConverter(PathConverter):
    """An element id in a path: any text, slashes included (``A/Perth/16/2009``,
    ``/data/s1``), sent percent-encoded or not."""

    regex = ".+?"
    part_isolating = False  # it spans path segments


def _add_converter(state) -> None:
    state.app.url_map.converters.setdefault("element", ElementConverter)


bp.record_once(_add_converter)


@bp.post("")
def create_job():
    return idempotent(_accept, _adopt)


def _accept(job_id: str):
    return _accepted(operations.submit(parse_job_request(), job_id))


def _adopt(job_id: str):
    """The answer for a job whose first request died after creating it (or None)."""
    accepted = operations.adopted(job_id)
    return None if accepted is None else _accepted(accepted)


def _accepted(accepted: dict):
    response = jsonify(accepted)
    response.status_code = 202
    response.headers["Location"] = accepted["links"]["self"]
    response.headers["Retry-After"] = str(polling.after_submission(accepted["status"]))
    return response


@bp.get("")
def list_jobs():
    return jsonify(listing.page(ListQuerySchema().load(request.args.to_dict()), operations.summary))


@bp.get("/<job_id>")
def get_job(job_id: str):
    record = operations.get_record(job_id)
    tag = polling.etag(backend().store, record, operations.summary(record))
    if polling.not_modified(tag):
        return polling.not_modified_response(record, tag)
    response = jsonify(operations.view(record))
    response.headers.update(polling.headers(record, tag))
    return response


@bp.delete("/<job_id>")
def delete_job(job_id: str):
    cancelled = operations.cancel_or_delete(job_id)
    if cancelled is None:
        return "", 204
    return jsonify(cancelled)


@bp.get("/<job_id>/labels")
def labels_page(job_id: str):
    record = operations.get_record(job_id)
    query = LabelsPageSchema().load(request.args.to_dict())
    return jsonify(operations.labels_page(record, query["offset"], query["limit"]))


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


@bp.post("/<job_id>/queries")
def new_element_queries(job_id: str):
    """New elements placed into the finished job, which is not changed."""
    record = operations.get_record(job_id)
    body = new_elements_schema(current_app.config).load(json_body())
    rows, selfs = newelements.new_rows(record, body["elements"])
    answer = newelements.place(record, body, rows, selfs)
    if body.get("persist"):  # a new job of the old input and these elements
        names = [element["id"] for element in answer["elements"]]
        answer["version"] = versions.new_version(record, body["elements"], names, rows, selfs)
    return jsonify(answer)
