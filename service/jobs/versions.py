"""``"persist": true`` on a new-element query: a new job of the old input plus the
new elements, clustered again; the queried job is not changed.

The new job has the old job's source (ensemble spec and seed, or SNN
parameters) and options; its input is the old input with the new elements
appended in the same kind: rows of ``data``, rows of ``labels``, or, for a
consensus, the new element's row and column and ``self`` on the diagonal
(one element per request: the similarity between two new elements is not
given).  When the old job has ids the new elements' ``id`` become theirs.
It is submitted as any job (size limits, per-key limit of active jobs).
"""

from __future__ import annotations

import numpy as np

from sca.newrows import check_new_labels
from sca.pipeline import check_ids

from ..errors import invalid
from . import newelements, operations
from .uploads import JobInput, check_sizes


def _consensus(arrays: dict, rows: np.ndarray, own: float) -> dict:
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


def new_version(record: dict, elements: list, names: list, rows, selfs) -> dict:
    """Submit the old input plus ``elements`` (named ``names``) as a new job; its
    accepted document (``id``, ``status``, ``links``).  ``rows`` and ``selfs`` are
    the elements' consensus rows (used for a consensus input)."""
    kind = record["kind"]
    arrays = dict(newelements.input_arrays(record))
    if kind == "data":
        values = [e["data"] for e in elements]
        arrays["X"] = np.vstack([arrays["X"], newelements.data_matrix(record, values)])
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
        arrays = _consensus(arrays, rows[:, 0], float(selfs[0]))
    ids = operations.job_ids(record["id"])
    if ids is not None:
        ids = check_ids([*ids, *[str(name) for name in names]], len(ids) + len(names))
    source = dict(record["source"])
    check_sizes(kind, arrays, source)
    return operations.submit(JobInput(kind, arrays, source, ids, dict(record["options"])))
