"""Stochastic clustering from one or several starts (Meyer & Wessell, Sec. 3, 4.2, 6).

:func:`iterate` runs the iteration stage of :mod:`sca.iteration` from
``starts`` random initial vectors, returns the distinct solutions with their
frequencies, the most frequent as the answer, a fuzzy membership matrix and,
on request, re-consensus: the solutions become a new ensemble, clustered
again, until one solution remains (both asked for in the paper's Discussion).
"""

from __future__ import annotations

import numpy as np

from .balance import balance
from .chunked_iteration import iterate_chunked
from .errors import IterationError, SCAError
from .inputs import membership_operator
from .iteration import (
    IterationResult,
    check_iteration_options,
    evolve,
    fuzzy_membership,
    random_start,
    solutions_of,
)
from .operators import ChunkedLabelOperator, ConsensusOperator
from .operators.threads import one_blas_thread
from .options import OPTIONS
from .splits import canonical

DEFAULT_STABLE = OPTIONS["stable"].default
DEFAULT_MAX_ITERATIONS = OPTIONS["max_iterations"].default
DEFAULT_STARTS = OPTIONS["starts"].default
#: Rounds of re-consensus at most.
MAX_ROUNDS = 10


@one_blas_thread
def iterate(
    P: ConsensusOperator,
    k: int,
    seed: int = 0,
    starts: int = DEFAULT_STARTS,
    stable: int = DEFAULT_STABLE,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    split: str = "kmeans",
    trace: bool = False,
    x0=None,
    block: int | None = None,
    eps: float | None = None,
    reconsensus: bool = False,
) -> IterationResult:
    """Cluster with the stochastic clustering algorithm's iteration (Fig. 3.1, step 4-5).

    Parameters
    ----------
    P : ConsensusOperator
        Doubly stochastic, from :func:`sca.balance`.
    k : int
        Number of clusters.
    seed : int, default 0
        Seeds the random starts (and k-means).
    starts : int, default 1
        Independent random initial vectors (or blocks).
    stable : int, default 6
        Consecutive identical clusterings that end a start (6 in the paper's
        example: identical from t = 2 to t = 7).
    max_iterations : int, default 1000
        Iteration cap; a start not stable by then is dropped and, if none is
        left, :class:`IterationError` is raised.
    split : {"kmeans", "gaps"}, default "kmeans"
        ``"gaps"`` is the paper's cut at the k-1 largest gaps of one vector;
        ``"kmeans"`` clusters the rows of a block of ``block`` iterates
        (block power iteration with k-means on the rows: spectral clustering
        with the doubly stochastic normalisation, stopped early as power
        iteration clustering is; see :mod:`sca.iteration`).
    trace : bool, default False
        Record x_t and its clusters per step for the first start (the
        paper's Table 3.1).
    x0 : array-like, optional
        Initial vector of the first start (e.g. the paper's printed x_0).
    block : int, optional
        Vectors per start for ``"kmeans"``; default ``max(1, k - 1)``, the
        dimension of the cluster structure once the uniform direction is
        removed.  Always 1 for ``"gaps"``.
    eps : float, optional
        A random start within ``eps`` of uniform is redrawn (Sec. 4.2);
        default ``1e-3 / sqrt(n)``.
    reconsensus : bool, default False
        While the starts disagree, build the consensus of their solutions and
        cluster it again (at most 10 rounds).

    Returns
    -------
    IterationResult
        The most frequent solution as ``labels``, the distinct solutions with
        their frequencies and, with several starts, the fuzzy membership.

    Raises
    ------
    SCAError
        When an option is invalid (``field`` names it, e.g. ``"options.k"``),
        or ``x0`` is not a finite vector of length n (``"options.x0"``).
    IterationError
        When no start settled on a stable clustering within
        ``max_iterations`` (``field="options.max_iterations"``).

    See Also
    --------
    sca.spectrum : Chooses k.
    gap_split : The paper's cut of one vector at its k-1 largest gaps.

    References
    ----------
    .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 3
       (Fig. 3.1) and Sec. 4.1-4.3 (the initial probability vectors).
    """
    check_iteration_options(P, k, starts, stable, max_iterations, split)
    n = P.n
    block = 1 if split == "gaps" else (block or max(1, k - 1))
    eps = 1e-3 / np.sqrt(n) if eps is None else eps
    if isinstance(P, ChunkedLabelOperator) and split == "kmeans" and x0 is None and not trace:
        if not reconsensus:  # n-sized data stays on the cluster (sca.chunked_iteration)
            return iterate_chunked(P, k, seed, starts, stable, max_iterations, block, eps)
    if k == 1:
        labels = np.zeros(n, dtype=np.int64)
        return IterationResult(labels, 0, [(labels, 1.0)])
    if x0 is None and not trace and 2 * k > n:  # where block iteration costs most
        count, components = P.components()
        if count == k:
            # completely uncoupled (Theorem 2.8): the blocks are the clusters, and the
            # iteration, which never mixes them, could only find them again
            labels = canonical(components)
            return IterationResult(labels, 0, [(labels, 1.0)])
    rng = np.random.default_rng(seed)
    X0 = np.empty((n, starts * block))  # filled column by column: no second copy
    for j in range(X0.shape[1]):
        X0[:, j] = random_start(n, rng, eps)
    if x0 is not None:
        x0 = np.asarray(x0, dtype=float)
        if x0.shape != (n,) or not np.all(np.isfinite(x0)):
            raise SCAError(f"x0 must be a finite vector of length n = {n}", "options.x0")
        X0[:, 0] = x0
    runs, steps, steps_trace, _ = evolve(
        P, k, X0, block, split, stable, max_iterations, seed=seed, trace=trace, overwrite_x0=True
    )
    found = [labels for labels in runs if labels is not None]
    if not found:
        raise IterationError.unsettled(stable, max_iterations)
    solutions = solutions_of(found)
    answer = solutions[0][0]
    membership = fuzzy_membership(found, answer) if starts > 1 else None
    result = IterationResult(
        answer, steps, solutions, membership, steps_trace, failed_starts=len(runs) - len(found)
    )
    if reconsensus and len(solutions) > 1:
        return _reconsensus(result, found, k, seed, starts, stable, max_iterations, split)
    return result


@one_blas_thread
def iterate_best(P: ConsensusOperator, candidates, **options):
    """Cluster with each candidate k; keep the clustering most uncoupled against chance.

    The score of a partition is ``(1 - σ(P)) - Σ_c (n_c / n)^2``: the share of
    P's weight inside the clusters (Definition 2.7, Theorem 2.8) minus the
    share a random partition with the same sizes would have (Newman's
    modularity of P as a weighted graph, every degree 1).  Returns
    ``(k, IterationResult, {k: score})``.
    """
    best: tuple[int, IterationResult] | None = None
    scores: dict[int, float] = {}
    for k in candidates:
        found = iterate(P, int(k), **options)
        sizes = np.bincount(found.labels).astype(float)
        scores[int(k)] = float(
            np.sum(P.within_sums(found.labels)) / P.n - np.sum((sizes / P.n) ** 2)
        )
        if best is None or scores[int(k)] > scores[best[0]]:
            best = (int(k), found)
    if best is None:
        raise SCAError("no candidate k to cluster with", "k")
    return best[0], best[1], scores


def _reconsensus(
    first: IterationResult, found, k, seed, starts, stable, max_iterations, split
) -> IterationResult:
    """Re-cluster the consensus of the solutions until one solution remains."""
    current, history = first, [first.solutions]
    for round_ in range(2, MAX_ROUNDS + 1):
        P = balance(membership_operator(np.column_stack(found))).P
        current = iterate(
            P,
            k,
            seed=seed + round_,
            starts=starts,
            stable=stable,
            max_iterations=max_iterations,
            split=split,
        )
        history.append(current.solutions)
        found = [
            labels
            for labels, freq in current.solutions
            for _ in range(max(1, round(freq * starts)))
        ]
        if len(current.solutions) == 1:
            break
    current.rounds = len(history)
    current.history = history
    current.trace = first.trace
    return current
