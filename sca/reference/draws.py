"""Reference data without clusters, run through the data's ensemble.

Gaussian rows with the data's principal axes and variances
(:func:`reference_data`), each run through the same ensemble, balanced and
its eigenvalues read (:func:`reference_spectrum`), a few at a time and more
only where the first leave k in doubt (:func:`reference_spectra`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..balance import balance
from ..ensemble import ensemble_labels, ensemble_work
from ..ensemble_spec import ensemble_items, ensemble_plan
from ..errors import BalancingError
from ..inputs import membership_operator
from ..operators.kernels import single_threaded
from ..pool import spread
from .gap import GapStatistic, level_dispersions, levels_of
from .rule import in_doubt, settled

#: Reference data sets run through the ensemble.
DRAWS = 4
#: Reference data sets at most: more than :data:`DRAWS` run only when those leave
#: λ2 within the margin's standard error (:func:`in_doubt`).
MAX_DRAWS = 8
#: Reference data sets run first; the others only when these leave k in doubt
#: (:func:`settled`).
FIRST_DRAWS = 2
#: Reference data sets have at most this many rows: P's spectrum depends on the
#: shape of the data and on the ensemble, hardly on n once n is large.
MAX_REFERENCE_N = 2000
#: A reference is balanced to this tolerance (its eigenvalues move by about as much).
BALANCE_TOL = 1e-6
#: Eigenvalues compared past the ensemble's largest k.
EXTRA = 6


def reference_applies(ensemble) -> bool:
    """Whether reference data can run through ``ensemble``: no NMF runs (NMF
    needs nonnegative data, which a Gaussian reference is not); k-means and
    single-linkage runs take any rows."""
    return all(algorithm != "nmf" for algorithm, _, _ in ensemble_items(ensemble))


def gap_applies(ensemble) -> bool:
    """Whether the gap statistic reads the ensemble's runs (:mod:`sca.reference.gap`):
    k-means runs only, whose groups are what minimises ``W_k``; a single-linkage
    run's follow any shape a gap parts, however spread."""
    return all(algorithm == "kmeans" for algorithm, _, _ in ensemble_items(ensemble))


def reference_count(ensemble, n: int) -> int:
    """How many eigenvalues to compare: past the ensemble's largest k, at most n."""
    return int(min(n, max(max(ks) for _, ks, _ in ensemble_items(ensemble)) + EXTRA))


def reference_data(X, rng: np.random.Generator) -> np.ndarray:
    """Gaussian rows with the principal axes and variances of X (no clusters).

    Parameters
    ----------
    X : ndarray of shape (n, m)
        The data as the ensemble sees it (after ``scale``).
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of shape (n, m)
    """
    X = np.asarray(X, dtype=float)
    centre = X.mean(axis=0)
    _, s, Vt = np.linalg.svd(X - centre, full_matrices=False)
    sd = s / np.sqrt(max(X.shape[0] - 1, 1))
    return centre + (rng.standard_normal((X.shape[0], sd.size)) * sd) @ Vt


def eigenvalues_of(S, count: int) -> np.ndarray:
    """The ``count`` largest eigenvalues of P = D S D for label runs (zero-padded)."""
    try:  # roughly, as a null draw is balanced (sca.null): the rule reads log-gaps
        P = balance(S, tol=BALANCE_TOL, find_components=False).P
    except BalancingError as exc:  # a rough P still has the spectrum's shape
        P = exc.partial.P
    values = P.eigenvalues(min(count, P.n), few=True)[:count]
    return np.concatenate([values, np.zeros(count - values.size)])


def run_levels(ensemble) -> list[int]:
    """The k each of the ensemble's runs is asked for, in the runs' order."""
    return [int(run["k"]) for run in ensemble_plan(ensemble)]


@dataclass(frozen=True)
class References:
    """What the ensemble makes of reference data: P's eigenvalues (``spectra``,
    one row per reference) and, for a k-means ensemble (:func:`gap_applies`)
    where every :data:`DRAWS` ran, the runs' dispersions at each level
    (``dispersions``, one row per reference, of the runs asked for
    ``run_levels``; None where the first references settled k)."""

    spectra: np.ndarray
    dispersions: np.ndarray | None = None
    run_levels: tuple = ()

    def gap(self, S, X) -> GapStatistic | None:
        """The gap statistic of the data's runs (their membership operator S, on
        rows X) against the references' runs."""
        if self.dispersions is None:
            return None
        data = level_dispersions(S, X, self.run_levels)
        return GapStatistic.of(levels_of(self.run_levels), data, self.dispersions)


def reference_spectra(
    X, ensemble, seed: int = 0, draws: int | None = None, eigenvalues=None
) -> References:
    """Eigenvalues of P for ``draws`` (default :data:`DRAWS`) reference data sets
    run through ``ensemble``.

    Each reference has the rows of X (at most :data:`MAX_REFERENCE_N`, drawn
    at random) and :func:`reference_count` eigenvalues are read.  The
    references are drawn here, one after the other from one generator, and
    each is then a task of its own (:func:`sca.pool.spread`): its ensemble's
    runs one after the other, its balancing and eigenvalues, on one worker.
    Given the data's eigenvalues, the first :data:`FIRST_DRAWS` references run
    alone, and the others only when those leave k in doubt (:func:`settled`);
    when all :data:`DRAWS` leave λ2 within the margin's own standard error
    (:func:`in_doubt`), more are drawn, :data:`MAX_DRAWS` in all, and k is
    read against all of them.

    Parameters
    ----------
    X : ndarray of shape (n, m)
        The data as the ensemble sees it (after ``scale``).
    ensemble : list of dict
        The ensemble the data ran through.
    seed : int, default 0
    draws : int, optional
        Reference data sets (default :data:`DRAWS`, up to :data:`MAX_DRAWS`
        when in doubt); given, no more than these run.
    eigenvalues : callable, optional
        ``eigenvalues(count)``: the data's ``count`` largest eigenvalues of P.

    Returns
    -------
    References
        ``spectra`` of shape (draws, count), descending within each row,
        zero-padded: :data:`FIRST_DRAWS` rows when those settled k (and no
        ``dispersions``), :data:`MAX_DRAWS` when :data:`DRAWS` left it in doubt.
    """
    X = np.asarray(X, dtype=float)
    rng = np.random.default_rng([int(seed), 0x5EF])
    if X.shape[0] > MAX_REFERENCE_N:
        X = X[rng.choice(X.shape[0], MAX_REFERENCE_N, replace=False)]
    count = reference_count(ensemble, X.shape[0])
    each = ensemble_work(X, ensemble_plan(ensemble))

    def drawn(size: int) -> list[tuple]:
        seeds = rng.integers(0, 2**32 - 1, size=size)
        return [(reference_data(X, rng), ensemble, int(s), count) for s in seeds]

    def run(tasks: list[tuple]) -> list:
        return spread(reference_spectrum, tasks, work=each * len(tasks))

    def spectra(done: list) -> np.ndarray:
        return np.array([values for values, _ in done])

    def references(done: list) -> References:
        if not gap_applies(ensemble):
            return References(spectra(done))
        levels = tuple(run_levels(ensemble))
        return References(spectra(done), np.array([w for _, w in done]), levels)

    # every reference of a round drawn, whether it runs or not: the generator's
    # stream, and so each reference, is the same as when all run
    tasks = drawn(DRAWS if draws is None else draws)
    if eigenvalues is None or len(tasks) <= FIRST_DRAWS:
        return references(run(tasks))
    values = eigenvalues(count)
    first = run(tasks[:FIRST_DRAWS])
    if settled(values, spectra(first)):
        return References(spectra(first))
    every = first + run(tasks[FIRST_DRAWS:])
    if draws is not None or not in_doubt(values, spectra(every)):
        return references(every)
    return references(every + run(drawn(MAX_DRAWS - len(every))))


def reference_spectrum(reference, ensemble, seed: int, count: int) -> tuple:
    """:func:`eigenvalues_of` the ensemble's runs on one reference data set, and
    the runs' :func:`~sca.reference.gap.level_dispersions`."""
    # one BLAS thread, as for the ensemble's runs: small eigenproblems on cores the
    # other references fill (two BLAS threads on a loaded machine oversubscribe its cores)
    with single_threaded():
        S = membership_operator(ensemble_labels(reference, ensemble, seed, n_jobs=1))
        return eigenvalues_of(S, count), level_dispersions(S, reference, run_levels(ensemble))
