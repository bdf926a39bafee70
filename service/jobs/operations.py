"""What the job routes do, apart from HTTP: submit, show, cancel, query.

Job records, content hashes and artifact names come from :mod:`sca_worker.jobs`
and :mod:`sca_worker.stages` (the service imports the worker, never the
reverse).  Queries (custom clusters, similar elements) run here, in the API
process, on the job's cached balanced operator, through the core's query
functions (:mod:`sca.pipeline.results`): no stage is recomputed;
custom clusters run within the time budget of :mod:`.budget`.
"""

from __future__ import annotations

import os
import uuid

import numpy as np
from flask import current_app

import sca
from sca import storage
from sca.pipeline import PAGED, check_ids, custom_dict, resolve_element, similar_dict, with_ids
from sca.spectral import check_spectrum_options
from sca.storage import parse_roots
from sca_worker import events
from sca_worker import inputs as worker_inputs
from sca_worker.cleanup import forget, release, track
from sca_worker.jobs import (
    ACTIVE,
    SPECTRAL_OPTIONS,
    content_hashes,
    jsonable,
    new_job_id,
    new_record,
    normalise_options,
    now,
)
from sca_worker.planning import cache_hit
from sca_worker.problems import problem_for, store_full
from sca_worker.stages import load_balanced
from sca_worker.store import ArtifactMissing
from sca_worker.store.keys import artifact_keys, element_ids

from ..auth import current_owner
from ..backend import backend
from ..errors import ProblemError, invalid
from ..limits import charge_storage, refund_storage, reserve_job, uncharge_storage
from . import callbacks, listing
from .uploads import JobInput

#: Options of the custom clustering passed to the core when given (else its defaults).
CUSTOM_OPTIONS = ("min_size", "max_size", "max_iterations", "limit")


def links(job_id: str) -> dict:
    base = f"/v1/jobs/{job_id}"
    return {
        "self": base,
        "custom_clusters": f"{base}/custom-clusters",
        "similar": f"{base}/elements/{{element}}/similar",
        "labels": f"{base}/labels",
        "view": f"{base}/view",
        "plots": f"{base}/plots/{{name}}.{{format}}",
    }


def submit(job: JobInput, job_id: str | None = None) -> dict:
    """Validate, store the input, create the record and enqueue (or answer from the cache).

    The job belongs to the request's API key; its cache entries are kept
    apart from other keys' (``scope``), so no key learns what another sent.
    ``job_id`` is the id chosen beforehand (by :mod:`.idempotency`), if any.
    """
    b = backend()
    owner = current_owner()
    # The runs were counted against SCA_MAX_RUNS before the plan was made (check_sizes).
    n, runs = worker_inputs.validate(job.kind, job.arrays, job.source)
    ids = check_ids(job.ids, n)
    options = normalise_options(job.options)
    check_spectrum_options(n, **{k: options[k] for k in SPECTRAL_OPTIONS})
    hashes = content_hashes(job.kind, job.arrays, job.source, options, scope=owner or "")
    job_id = job_id or new_job_id()
    record = new_record(
        job_id, job.kind, n, job.source, options, hashes, runs_total=runs, owner=owner
    )
    if job.callback:
        record["callback"] = job.callback
    if worker_inputs.REFERENCE in job.arrays:  # named, not sent (run on Dask when configured)
        record["reference"] = True
    charged = charge_storage(b.store, job.kind, job.arrays)
    record.update(charged)
    try:
        reserve_job(b.store, job_id)
    except ProblemError:
        uncharge_storage(b.store, charged)
        raise
    listing.track(b.store, owner, job_id)
    try:
        _store_and_enqueue(b, record, job, ids)
    except Exception as exc:
        if store_full(exc):  # a 503: leave no half-made job behind
            forget(b.store, record)
            listing.untrack(b.store, owner, job_id)
            uncharge_storage(b.store, charged)
        raise
    return {"id": job_id, "status": record["status"], "links": links(job_id)}


def _store_and_enqueue(b, record: dict, job: JobInput, ids) -> None:
    """Create the job's record, store its input and enqueue it (or finish it from
    the cache); ``record`` is updated to what was stored."""
    job_id, keys = record["id"], artifact_keys(record)
    # The record first (a listed job always exists), alive: if this process dies
    # from here on, a watchdog takes the job over or fails it within the heartbeat bound.
    b.store.create_job(job_id, record, alive=True)
    track(b.store, record)  # before the cache is read: a release then keeps what it finds
    present = b.store.touch(keys["input"], keys["result"])  # a hit touches the rest below
    if keys["input"] not in present:
        b.store.save_arrays(keys["input"], job.arrays)
    hit = cache_hit(b.store, record, present)
    if hit:
        b.store.update_job(job_id, hit)
        record.update(hit)
    if ids is not None:
        b.store.save_json(element_ids(job_id), ids)
    if hit:
        b.store.forget_alive(job_id)
        events.finished(b.store, job_id, "succeeded", record)
    if record["status"] == "queued":
        # Its task named, its queued event and a sign of life in one round trip,
        # before the task exists: the worker finds the record naming its task.
        record["task_id"] = str(uuid.uuid4())
        queued = ("queued", events.data("queued", record))
        b.store.update_and_get(job_id, {"task_id": record["task_id"]}, alive=True, event=queued)
        b.queue.submit(job_id, record["task_id"])


def adopted(job_id: str) -> dict | None:
    """The answer to a submission of ``job_id`` whose request no process finishes
    any more: a watchdog took its job over (it found the job with no sign of life
    for the heartbeat timeout: its API process died after creating it).  None
    while the request may still be live (the job absent, or never taken over)."""
    record = backend().store.get_job(job_id)
    if record is None or record.get("owner") != current_owner() or not record.get("takeovers"):
        return None
    return {"id": job_id, "status": record["status"], "links": links(job_id)}


def get_record(job_id: str) -> dict:
    """The job's record; 404 when it does not exist or belongs to another API key."""
    record = backend().store.get_job(job_id)
    if record is None or record.get("owner") != current_owner():
        raise ProblemError(404, "Not Found", f"no job {job_id!r}", errors={"id": ["unknown job"]})
    return record


def job_ids(job_id: str) -> list | None:
    """The job's element ids (None when it was submitted without)."""

    def load():
        try:
            return backend().store.load_json(element_ids(job_id))
        except ArtifactMissing:
            return None

    # Ids never change once a job exists (queries check the job exists first).
    return backend().operators.get(element_ids(job_id), load)


def summary(record: dict) -> dict:
    """The job document without its result (``GET /v1/jobs`` lists these): the
    progress snapshot the event stream carries, with times, links and callback."""
    out = events.snapshot(record)
    out.update(created=record["created"], updated=record["updated"], links=links(record["id"]))
    if record.get("callback"):
        out["callback"] = callbacks.public(record)
    return out


def view(record: dict) -> dict:
    """The public job document (``GET /v1/jobs/{id}``)."""
    out = summary(record)
    if record["status"] == "succeeded":
        try:
            result = stored(record, "result")
        except ArtifactMissing as exc:
            out["status"] = "failed"
            out["error"] = problem_for(exc)
            return out
        out["result"] = with_ids(result, job_ids(record["id"]))
    return out


def cancel_or_delete(job_id: str) -> dict | None:
    """Cancel an active job (returns its view) or delete a finished one (returns None)."""
    b = backend()
    record = get_record(job_id)
    if record["status"] in ACTIVE:
        if b.store.update_job(job_id, {"status": "cancelled", "updated": now()}, expect=ACTIVE):
            b.queue.revoke(job_id, [record.get("task_id"), *b.store.job_tasks(job_id)])
            cancelled = get_record(job_id)
            release(b.store, cancelled)  # stages still running clean up after them
            refund_storage(b.store, cancelled)
            events.finished(b.store, job_id, "cancelled", cancelled)
            return view(get_record(job_id))
        record = get_record(job_id)
        if record["status"] in ACTIVE:  # pragma: no cover - status changed twice meanwhile
            return view(record)
    release(b.store, record)
    refund_storage(b.store, record)
    b.store.delete_job(job_id)
    listing.untrack(b.store, record.get("owner"), job_id)
    return None


def succeeded(record: dict) -> dict:
    """The record of a succeeded job; 409 for one that has not (yet)."""
    if record["status"] != "succeeded":
        raise ProblemError(
            409,
            "Conflict",
            f"job {record['id']} is {record['status']}; queries need a succeeded job",
            errors={"status": [record["status"]]},
        )
    return record


def _element(element, ids, n: int) -> int:
    try:
        return resolve_element(element, ids, n)
    except sca.SCAError:
        raise ProblemError(
            404,
            "Not Found",
            f"no element {element!r} in this job",
            errors={"element": ["unknown element"]},
        ) from None


def stored(record: dict, name: str):
    """A JSON artifact of the job (``result``, ``spectrum``); a missing one is a 410."""
    return backend().store.load_json(artifact_keys(record)[name])


def balanced(record: dict):
    """The job's balanced operator P, kept in this process for repeated queries."""
    b = backend()
    return b.operators.get(artifact_keys(record)["P"], lambda: load_balanced(b.store, record))


def multiplied(record: dict):
    """P for the queries that only multiply by it (custom clusters, similar
    elements): for a job run on Dask its files read a block at a time
    (:func:`sca_worker.inputs.stacked_operator`), else :func:`balanced`."""
    if not record.get("reference"):
        return balanced(record)
    b = backend()
    key = artifact_keys(record)["P"]
    state = b.operators.get(f"stored:{key}", lambda: b.store.load_arrays(key))
    if not worker_inputs.is_stored(state):
        return balanced(record)
    return b.operators.get(f"stacked:{key}", lambda: worker_inputs.stacked_operator(state))


def _data(record: dict):
    b = backend()
    key = artifact_keys(record)["input"]
    return b.operators.get(key, lambda: b.store.load_arrays(key)["X"])


def job_state(record: dict) -> dict:
    """What the queries on a job read besides P, in one entry of the operator cache
    (so a few jobs' queries do not evict each other's operators): the job's labels,
    k (the default k of every query on the job) and clusters' confidence, then, filled
    in when first needed, the label of each column of H, the ensemble's models, the
    data's fitted scale, a neighbour index or S's largest diagonal entry."""

    def load():
        result = backend().store.load_json(artifact_keys(record)["result"])
        state = {
            "k": int(result["k"]),
            "typical": np.asarray(result["cluster_confidence"], dtype=float),
        }
        if "labels" in result:
            state["labels"] = np.asarray(result["labels"], dtype=np.int64)
        return state

    return backend().operators.get(f"placement:{artifact_keys(record)['result']}", load)


def job_labels(record: dict) -> np.ndarray:
    """The job's labels (new elements are placed among them): its result's, or, for a
    paged result, read whole from the stack it wrote."""
    state = job_state(record)
    if "labels" not in state:  # two threads may both load it: the same value
        result = stored(record, "result")
        written = os.path.join(written_directory(record, result), "labels")
        state["labels"] = storage.load_stack(written).astype(np.int64)
    return state["labels"]


def written_directory(record: dict, result: dict) -> str:
    """The directory of a paged result's stacks, from the root and path it names
    (resolved as a reference is: inside its root); a missing one is a 410."""
    written = result["written"]
    roots = parse_roots(current_app.config["SCA_DATA_ROOTS"])
    try:
        return storage.resolve(roots, written["root"], written["path"], "written")
    except sca.SCAError as exc:
        raise ArtifactMissing(f"the per-element data of job {record['id']}: {exc}") from None


def labels_page(record: dict, offset: int, limit: int) -> dict:
    """Elements ``offset`` to ``offset + limit`` of a finished job: their labels,
    confidences, membership (with several starts) and ids (when it has them),
    read from the stored lists, or, for a paged result, from only the blocks of
    its written stacks that hold them (:func:`sca.storage.stack_rows`)."""
    succeeded(record)
    result = stored(record, "result")
    n = int(result["n"])
    if offset > n:
        raise invalid("offset", f"offset must be at most n = {n}, got {offset}")
    end = min(offset + limit, n)
    page: dict = {"offset": offset, "limit": limit, "n": n}
    if result.get("per_element") == PAGED:
        directory = written_directory(record, result)
        for name in result["written"]["arrays"]:
            page[name] = storage.stack_rows(os.path.join(directory, name), offset, end).tolist()
    else:
        for name in ("labels", "confidence", "membership"):
            if name in result:
                page[name] = result[name][offset:end]
    ids = job_ids(record["id"])
    if ids is not None:
        page["ids"] = ids[offset:end]
    return page


def custom_clusters(record: dict, request: dict) -> dict:
    """The custom clustering algorithm (Fig. 5.2) on the job's balanced matrix."""
    succeeded(record)
    ids = job_ids(record["id"])
    index = _element(request["element"], ids, record["n"])
    k = request.get("k") or job_state(record)["k"]  # the job's k, as for new elements
    P = multiplied(record)
    options = {
        option: request[option] for option in CUSTOM_OPTIONS if request.get(option) is not None
    }
    found = current_app.extensions["sca_queries"].run(
        lambda deadline: sca.custom_cluster(P, index, k, deadline=deadline, **options)
    )
    return jsonable(custom_dict(found, k, ids))


def similar(record: dict, element: str, method: str, limit: int) -> dict:
    """Elements most similar to one, most similar first (ties in id order)."""
    succeeded(record)
    ids = job_ids(record["id"])
    index = _element(element, ids, record["n"])
    if method != "sca" and record["kind"] != "data":
        raise invalid("method", f"{method} needs a job submitted with raw data")
    if method == "sca":
        return similar_dict(index, method, limit, ids, P=multiplied(record))
    return similar_dict(index, method, limit, ids, X=_data(record))
