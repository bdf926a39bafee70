"""The spectrum of P and the number of clusters (Meyer & Wessell, Sec. 2.4 and 3).

Three rules for k from the eigenvalues ``1 = λ1 >= λ2 >= ... >= λ_k̂``:

``"noise"`` (default)
    k is the number of eigenvalues above the noise floor of :mod:`sca.null`:
    the largest nontrivial eigenvalue of the same input with its structure
    destroyed, plus a margin.  It is the Perron cluster (Definition 2.9) with
    "close to 1" measured against what chance alone gives.  k = 1 is a
    possible answer: "no cluster structure".  Without ``k_hat``, k̂ grows
    (20, 40, 80, ..., each doubling after a look two eigenvalues further, or
    straight to the count a kept Krylov space already shows above the floor)
    until an eigenvalue falls below the floor (first against bounds of the
    floor, where the null's spectrum is dear: :mod:`sca.null`), up to
    ``max_k_hat`` and the budget of :mod:`sca.components`, whose components'
    eigenvalues 1 are counted rather than computed.  Where the eigenvalues
    above the floor leave the cut in doubt -- a much larger gap inside them
    (a coarser level of structure, such as species split further by k-means
    runs at a higher k), or the
    first eigenvalue below the floor nearer the last above it than the bulk
    -- those k are ``candidates`` as well, and the iteration stage keeps the
    candidate whose clustering is most uncoupled against chance
    (:func:`sca.clustering.iterate_best`).  Below n = 30 a null reference is too coarse (at n = 3
    every rearrangement of S is the same matrix): k is then the number of
    eigenvalues above 1/2, those nearer 1 than 0.

    On raw data clustered by a k-means ensemble, the null is reference data
    run through the same ensemble instead (:mod:`sca.reference`): given
    ``reference``, k is :func:`sca.reference.reference_k` of the
    eigenvalues against the references'.

``"perron"``
    The paper's Definition 2.9: k is the size of the Perron cluster, the
    largest gap ``λ_k - λ_{k+1}`` over all consecutive pairs, ties to the
    smallest k.

``"gap"``
    The largest gap among ``λ_j - λ_{j+1}`` for ``min_k <= j <= max_k``
    (``min_k = 2`` by default, so the gap after λ1 is not a candidate), ties
    to the smallest k.  Gaps next to eigenvalues that are zero because S has
    low rank (fewer clusters over all runs than elements) are never read.

An explicit k (1 <= k <= n) is always honoured.

How many eigenvalues are computed, and how k̂ grows, is :mod:`sca.khat`; the
Perron cluster and the gap rules are :mod:`sca.perron`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .bounds import CountedBounds, TrialGroups
from .components import Components
from .khat import (
    DEFAULT_K_HAT,
    MAX_K_HAT,
    components_note,
    grown_eigenvalues,
    split_eigenvalues,
)
from .null import ZERO, NoiseFloor, noise_floor
from .operators import ConsensusOperator
from .operators.threads import one_blas_thread, single_threaded
from .options import OPTIONS, RULES, validate  # noqa: F401 - RULES re-exported
from .perron import k_candidates, largest_gap_k, perron_cluster
from .reference import GapStatistic, reference_k

DEFAULT_RULE = OPTIONS["rule"].default
#: Below this n a null draw is too coarse (at n = 3 every rearrangement of S is the same
#: matrix; at n = 6 the paper's baseball consensus is within the null's spread).
MIN_NULL_N = 30


@dataclass(frozen=True)
class SpectrumResult:
    """Eigenvalues used (descending), the chosen k, λ2 and the gap at k.

    The outcome of :func:`spectrum` (Sec. 2.4 and 3).

    Parameters
    ----------
    eigenvalues : ndarray of shape (k_hat,)
        The largest eigenvalues of P computed, descending (``λ1 = 1`` first).
    k : int
        The number of clusters chosen.
    lambda2 : float
        The second eigenvalue (``nan`` when only one was computed).
    gap : float
        ``λ_k - λ_{k+1}`` for the chosen k (``nan`` if not computed).
    rule : {"noise", "gap", "perron"}
        The rule that chose k.
    floor : float, optional
        The noise floor of λ2 (``"noise"`` rule; None otherwise).
    k_signal : int, optional
        The number of eigenvalues above their floors, counted from λ1 until
        the first below its floor (None without a floor).
    capped : bool, default False
        Whether k̂ stopped at its cap with every eigenvalue still above the floor,
        or the eigensolver's memory budget ran out before the last eigenvalues
        were resolved (``P.eigenvalues_short``): either way there may be more
        clusters than counted.
    notes : tuple of str, default ()
        Plain-words remarks.
    candidates : tuple of int, default ()
        The values of k the iteration stage chooses among (empty: k alone).
    scores : dict, default {}
        Once the iteration stage has chosen among ``candidates``, their scores.
    floors : tuple of float, default ()
        The noise floor of each eigenvalue from λ2 on (the null's j-th
        eigenvalue bounds P's j-th, so the floor falls along the spectrum).

    Attributes
    ----------
    k_hat : int
        The number of eigenvalues computed.
    structure : bool or None
        Whether more than one eigenvalue is above its floor (None without a floor).

    See Also
    --------
    spectrum : Computes it.
    """

    eigenvalues: np.ndarray
    k: int
    lambda2: float
    gap: float
    rule: str
    floor: float | None = None
    k_signal: int | None = None
    capped: bool = False
    notes: tuple = field(default=())
    candidates: tuple = field(default=())
    scores: dict = field(default_factory=dict)
    floors: tuple = field(default=())

    @property
    def k_hat(self) -> int:
        """The number of eigenvalues computed (Sec. 3's k̂)."""
        return int(self.eigenvalues.size)

    @property
    def structure(self) -> bool | None:
        """Whether more than one eigenvalue is above its floor (None without a floor)."""
        return None if self.k_signal is None else self.k_signal > 1


def check_spectrum_options(
    n: int, k=None, k_hat=None, min_k=None, max_k=None, rule: str = DEFAULT_RULE
) -> int | None:
    """Check the spectral options against n; returns the explicit k_hat (or None).

    Kept apart from :func:`spectrum` so a caller can refuse bad options before
    any work (the service does, at submission).  The rules are the registry's
    (:func:`sca.options.validate`), so the core, both command lines and the
    API refuse the same values with the same words.
    """
    validate({"k": k, "k_hat": k_hat, "min_k": min_k, "max_k": max_k, "rule": rule}, n=n)
    return None if k_hat is None else int(k_hat)


@one_blas_thread
def spectrum(
    P: ConsensusOperator,
    k: int | None = None,
    k_hat: int | None = None,
    min_k: int | None = None,
    max_k: int | None = None,
    rule: str = DEFAULT_RULE,
    seed: int = 0,
    max_k_hat: int = MAX_K_HAT,
    reference: np.ndarray | None = None,
    known: dict | None = None,
    gap_statistic: GapStatistic | None = None,
) -> SpectrumResult:
    """Eigenvalues of P and the number of clusters.

    Parameters
    ----------
    P : ConsensusOperator
        The balanced operator (``P.unscaled()`` is S, for the null draws).
    k : int, optional
        The user's number of clusters; overrides the rule (1 <= k <= n).
    k_hat : int, optional
        How many of the largest eigenvalues to compute (Sec. 3: "the user ...
        can direct the program to find only the k̂ largest").  Default: all
        of them when that is cheap (n <= 1000, or label runs with at most
        2048 clusters in all), else 20, grown by the ``"noise"`` rule until
        the spectrum reaches the floor or ``max_k_hat``.
    min_k, max_k : int, optional
        Bounds on k for the rules (``"gap"``: min_k defaults to 2).
    rule : {"noise", "gap", "perron"}, default "noise"
        The rule for k when ``k`` is not given (this module's description).
    seed : int, default 0
        Seeds the null draws of the ``"noise"`` rule.
    max_k_hat : int, default 1000
        The ``"noise"`` rule grows k̂ no further than this (and never past n).
    reference : ndarray of shape (draws, count), optional
        Eigenvalues of P for reference data without clusters run through
        the same ensemble (:func:`sca.reference.reference_spectra`); with
        the ``"noise"`` rule they replace the permuted null.
    known : dict, optional
        With ``reference``: :func:`eigenvalues_for_reference` of P already
        computed, by their count (for the references' early stop).
    gap_statistic : GapStatistic, optional
        With ``reference``: the gap statistic of the ensemble's runs against
        the references' (:meth:`sca.reference.References.gap`), for the
        few-rows cases (:func:`sca.reference.reference_k`).

    Returns
    -------
    SpectrumResult
        ``gap`` is ``λ_k - λ_{k+1}`` for the chosen k (``nan`` if not computed).

    Raises
    ------
    SCAError
        When an option is invalid for this n; ``field`` names it
        (``"options.k"``, ``"options.k_hat"``, ...).

    See Also
    --------
    perron_cluster : The ``"perron"`` rule.
    largest_gap_k : The ``"gap"`` rule.
    balance : Makes P from S.

    References
    ----------
    .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 2.4
       (Definition 2.9, the Perron cluster) and Sec. 3 (computing k̂ eigenvalues).
    """
    n = P.n
    fixed = check_spectrum_options(n, k, k_hat, min_k, max_k, rule)
    if rule == "noise" and reference is not None:
        return _against_reference(
            P, np.asarray(reference, dtype=float), k, fixed, min_k, max_k, known, gap_statistic
        )
    notes = []
    null = None
    if rule == "noise":
        null = (
            NoiseFloor(np.array([0.5]), np.empty((0, 1)))
            if n < MIN_NULL_N
            else noise_floor(P.unscaled(), seed, rough=True)
        )
        if n < MIN_NULL_N:
            notes.append(
                f"n = {n} is too small for a null reference: k counts the eigenvalues above 1/2"
            )
    floor = None if null is None else null.floor
    parts = None if P.full_spectrum_cheap else Components.of(P)
    # many eigenvalues above the floor may be counted by bounds (sca.bounds), as
    # many as k̂ may reach: first where the runs have many labels, else where the
    # eigensolver's budget, not the spectrum, ended the list
    trial = TrialGroups(P, max_k_hat) if null is not None and k is None and fixed is None else None
    counted: CountedBounds | None = None
    lowest = None if null is None else null.floors[-1]
    if parts is not None and parts.count > 1:
        values, capped, budget = split_eigenvalues(P, parts, fixed, lowest, max_k_hat)
        notes.append(components_note(parts))
    elif trial and null and trial.many_labels and (counted := trial.count(null)) is not None:
        values, capped, budget = counted.values, False, None
    else:
        values, capped, budget = grown_eigenvalues(P, fixed, lowest, max_k_hat)
    ones = 1 if parts is None else parts.count
    # a component's 1 is an uncoupled block (Theorem 2.8), signal whatever the floor
    marked = np.r_[np.full(ones, np.inf), values[ones:]]
    if null is not None and not null.settles(marked):
        null = noise_floor(P.unscaled(), seed)  # the bounds leave k in doubt: the exact floor
        floor = null.floor
    k_signal = None if null is None else null.signal(marked)
    if trial and null and not counted and ((capped and budget is not None) or P.eigenvalues_short):
        counted = trial.count(null)
    if counted is not None:
        values, capped, k_signal = counted.values, False, counted.count
        notes.append(counted.note)
    elif not capped and P.eigenvalues_short:
        # a lower bound read below the floor may belong to an eigenvalue above it
        capped = True
        notes.append(
            "the eigensolver's memory budget ran out before the last eigenvalues "
            "computed converged: read as lower bounds, they may hide eigenvalues "
            "above the noise floor, so there may be more clusters"
        )
    elif capped:
        notes.append(
            f"all {values.size} eigenvalues computed lie above the noise floor; "
            "there may be more clusters: raise k_hat"
            if budget is None
            else f"all {values.size} eigenvalues computed lie above the noise floor; "
            f"there may be more clusters, but {budget} eigenvalues is the most this "
            "spectrum may ask for"
        )
    elif budget is not None:
        notes.append(
            f"k_hat = {fixed} eigenvalues asked for, {budget} computed: the most "
            "this spectrum may ask for"
        )
    candidates = ()
    if k is None:
        if rule == "noise":
            assert k_signal is not None  # the noise rule always has its null
            k = int(np.clip(k_signal, min_k or 1, max_k or n))
            candidates = k_candidates(values, k_signal, min_k or 1, max_k or n, ones)
        elif rule == "perron":
            k = perron_cluster(values)
        else:
            k = largest_gap_k(values, min_k or 2, max_k)
    if k_signal == 1:
        notes.append(
            "no cluster structure: no eigenvalue of P but λ1 = 1 rises above the "
            "noise floor of the same input with its structure destroyed"
        )
    if fixed is None and values.size > max(max_k_hat, DEFAULT_K_HAT) + 1:
        # the components' 1s are counted, not computed: list no more than k̂ could reach
        values = values[: max(max_k_hat, DEFAULT_K_HAT) + 1]
    gap = float(values[k - 1] - values[k]) if k < values.size else float("nan")
    lambda2 = float(values[1]) if values.size > 1 else float("nan")
    floors = () if null is None else tuple(float(f) for f in null.along(values.size))
    return SpectrumResult(
        values,
        int(k),
        lambda2,
        gap,
        rule,
        floor,
        k_signal,
        capped,
        tuple(notes),
        candidates,
        floors=floors,
    )


def eigenvalues_for_reference(P: ConsensusOperator, count: int) -> np.ndarray:
    """P's ``count`` largest eigenvalues as the ``"noise"`` rule reads them against
    reference data (:mod:`sca.reference`): to the references' tolerance (the rule
    reads log-gaps, not digits), up to the first that is zero."""
    with single_threaded():  # as for the references
        values = P.eigenvalues(min(count, P.n), few=count < P.n - 1)
    return values[: max(2, min(values.size, count, int(np.sum(values > ZERO)) + 1))]


def _against_reference(
    P, reference, k, k_hat, min_k, max_k, known=None, gap=None
) -> SpectrumResult:
    """The ``"noise"`` rule with reference data as the null (:mod:`sca.reference`);
    ``known`` maps a count to :func:`eigenvalues_for_reference` already computed,
    ``gap`` is the runs' gap statistic."""
    count = max(reference.shape[1], k_hat or 0, (k or 0) + 1)
    known = {} if known is None else known
    values = known[count] if count in known else eigenvalues_for_reference(P, count)
    choice = reference_k(values, reference, gap)
    notes = list(choice.notes)
    if k is None:
        k = int(np.clip(choice.k, min_k or 1, max_k or P.n))
        if k != choice.k:
            notes.append(f"k = {choice.k} was moved into [min_k, max_k]: k = {k}")
    gap = float(values[k - 1] - values[k]) if k < values.size else float("nan")
    lambda2 = float(values[1]) if values.size > 1 else float("nan")
    return SpectrumResult(
        values,
        int(k),
        lambda2,
        gap,
        "noise",
        choice.floor,
        choice.k_signal,
        False,
        tuple(notes),
        floors=choice.floors,
    )
