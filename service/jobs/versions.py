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

from sca.pipeline import check_ids

from . import newelements, operations
from .uploads import JobInput, check_sizes


def new_version(record: dict, elements: list, names: list, rows, selfs) -> dict:
    """Submit the old input plus ``elements`` (named ``names``) as a new job; its
    accepted document (``id``, ``status``, ``links``).  ``rows`` and ``selfs`` are
    the elements' consensus rows (used for a consensus input)."""
    kind = record["kind"]
    arrays = newelements.appended_arrays(record, elements, rows, selfs)
    ids = operations.job_ids(record["id"])
    if ids is not None:
        ids = check_ids([*ids, *[str(name) for name in names]], len(ids) + len(names))
    source = dict(record["source"])
    check_sizes(kind, arrays, source)
    return operations.submit(JobInput(kind, arrays, source, ids, dict(record["options"])))
