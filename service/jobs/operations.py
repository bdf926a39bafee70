"""What the job routes do, apart from HTTP: submit, show, cancel, query.

Job records, content hashes and artifact names come from :mod:`worker.jobs`
and :mod:`worker.stages` (the service imports the worker, never the
reverse).  Queries (custom clusters, similar elements) run here, in the API
process, on the job's cached balanced operator: no stage is recomputed.
"""

from __future__ import annotations

import numpy as np

import sca
from sca.pipeline import check_ids, resolve_element
from worker import inputs as worker_inputs
from worker.cleanup import release, track
from worker.jobs import (ACTIVE, content_hashes, jsonable, new_job_id, new_record,
                         normalise_options, now, progress, timings, with_ids)
from worker.stages import artifact_keys
from worker.store import ArtifactMissing

from ..auth import current_owner
from ..backend import backend
from ..errors import PROBLEM_BASE, ProblemError, invalid
from ..limits import reserve_job
from .uploads import JobInput


def links(job_id: str) -> dict:
    base = f"/v1/jobs/{job_id}"
    return {"self": base, "custom_clusters": f"{base}/custom-clusters",
            "similar": f"{base}/elements/{{element}}/similar", "view": f"{base}/view",
            "plots": f"{base}/plots/{{name}}.{{format}}"}


def submit(job: JobInput, owner: str | None = None) -> dict:
    """Validate, store the input, create the record and enqueue (or answer from the cache).

    The job belongs to the request's API key; its cache entries are kept
    apart from other keys' (``scope``), so no key learns what another sent.
    """
    b = backend()
    owner = owner if owner is not None else current_owner()
    n = worker_inputs.validate(job.kind, job.arrays, job.source)
    ids = check_ids(job.ids, n)
    options = normalise_options(job.options)
    if options["k"] is not None and options["k"] > n:
        raise invalid("options.k", f"k must be at most n = {n}, got {options['k']}")
    if options["k_hat"] is not None and options["k_hat"] >= n:
        raise invalid("options.k_hat", f"k_hat must be below n = {n}, got {options['k_hat']}")
    if options["min_k"] >= n:
        raise invalid("options.min_k", f"min_k must be below n = {n}, got {options['min_k']}")
    hashes = content_hashes(job.kind, job.arrays, job.source, options, scope=owner or "")
    job_id = new_job_id()
    record = new_record(job_id, job.kind, n, job.source, options, hashes, owner=owner)
    keys = artifact_keys(record)
    reserve_job(b.store, job_id)
    track(b.store, record)
    if b.store.has(keys["input"]):
        b.store.touch(keys["input"])
    else:
        b.store.save_arrays(keys["input"], job.arrays)
    if b.store.has(keys["result"]):
        b.store.touch(keys["result"], keys["P"], keys["balance"], keys["spectrum"])
        record.update(status="succeeded", stage="iteration", cached=True)
    b.store.create_job(job_id, record)
    if ids is not None:
        b.store.save_json(f"ids:{job_id}", ids)
    if record["status"] == "queued":
        task_id = b.queue.submit(job_id)
        b.store.update_job(job_id, {"task_id": task_id})
    return {"id": job_id, "status": record["status"], "links": links(job_id)}


def get_record(job_id: str) -> dict:
    """The job's record; 404 when it does not exist or belongs to another API key."""
    record = backend().store.get_job(job_id)
    if record is None or "status" not in record or record.get("owner") != current_owner():
        raise ProblemError(404, "Not Found", f"no job {job_id!r}", errors={"id": ["unknown job"]})
    return record


def _ids(job_id: str):
    def load():
        try:
            return backend().store.load_json(f"ids:{job_id}")
        except ArtifactMissing:
            return None

    # Ids never change once a job exists (queries check the job exists first).
    return backend().operators.get(f"ids:{job_id}", load)


def view(record: dict) -> dict:
    """The public job document (``GET /v1/jobs/{id}``)."""
    store = backend().store
    out = {"id": record["id"], "status": record["status"], "stage": record["stage"],
           "progress": progress(record), "created": record["created"],
           "updated": record["updated"], "timings": timings(record),
           "cached": bool(record.get("cached")), "links": links(record["id"])}
    if record.get("runs_total"):
        out["ensemble"] = {"done": min(int(record.get("runs_done", 0)), int(record["runs_total"])),
                           "total": int(record["runs_total"])}
    if record["status"] == "succeeded":
        try:
            result = store.load_json(artifact_keys(record)["result"])
        except ArtifactMissing:
            out["status"] = "failed"
            out["error"] = {"type": PROBLEM_BASE + "artifact-missing", "title": "Result expired",
                            "status": 410, "detail": "the cached result expired; resubmit"}
            return out
        out["result"] = _named(result, _ids(record["id"]))
    elif record["status"] == "failed" and record.get("error"):
        out["error"] = record["error"]
    return out


def _named(result: dict, ids) -> dict:
    out = with_ids(result, ids)
    if ids is not None and out.get("trace"):
        out["trace"] = [dict(step, clusters=None if step.get("clusters") is None else
                             [[ids[i] for i in c] for c in step["clusters"]])
                        for step in out["trace"]]
    return out


def cancel_or_delete(job_id: str) -> dict | None:
    """Cancel an active job (returns its view) or delete a finished one (returns None)."""
    b = backend()
    record = get_record(job_id)
    if record["status"] in ACTIVE:
        if b.store.update_job(job_id, {"status": "cancelled", "updated": now()}, expect=ACTIVE):
            b.queue.revoke(job_id, [record.get("task_id"), *b.store.job_tasks(job_id)])
            release(b.store, get_record(job_id))  # stages still running clean up after them
            return view(get_record(job_id))
        record = get_record(job_id)
        if record["status"] in ACTIVE:  # pragma: no cover - status changed twice meanwhile
            return view(record)
    release(b.store, record)
    b.store.delete_job(job_id)
    return None


def _finished(job_id: str) -> dict:
    record = get_record(job_id)
    if record["status"] != "succeeded":
        raise ProblemError(409, "Conflict",
                           f"job {job_id} is {record['status']}; queries need a succeeded job",
                           errors={"status": [record["status"]]})
    return record


def _element(element, ids, n: int) -> int:
    try:
        return resolve_element(element, ids, n)
    except sca.SCAError:
        raise ProblemError(404, "Not Found", f"no element {element!r} in this job",
                           errors={"element": ["unknown element"]}) from None


def _load(record: dict, name: str, loader):
    b = backend()
    key = artifact_keys(record)[name]
    read = b.store.load_json if loader is None else lambda k: loader(b.store.load_arrays(k))
    try:
        return b.operators.get(key, lambda: read(key))
    except ArtifactMissing:
        raise ProblemError(410, "Gone", "the job's cached matrices expired; resubmit the job",
                           errors={"id": ["artifacts expired"]}) from None


def custom_clusters(job_id: str, request: dict) -> dict:
    """The custom clustering algorithm (Fig. 5.2) on the job's balanced matrix."""
    record = _finished(job_id)
    ids = _ids(job_id)
    element = request["element"]
    _element(element, ids, record["n"])
    k = request.get("k") or int(_load(record, "spectrum", None)["k"])
    if k > record["n"]:
        raise invalid("k", f"k must be at most n = {record['n']}, got {k}")
    P = _load(record, "P", sca.operator_from_state)
    try:
        out = sca.custom_result(P, element, ids, k=k, min_size=request["min_size"],
                                max_size=request.get("max_size"),
                                max_iterations=request["max_iterations"],
                                limit=request.get("limit"))
    except sca.SCAError as exc:
        field = (exc.field or "input").removeprefix("options.")
        title = "No custom cluster" if isinstance(exc, sca.IterationError) else "Invalid input"
        raise ProblemError(422, title, str(exc), type=PROBLEM_BASE + "invalid-input",
                           errors={field: [str(exc)]}) from None
    return jsonable(out)


def similar(job_id: str, element: str, method: str, limit: int) -> dict:
    """Elements most similar to one, most similar first (ties in id order)."""
    record = _finished(job_id)
    ids = _ids(job_id)
    index = _element(element, ids, record["n"])
    name = (lambda i: ids[i]) if ids is not None else int
    if method == "sca":
        P = _load(record, "P", sca.operator_from_state)
        unit = np.zeros(P.n)
        unit[index] = 1.0
        row = P.matmat(unit)
        order = [int(i) for i in np.argsort(-row, kind="stable") if i != index][:limit]
        ranked = [(i, float(row[i])) for i in order]
    else:
        if record["kind"] != "data":
            raise invalid("method", f"{method} needs a job submitted with raw data")
        X = _load(record, "input", lambda arrays: arrays["X"])
        ranked = sca.neighbours(X, index, method, limit)
    return {"element": name(index), "method": method,
            "ranked": [{"id": name(i), "score": float(s)} for i, s in ranked]}
