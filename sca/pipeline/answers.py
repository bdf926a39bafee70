"""The answers of the queries on a finished clustering, as JSON-ready dicts.

A custom cluster of one element (:func:`custom_result`, Sec. 5.3) and the
elements most similar to one (:func:`similar_dict`), their elements named by
their ids (:mod:`sca.pipeline.ids`).
"""

from __future__ import annotations

from ..custom import CustomResult, custom_cluster, neighbours, row_neighbours
from .ids import check_ids, namer, resolve_element


def custom_dict(found: CustomResult, k: int, ids=None) -> dict:
    """The JSON answer of a custom-cluster query (:func:`sca.custom_cluster`)."""
    name = namer(ids)
    return {
        "element": name(found.element),
        "cluster": [name(i) for i in found.cluster],
        "ranked": [{"id": name(i), "score": s} for i, s in found.ranked],
        "iterations": found.iterations,
        "k": k,
    }


def custom_result(
    P,
    element,
    ids=None,
    k: int = 2,
    min_size: int = 1,
    max_size=None,
    max_iterations: int = 1000,
    X=None,
    limit: int | None = None,
) -> dict:
    """The custom cluster of one element, plus raw-data neighbours when X is given.

    Parameters
    ----------
    P : ConsensusOperator
        The balanced ``P = D S D``.
    element : int or str
        The target element, by id (when ``ids`` are given) or 0-based index.
    ids : sequence of str, optional
        The elements' names: n distinct strings.
    k : int, default 2
        Clusters per split (:func:`sca.custom_cluster`).
    min_size : int, default 1
        The smallest size of the target's cluster.
    max_size : int, optional
        The largest size of the target's cluster; default n.
    max_iterations : int, default 1000
        The most steps taken.
    X : array_like of shape (n, m), optional
        The raw data: its 2-norm and cosine nearest neighbours are added
        (:func:`sca.neighbours`), as the paper's table compares them.
    limit : int, optional
        Rank only the ``limit`` closest elements (6 neighbours by default).

    Returns
    -------
    dict
        ``element``, ``cluster``, ``ranked`` (``{"id", "score"}``),
        ``iterations``, ``k`` and, with X, ``euclidean`` and ``cosine``
        (``{"id", "score", "distance"}``), elements named by ``ids``.

    Raises
    ------
    SCAError
        When ``ids`` are not n distinct strings (``field="ids"``), no element
        is ``element`` (``"element"``), or as :func:`sca.custom_cluster` raises.
    IterationError
        As :func:`sca.custom_cluster` raises it.

    See Also
    --------
    sca.custom_cluster : The custom clustering algorithm (Sec. 5.3, Fig. 5.2).
    """
    ids = check_ids(ids, P.n)
    index = resolve_element(element, ids, P.n)
    found = custom_cluster(P, index, k, min_size, max_size, max_iterations, limit)
    out = custom_dict(found, k, ids)
    if X is not None:
        name = namer(ids)
        for method in ("euclidean", "cosine"):
            near = neighbours(X, index, method, limit or 6)
            out[method] = [{"id": name(i), "score": s, "distance": d} for i, s, d in near]
    return out


def similar_dict(index: int, method: str, limit: int, ids=None, *, P=None, X=None) -> dict:
    """The ``limit`` elements most similar to one, most similar first (ties in
    index order): by the element's row of the balanced P for ``method``
    ``"sca"`` (:func:`sca.custom.row_neighbours`), by raw data X for
    ``"euclidean"`` and ``"cosine"`` (:func:`sca.neighbours`)."""
    name = namer(ids)
    if method == "sca":
        ranked = [{"id": name(i), "score": float(s)} for i, s in row_neighbours(P, index, limit)]
    else:
        ranked = [
            {"id": name(i), "score": s, "distance": d}
            for i, s, d in neighbours(X, index, method, limit)
        ]
    return {"element": name(index), "method": method, "ranked": ranked}
