"""Custom clustering and nearest neighbours (Meyer & Wessell, Sec. 5.3, Fig. 5.2).

The custom clustering algorithm (CCA) starts the iteration from the unit
vector of one element; after each product it splits x_t as the SCA does and
returns the element's cluster as soon as its size is within the bounds,
with the elements ranked by how close their entry of x_t is to the target's.
For raw data the paper's table compares it with the 2-norm and cosine
nearest neighbours, which :func:`neighbours` gives; :func:`row_neighbours`
ranks the elements by one element's row of P.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import DeadlineExceeded, IterationError, SCAError
from .inputs import check_data
from .iteration import evolve
from .operators import ConsensusOperator
from .operators.threads import one_blas_thread
from .options import NEIGHBOUR_METHODS as METHODS
from .options import validate


@dataclass(frozen=True)
class CustomResult:
    """The target's cluster, the other elements ranked, and the step that found it.

    The outcome of :func:`custom_cluster` (Sec. 5.3).

    Parameters
    ----------
    element : int
        Index of the target element.
    cluster : list of int
        The target's cluster (indices, target first).
    ranked : list of (int, float)
        The other elements as ``(index, score)`` -- the cluster's members
        first, each part by closeness of its x_t entry to the target's
        (``score`` in [0, 1], 1 = same entry).
    iterations : int
        The step at which the cluster was found.

    See Also
    --------
    custom_cluster : Computes it.
    """

    element: int
    cluster: list
    ranked: list
    iterations: int


def _check_element(element, n: int) -> int:
    if not (
        isinstance(element, (int, np.integer))
        and not isinstance(element, bool)
        and 0 <= element < n
    ):
        raise SCAError(f"element must be an index in [0, {n - 1}], got {element!r}", "element")
    return int(element)


@one_blas_thread
def custom_cluster(
    P: ConsensusOperator,
    element: int,
    k: int,
    min_size: int = 1,
    max_size: int | None = None,
    max_iterations: int = 1000,
    limit: int | None = None,
    deadline: float | None = None,
) -> CustomResult:
    """The custom clustering algorithm (Fig. 5.2).

    The iteration starts from the unit vector of ``element``; after each
    product it splits x_t as the SCA does and returns the element's cluster as
    soon as its size is within the bounds.

    Parameters
    ----------
    P : ConsensusOperator
        Doubly stochastic.
    element : int
        Index of the target element.
    k : int
        Clusters per split (the SCA's k); k = 1 (no cluster structure found)
        splits in two, since one cluster would always hold every element.
    min_size, max_size : int
        Bounds on the size of the target's cluster (inclusive); ``min_size``
        defaults to 1, ``max_size`` to n.
    max_iterations : int, default 1000
        The most steps taken.
    limit : int, optional
        Rank only the ``limit`` closest elements (the cluster is always whole).
    deadline : float, optional
        A :func:`time.monotonic` instant after which no further step is
        taken: a caller's time budget (each step costs one product with P).

    Returns
    -------
    CustomResult
        The target's cluster, the ranked elements and the step that found it.

    Raises
    ------
    SCAError
        When ``element`` is no index of P (``field="element"``), or a bound,
        ``k`` or ``limit`` is invalid (``field`` names it).
    IterationError
        No step within ``max_iterations`` gave a cluster of admissible size;
        ``partial`` holds the last cluster seen, and ``field`` the bound to
        change (``"min_size"``, ``"max_size"`` or ``"max_iterations"``).
    DeadlineExceeded
        The same, but ``deadline`` came first; ``iterations`` holds the steps
        that fit.

    See Also
    --------
    neighbours : The 2-norm and cosine nearest neighbours the paper compares with.

    References
    ----------
    .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 5.3,
       Fig. 5.2.
    """
    n = P.n
    element = _check_element(element, n)
    max_size = n if max_size is None else max_size
    validate(
        {
            "min_size": min_size,
            "max_size": max_size,
            "max_iterations": max_iterations,
            "k": k,
            "limit": limit,
        },
        group="custom",
        n=n,
    )
    if k > n:
        raise SCAError(f"k must be at most n = {n}, got {k}", "k")
    k = max(k, 2)
    x0 = np.zeros((n, 1))
    x0[element, 0] = 1.0
    seen = {}

    sizes: list[int] = []

    def within_bounds(labels, t):
        if labels is None or t == 0:
            return False
        size = int(np.sum(labels == labels[element]))
        seen["last"] = labels
        sizes.append(size)
        return min_size <= size <= max_size

    runs, steps, _, Y = evolve(
        P, k, x0, 1, "gaps", 1, max_iterations, stop=within_bounds, deadline=deadline
    )
    if runs[0] is None:
        field, why = _unmet(sizes, min_size, max_size, k)
        missing = f"no cluster of the element with size in [{min_size}, {max_size}]"
        if steps < max_iterations:
            raise DeadlineExceeded(
                f"{missing} in the {steps} of {max_iterations} iterations that fit in the "
                f"time budget{why}",
                partial=seen.get("last"),
                iterations=steps,
                field="max_iterations",  # the time budget ran out first: its steps are the limit
            )
        raise IterationError(
            f"{missing} within {max_iterations} iterations{why}",
            partial=seen.get("last"),
            field=field,
        )
    labels = runs[0]
    x = Y[:, 0]
    distance = np.abs(x - x[element])
    spread = distance.max() or 1.0
    # The paper's table lists the cluster's members in similarity order; the
    # other elements follow, also by closeness, so every element is ranked.
    inside = labels == labels[element]
    order = np.lexsort((distance, ~inside))
    order = order[order != element]
    members = [element] + order[inside[order]].tolist()
    top = order if limit is None else order[:limit]
    ranked = list(zip(top.tolist(), (1.0 - distance[top] / spread).tolist()))
    return CustomResult(element, members, ranked, steps)


def _unmet(sizes: list[int], min_size: int, max_size: int, k: int) -> tuple[str, str]:
    """Which size bound a custom clustering could not meet, and why in words: the
    sizes its target's cluster took (Fig. 5.2 only coarsens and refines the split of
    x_t, so the bounds, not the step count, are usually what to change)."""
    if len(sizes) < 2:  # one step shows no trend: the cap may be all that stopped it
        return "max_iterations", (
            f": after {len(sizes)} step(s) its cluster had {sizes[0] if sizes else '?'} "
            f"elements (allow more iterations, or change the bounds)"
        )
    low, high = min(sizes), max(sizes)
    first, last = sizes[0], sizes[-1]
    if (low > max_size and last < first) or (high < min_size and last > first):
        return "max_iterations", (
            f": its cluster was still moving towards the bounds ({first} to {last} "
            f"elements): allow more iterations"
        )
    if low > max_size:
        return "max_size", (
            f": its cluster never had fewer than {low} elements (raise max_size, or split "
            f"into more than k = {k} clusters)"
        )
    if high < min_size:
        return "min_size", (
            f": its cluster never had more than {high} elements (lower min_size, or split "
            f"into fewer than k = {k} clusters)"
        )
    return "max_size", (
        f": its cluster's size went from {low} to {high} elements without a step "
        f"inside the bounds (widen them, or change k = {k})"
    )


def neighbours(X, element: int, method: str = "euclidean", limit: int | None = None):
    """Nearest neighbours of one element of raw data, nearest first.

    ``score`` is a similarity in [0, 1], larger nearer, for every method (as
    every ranked list of this package is): ``1 - d / max d`` for
    ``"euclidean"`` (``d`` the 2-norm distance, the farthest element at 0) and
    ``(1 + cos) / 2`` for ``"cosine"``; ``distance`` is ``d``, and the cosine
    distance ``1 - cos``.  Ties go to the lower index.

    Parameters
    ----------
    X : array_like of shape (n, features)
        The raw data, one row per element.
    element : int
        Index of the target element.
    method : {"euclidean", "cosine"}, default "euclidean"
        The distance.
    limit : int, optional
        Return only the ``limit`` nearest.

    Returns
    -------
    list of (int, float, float)
        ``(index, score, distance)`` triples, nearest first, without the element.

    Raises
    ------
    SCAError
        When ``X`` is not finite numeric data (``field="data"``), ``element``
        is no row of it (``"element"``) or ``method`` is unknown (``"method"``).

    See Also
    --------
    custom_cluster : The custom cluster the paper's table compares these with.

    References
    ----------
    .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 5.3.
    """
    X = check_data(X)
    element = _check_element(element, X.shape[0])
    if method not in METHODS:
        raise SCAError(f"method must be one of {METHODS}, got {method!r}", "method")
    if method == "euclidean":
        distance = np.linalg.norm(X - X[element], axis=1)
        score = 1.0 - distance / (distance.max() or 1.0)
    else:
        norms = np.linalg.norm(X, axis=1)
        norms[norms == 0] = 1.0
        cosine = np.clip((X @ X[element]) / (norms * norms[element]), -1.0, 1.0)
        score, distance = (1.0 + cosine) / 2, 1.0 - cosine
    order = np.argsort(distance, kind="stable")
    ranked = [(int(i), float(score[i]), float(distance[i])) for i in order if i != element]
    return ranked if limit is None else ranked[:limit]


def row_neighbours(P: ConsensusOperator, element: int, limit: int | None = None):
    """The elements most similar to one by its row of P, most similar first.

    ``score`` is the entry ``p_ij`` of the balanced matrix (``e_i^T P``, one
    product with P: P is never formed); ties go to the lower index.  The row
    is read part by part (:meth:`ConsensusOperator.row_blocks`), keeping the
    best ``limit`` so far, so a P on disk is ranked one block at a time.
    """
    element = _check_element(element, P.n)
    index, score = np.empty(0, dtype=np.int64), np.empty(0)
    for start, entries in P.row_blocks(element):  # the best `limit` kept block by block
        index = np.concatenate([index, np.arange(start, start + entries.size)])
        score = np.concatenate([score, entries])
        keep = index != element
        index, score = index[keep], score[keep]
        order = np.lexsort((index, -score))[:limit]
        index, score = index[order], score[order]
    return [(int(i), float(s)) for i, s in zip(index, score)]
