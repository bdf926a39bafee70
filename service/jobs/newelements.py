"""New elements placed into a finished job (``POST /v1/jobs/{id}/queries``).

Each new element comes in its job's input kind; its consensus row against
the job's elements (:mod:`sca.newrows`) extends the job's balanced matrix by
one row and column (:mod:`sca.placement`), on which it gets its cluster
among the job's, its custom cluster and its most similar elements.  The job
is not changed.  The numerics (checks of the new rows, the neighbour index,
the rows themselves) are the core's; this module reads the job's artifacts,
calls them and shapes the answer.  What the queries read (the balanced operator, the job's
labels, the ensemble's models, a neighbour index) is kept in the API
process's operator cache; the custom clusterings of one request share one
time budget (:mod:`.budget`).
"""

from __future__ import annotations

import numpy as np
from flask import current_app

import sca
from sca.errors import SCAError
from sca.newrows import check_new_data, check_new_labels, consensus_rows_each, neighbour_index
from sca.pipeline import namer
from sca_worker.inputs import REFERENCE, input_array
from sca_worker.stages import job_scaling
from sca_worker.store.keys import artifact_keys

from ..backend import backend
from ..errors import invalid
from .operations import balanced, job_ids, job_labels, job_state, succeeded


def _lazy(record: dict, name: str, load):
    state = job_state(record)
    if name not in state:
        state[name] = load()  # two threads may both load it: the same value
    return state[name]


def input_arrays(record: dict) -> dict:
    return backend().store.load_arrays(artifact_keys(record)["input"])


def _label_columns(record: dict):
    """``(column_labels, groups)`` of H: from the ensemble's models artifact, or the labels."""
    if record["kind"] == "labels":
        return _lazy(
            record, "columns", lambda: sca.run_columns(input_array("labels", input_arrays(record)))
        )
    models = _models(record)
    return models["columns"], models["column_groups"]


def _models(record: dict) -> dict:
    def load():
        try:
            return backend().store.load_arrays(artifact_keys(record)["models"])
        except KeyError:
            raise invalid(
                "elements",
                "this job's ensemble models were not kept (the job "
                "predates new-element queries); resubmit it",
            ) from None

    return _lazy(record, "models", load)


def _scaling(record: dict):
    """The job's fitted scale: new rows are transformed as its data was, never refitted."""
    return _lazy(record, "scaling", lambda: job_scaling(backend().store, record))


def _neighbour_index(record: dict):
    metric = record["source"]["snn"].get("metric", "euclidean")

    def load():
        return neighbour_index(_scaling(record).transform(input_arrays(record)["X"]), metric)

    return _lazy(record, "neighbours", load)


def _given(elements: list, kind: str) -> list:
    """Each element's value of the job's input kind (422 naming the element otherwise)."""
    values = []
    for i, element in enumerate(elements):
        if element.get(kind) is None:
            other = next(name for name in ("data", "labels", "consensus") if name in element)
            raise invalid(
                f"elements[{i}].{other}",
                f"this job was submitted with {kind}: give elements[{i}].{kind}",
            )
        values.append(element[kind])
    return values


def data_matrix(record: dict, values: list) -> np.ndarray:
    """New rows of features, checked against the job's (422 naming the element)."""
    snn = record["source"].get("snn") is not None
    m = _neighbour_index(record).n_features_in_ if snn else _models(record)["models"].shape[1]
    nmf = not snn and bool(np.any(_models(record)["algorithms"] == "nmf"))
    try:
        return check_new_data(values, m, nonnegative=nmf, field="elements[{i}].data")
    except SCAError as exc:
        raise invalid(exc.field or "elements", str(exc)) from None


def _rows_of_data(record: dict, P, values: list):
    """Raw rows, scaled as the job's data: labelled by the ensemble's models, or by
    their nearest neighbours."""
    snn = record["source"].get("snn") is not None
    rows = _scaling(record).transform(data_matrix(record, values))
    if snn:
        kappa = int(record["source"]["snn"]["kappa"])
        return sca.neighbour_rows(_neighbour_index(record), P.H, rows, kappa)
    return sca.ensemble_rows(P.H, _models(record), rows)


def _rows_of_labels(record: dict, P, values: list):
    columns, groups = _label_columns(record)
    runs = groups.size - 1
    for i, value in enumerate(values):
        check_new_labels(value, runs, f"elements[{i}].labels")
    return sca.label_rows(P.H, columns, groups, values)


def _rows_of_consensus(record: dict, P, values: list, selfs: list):
    S = P.unscaled()
    default = _lazy(record, "diagonal", lambda: float(S.diagonal().max()))
    return consensus_rows_each(values, selfs, P.n, default, "elements[{i}].consensus")


def consensus_rows(record: dict, P, elements: list):
    """``(rows n x q, selfs)`` of the request's new elements, by the job's input kind."""
    kind = record["kind"]
    values = _given(elements, kind)
    if kind == "data":
        return _rows_of_data(record, P, values)
    if kind == "labels":
        return _rows_of_labels(record, P, values)
    return _rows_of_consensus(record, P, values, [e.get("self") for e in elements])


def new_rows(record: dict, elements: list):
    """``(rows n x q, selfs)`` of the request's new elements in the finished job."""
    succeeded(record)
    return consensus_rows(record, balanced(record), elements)


def _check_new_ids(elements, ids, n: int) -> None:
    """A new element's ``id`` names it in the answer, beside the job's elements in
    ``similar`` and custom clusters: one that is already the job's (its id, or its
    index when the job has no ids) or another new element's would be ambiguous."""
    taken = set(ids) if ids is not None else None
    seen: dict = {}
    for j, element in enumerate(elements):
        own = element.get("id")
        if own is None:
            continue
        if (own in taken) if taken is not None else (isinstance(own, int) and 0 <= own < n):
            raise invalid(
                f"elements[{j}].id",
                f"{own!r} is already an element of the job: give a new element an id of its own",
            )
        if own in seen:
            raise invalid(f"elements[{j}].id", f"{own!r} is also the id of elements[{seen[own]}]")
        seen[own] = j


def place(record: dict, request: dict, rows, selfs) -> dict:
    """Each new element's cluster among the job's, custom cluster and most similar
    elements, from their :func:`new_rows`."""
    ids = job_ids(record["id"])
    P = balanced(record)
    state = job_state(record)
    labels, k, typical = job_labels(record), state["k"], state["typical"]
    elements = request["elements"]
    options = {
        name: request[name]
        for name in ("min_size", "max_size", "max_iterations", "limit", "custom")
    }
    k = request.get("k") or k
    if k > P.n + 1:
        raise invalid("k", f"k must be at most n + 1 = {P.n + 1}")
    if not request.get("persist"):  # a new version checks its ids as a job's (field ids)
        _check_new_ids(elements, ids, P.n)

    def one(j, deadline):
        try:
            return sca.place(
                P, labels, rows[:, j], selfs[j], k=k, deadline=deadline, typical=typical, **options
            )
        except sca.SCAError as exc:
            if exc.field != "elements":
                raise
            raise invalid(f"elements[{j}]", str(exc)) from None

    def run(deadline):
        return [one(j, deadline) for j in range(rows.shape[1])]

    placed = current_app.extensions["sca_queries"].run(run) if request["custom"] else run(None)
    name = namer(ids)
    out = []
    for j, (element, found) in enumerate(zip(elements, placed)):
        own = element.get("id")
        own = f"new-{j}" if own is None else own
        answer = {
            "id": own,
            "cluster": found.cluster,
            "confidence": found.confidence,
            "cluster_mass": found.mass.tolist(),
            "similar": [{"id": name(i), "score": s} for i, s in found.similar],
            "balancing": {
                "scale": found.extension.scale,
                "deviation": found.extension.deviation,
                "self": found.extension.corner,
            },
        }
        if found.custom is not None:
            answer["custom_cluster"] = {
                # custom_cluster lists the target (the new element, index n) first
                "cluster": [own]
                + ([ids[i] for i in found.custom.cluster[1:]] if ids else found.custom.cluster[1:]),
                "ranked": [{"id": name(i), "score": s} for i, s in found.custom.ranked],
                "iterations": found.custom.iterations,
                "k": k,
            }
        elif found.custom_unmet is not None:
            answer["custom_cluster_unmet"] = {
                "field": found.custom_field,
                "detail": f"{own}: {found.custom_unmet}",
                "k": k,
            }
        out.append(answer)
    # Native numbers throughout (a custom cluster can list thousands of ids), so no
    # walk through jsonable; the extension's figures are finite by construction.
    return {"job": record["id"], "n": P.n, "k": int(labels.max()) + 1, "elements": out}


def appended_arrays(record: dict, elements: list, rows, selfs) -> dict:
    """The job's input arrays with the new ``elements`` appended in its kind:
    rows of data or of labels, or a consensus's new row and column (``rows``,
    with ``selfs`` on the diagonal), for ``"persist": true``."""
    kind = record["kind"]
    arrays = dict(input_arrays(record))
    if REFERENCE in arrays:
        raise invalid(
            "persist",
            f"this job's {kind} were named by reference; append the new elements to the "
            "stored array and submit a new job",
        )
    if kind == "data":
        values = [e["data"] for e in elements]
        arrays["X"] = np.vstack([arrays["X"], data_matrix(record, values)])
    elif kind == "labels":
        runs = arrays["labels"].shape[1]
        new = np.vstack(
            [
                check_new_labels(e["labels"], runs, f"elements[{i}].labels")
                for i, e in enumerate(elements)
            ]
        )
        arrays["labels"] = np.vstack([arrays["labels"], new.astype(arrays["labels"].dtype)])
    else:
        if len(elements) != 1:
            raise invalid(
                "persist",
                "a consensus job takes one new element per persisted "
                "query (the similarity between new elements is unknown)",
            )
        arrays = _consensus_appended(arrays, rows[:, 0], float(selfs[0]))
    return arrays


def _consensus_appended(arrays: dict, rows: np.ndarray, own: float) -> dict:
    if "S" in arrays:
        S = arrays["S"]
        n = S.shape[0]
        out = np.empty((n + 1, n + 1))
        out[:n, :n], out[:n, n], out[n, :n], out[n, n] = S, rows, rows, own
        return {"S": out}
    n = int(arrays["n"])
    near = np.flatnonzero(rows)
    return {
        "n": np.array(n + 1),
        "rows": np.concatenate([arrays["rows"], near, np.full(near.size, n), [n]]),
        "cols": np.concatenate([arrays["cols"], np.full(near.size, n), near, [n]]),
        "values": np.concatenate([arrays["values"], rows[near], rows[near], [own]]),
    }
