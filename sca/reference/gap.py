"""The gap statistic of the ensemble's own k-means runs, against the references'.

The spectrum of P (:mod:`sca.reference`) asks how long the walk on the
consensus takes to leave a group.  With few rows a group of 15 elements
holds too few runs' worth of evidence for its eigenvalue to stand clear of
what the ensemble makes of reference data: the references' spectra spread
as widely as the data's groups lift it.  The k-means runs themselves say
more there.  Tibshirani, Walther & Hastie's gap statistic (2001) compares
the within-group dispersion ``W_k`` of a clustering into k groups with its
expectation on reference data without clusters,

    ``gap(k) = E*[log W_k] - log W_k``,

and takes the smallest k with ``gap(k) >= gap(k + 1) - s_(k+1)``
(``s_k``: the references' standard deviation of ``log W_k`` times
``sqrt(1 + 1/B)``).  The ensemble runs k-means at every level from 2 up and
runs the same ensemble on the references of :mod:`sca.reference`, so the
statistic costs one pass over the runs' labels: ``W_k`` of a run is
``sum ||x_i - mean||^2 - sum_c ||s_c||^2 / n_c`` with ``s_c`` the sums of
the centred rows per group of the run, ``H^T X`` of the membership
matrix H (Sec. 1).  Each level's ``W_k`` is its best run's, as k-means'
``n_init`` keeps its best start.

The statistic's answer is read only beside the spectrum's
(:func:`gap_choice`, in :func:`sca.reference.reference_k`): the Gaussian references have no
corners, so a uniform square's four corners are tighter than a reference's
four cells by a little (``W_4`` about 1.4 times smaller) and Tibshirani's
rule says k = 4 there on a few hundred rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The least gap over k = 1 for the statistic's k to stand: the data's groups
#: at least twice as tight as the references' cells (``log 2``), where corners
#: of uniform data that Gaussian references lack give about ``log 1.4``.
MIN_EFFECT = float(np.log(2.0))
#: Groups at least four times as tight as the references' cells stand against a
#: spectrum that sees no structure at all: data whose groups lie along one
#: principal axis have references elongated alike, which k-means cuts as
#: consistently as the groups (three blobs on a line: λ2 on the references'
#: mean, the runs' groups 16 times tighter).  No structureless input of
#: ``scripts/accuracy_gap.py`` comes near (the statistic's k there, where not 1,
#: at most about 2.3 times tighter).
DECISIVE_EFFECT = float(np.log(4.0))


def levels_of(run_levels) -> np.ndarray:
    """k = 1 and the ensemble's levels, ascending: where ``log W_k`` is read."""
    return np.array([1, *sorted(set(int(k) for k in run_levels) - {1})])


def level_dispersions(S, X, run_levels) -> np.ndarray:
    """``log W_k / n`` at k = 1 and at each level of the runs (the best run's): per
    row, so that the data's compare with references of fewer rows.

    Parameters
    ----------
    S : ConsensusOperator
        The membership operator of the runs (``spans``: each run's number of
        labels; ``factor_transpose``: ``H^T X``), unscaled.
    X : ndarray of shape (n, m)
        The rows the runs clustered.
    run_levels : sequence of int
        The k each run was asked for, in the runs' order.

    Returns
    -------
    ndarray
        ``log (W_k / n)`` for k in :func:`levels_of` of ``run_levels``.
    """
    X = np.asarray(X, dtype=float)
    centred = X - X.mean(axis=0)
    total = float(np.sum(centred**2))
    tiny = np.finfo(float).tiny
    sizes = np.asarray(S.factor_transpose(np.ones(S.n)), dtype=float)
    sums = np.asarray(S.factor_transpose(centred), dtype=float).reshape(sizes.size, -1)
    between = np.sum(sums**2, axis=1) / np.maximum(sizes, 1.0)
    starts = np.concatenate([[0], np.cumsum(np.asarray(S.spans))[:-1]])
    within = np.maximum(total - np.add.reduceat(between, starts), 0.0)
    logs = np.log(np.maximum(within, tiny) / S.n)
    run_levels = np.asarray(run_levels)
    best = [logs[run_levels == k].min() for k in levels_of(run_levels)[1:]]
    return np.array([np.log(max(total, tiny) / S.n), *best])


@dataclass(frozen=True)
class GapStatistic:
    """The gap statistic over the levels: ``k`` (Tibshirani's rule), ``effect``
    (``gap(k) - gap(1)``: how many times tighter, on a log scale, the data's
    k groups are than the references' k cells, beyond what k = 1 shows),
    ``levels`` and ``gap`` at each."""

    k: int
    effect: float
    levels: tuple
    gap: tuple

    @classmethod
    def of(cls, levels, data, references) -> GapStatistic:
        """The statistic of the data's :func:`level_dispersions` at ``levels``
        against the references' (an array of shape (draws, levels))."""
        refs = np.asarray(references, dtype=float)
        gap = refs.mean(axis=0) - np.asarray(data, dtype=float)
        s = refs.std(axis=0) * np.sqrt(1 + 1 / refs.shape[0])
        stops = np.flatnonzero(gap[:-1] >= gap[1:] - s[1:])
        at = int(stops[0]) if stops.size else gap.size - 1
        levels = tuple(int(k) for k in levels)
        return cls(levels[at], float(gap[at] - gap[0]), levels, tuple(float(g) for g in gap))


def gap_choice(gap: GapStatistic | None, k: int, sees) -> int | None:
    """The gap statistic's k where it should replace the spectrum's k, else None.

    It does where the two differ, the data's groups at the statistic's k
    are at least :data:`MIN_EFFECT` tighter than the references' cells, and
    the spectrum sees that many groups (``sees(k)``), too weakly to count
    them by its own margin; or where the spectrum sees no structure (k = 1)
    and the groups are at least :data:`DECISIVE_EFFECT` tighter.

    Parameters
    ----------
    gap : GapStatistic or None
    k : int
        The spectrum's k.
    sees : callable
        ``sees(j)``: whether P's eigenvalues show j groups against the
        references' (:func:`sca.reference.reference_k`).

    Returns
    -------
    int or None
    """
    if gap is None or gap.k < 2 or gap.k == k or gap.effect < MIN_EFFECT:
        return None
    if k == 1 and gap.effect >= DECISIVE_EFFECT:
        return gap.k
    return gap.k if sees(gap.k) else None
