"""The number of clusters of raw data, against reference data without clusters.

On label runs the noise floor of :mod:`sca.null` permutes each run's labels:
it asks "are the runs independent random partitions?".  k-means runs on the
same rows are never independent: on data without clusters each run cuts
nearly the same cells, so the consensus of an ensemble on pure noise has
many eigenvalues of P far above that floor.  For raw data the question is
instead the gap statistic's (Tibshirani, Walther & Hastie 2001) and M3C's
(John et al. 2020): what does the *same ensemble* make of data that has the
shape of these rows but no clusters?

Reference data are Gaussian rows with the data's principal axes and
variances (its covariance; for more features than rows, its ``n - 1``
principal components), so a reference keeps the spread, the correlations
and the effective dimension of the data and loses only its groups.  Each
reference runs through the same ensemble, is balanced (Sec. 2.2) and its
eigenvalues read (Sec. 2.4), as the data's are.

k then follows from the data's spectrum against the references', on a log
scale (``-log λ_j`` is the rate at which the walk P forgets its start
inside j groups, Sec. 3):

1. Eigenvalues above the references: ``log λ_j`` above the references' mean
   plus :data:`MARGIN_Z` standard deviations, counted from λ2 until the
   first that is not: ``k_signal``.  None (``k_signal = 1``): no cluster
   structure, k = 1 -- unless the spectrum falls off a cliff further on
   (step 2's drop above :data:`CLIFF_Z` of the references' standard
   deviations, after eigenvalues well above theirs): many groups of similar
   size, which runs at the coarse levels lump together in ever different
   ways, can hold λ2 down to a reference's while λ3 ... λk stand far above.
2. Among k = 2 ... k_signal (and k_signal + 1 when λ_(k_signal+1) is above
   the references' mean, short of the margin), the cut where the data's excess over the
   references, ``e_j = log λ_j - mean log λ_j^ref``, drops most from λ_k
   to λ_(k+1): the Perron cluster (Definition 2.9) with each gap measured
   against the gap that data without clusters shows at the same place.
   A cut further on, up to twice k_signal, after eigenvalues that all stand
   above the references' mean, is taken when its drop is larger still and at least
   :data:`BEYOND_Z` of the references' standard deviations: groups that
   the coarse runs lump together can hold one eigenvalue below the margin.
   Within a cluster the ensemble's finer runs leave the smooth spectrum of
   a reference; between clusters the spectrum stays near 1; the cut is
   where one gives way to the other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .balance import balance
from .ensemble import ensemble_labels, ensemble_work
from .ensemble_spec import ensemble_items, ensemble_plan
from .errors import BalancingError
from .inputs import membership_operator
from .operators.kernels import single_threaded
from .pool import spread

#: Reference data sets run through the ensemble.
DRAWS = 4
#: Reference data sets at most: more than :data:`DRAWS` run only when those leave
#: λ2 within the margin's standard error (:func:`in_doubt`).
MAX_DRAWS = 8
#: Reference data sets run first; the others only when these leave k in doubt
#: (:func:`settled`).
FIRST_DRAWS = 2
#: k is settled by the first references when λ2 ... λk each stand this far above
#: every one of theirs (log scale: a tenth higher) ...
SETTLED_EXCESS = float(np.log(1.1))
#: ... the spectrum falls after λk by this many of their standard deviations ...
SETTLED_Z = 6.0
#: An eigenvalue is signal above the references' mean plus this many standard
#: deviations (of log λ).
MARGIN_Z = 2.0
#: The least standard deviation of a reference's log-eigenvalue (a few draws can agree by chance).
MIN_SD = 0.01
#: A cut past the eigenvalues above the margin, after eigenvalues all above the
#: references' mean, needs a drop this many of the references' standard deviations.
BEYOND_Z = 5.0
#: A drop this many of the references' standard deviations is structure even with λ2 low.
CLIFF_Z = 10.0
#: ... and only when λ2 ... λk stand this far above the references on average (log
#: scale: half as high again), not a little above them all the way down, as a uniform
#: hypercube's do (k-means cuts its 2^d corners alike in every run, where Gaussian
#: references have no corners).
CLIFF_EXCESS = float(np.log(1.5))
#: The least standard deviation of the references' drops (log scale).
MIN_DROP_SD = 0.05
#: A second cut with this share of the chosen cut's drop is reported as plausible too.
NEAR = 0.8
#: Eigenvalues below this are treated as this (their logarithm says nothing).
TINY = 1e-3
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


def eigenvalues_of(labels, count: int) -> np.ndarray:
    """The ``count`` largest eigenvalues of P = D S D for label runs (zero-padded)."""
    S = membership_operator(labels)
    try:  # roughly, as a null draw is balanced (sca.null): the rule reads log-gaps
        P = balance(S, tol=BALANCE_TOL, find_components=False).P
    except BalancingError as exc:  # a rough P still has the spectrum's shape
        P = exc.partial.P
    values = P.eigenvalues(min(count, P.n), few=True)[:count]
    return np.concatenate([values, np.zeros(count - values.size)])


def reference_spectra(
    X, ensemble, seed: int = 0, draws: int | None = None, eigenvalues=None
) -> np.ndarray:
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
    ndarray of shape (draws, count)
        Descending within each row, zero-padded; :data:`FIRST_DRAWS` rows
        when those settled k, :data:`MAX_DRAWS` when :data:`DRAWS` left it in doubt.
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

    def spectra(tasks: list[tuple]) -> np.ndarray:
        return np.array(spread(reference_spectrum, tasks, work=each * len(tasks)))

    # every reference of a round drawn, whether it runs or not: the generator's
    # stream, and so each reference, is the same as when all run
    tasks = drawn(DRAWS if draws is None else draws)
    if eigenvalues is None or len(tasks) <= FIRST_DRAWS:
        return spectra(tasks)
    values = eigenvalues(count)
    first = spectra(tasks[:FIRST_DRAWS])
    if settled(values, first):
        return first
    every = np.concatenate([first, spectra(tasks[FIRST_DRAWS:])])
    if draws is not None or not in_doubt(values, every):
        return every
    return np.concatenate([every, spectra(drawn(MAX_DRAWS - every.shape[0]))])


def reference_spectrum(reference, ensemble, seed: int, count: int) -> np.ndarray:
    """:func:`eigenvalues_of` the ensemble's runs on one reference data set."""
    # one BLAS thread, as for the ensemble's runs: small eigenproblems on cores the
    # other references fill (two BLAS threads on a loaded machine oversubscribe its cores)
    with single_threaded():
        return eigenvalues_of(ensemble_labels(reference, ensemble, seed, n_jobs=1), count)


@dataclass(frozen=True)
class ReferenceChoice:
    """k against the references: ``k``, ``k_signal`` (eigenvalues above the
    references, λ1 included), ``floor`` (the threshold of λ2) and ``floors`` (that
    of each eigenvalue from λ2 on), the excess drop at k and its size in the
    references' standard deviations (``z``), ``notes``, and ``runner``: another cut
    nearly as clear (0: none)."""

    k: int
    k_signal: int
    floor: float
    drop: float
    z: float
    notes: tuple
    floors: tuple = ()
    runner: int = 0


def _log_scale(eigenvalues, references):
    """The data's and the references' log-eigenvalues over the count both have,
    with the references' mean and standard deviation of each."""
    refs = np.log(np.maximum(np.asarray(references, dtype=float), TINY))
    count = min(refs.shape[1], len(eigenvalues))
    data = np.log(np.maximum(np.asarray(eigenvalues, dtype=float)[:count], TINY))
    refs = refs[:, :count]
    mean = refs.mean(axis=0)
    sd = np.maximum(refs.std(axis=0, ddof=1) if refs.shape[0] > 1 else 0.0, MIN_SD)
    return data, refs, mean, sd


def in_doubt(eigenvalues, references) -> bool:
    """Whether λ2 lies too near its threshold for these references to tell whether
    P has any eigenvalue above them: more references are then worth drawing.

    The threshold ``mean + MARGIN_Z sd`` is itself estimated from B
    references; with Gaussian log-eigenvalues its standard error is about
    ``sd sqrt(1/B + MARGIN_Z^2 / (2 (B - 1)))`` (the mean's and the standard
    deviation's).  Structure or none is in doubt when λ2 lies within that
    distance of its threshold: a few references can spread wider or
    narrower than many by chance (with four, the standard deviation's own
    error is about 40 %).  Once λ2 stands clear, k is the cut where the
    spectrum drops most, which more references hardly move.

    Parameters
    ----------
    eigenvalues : array-like
        P's largest eigenvalues, descending (λ1 = 1).
    references : ndarray of shape (draws, count)
        From :func:`reference_spectra`, at least two.

    Returns
    -------
    bool
    """
    data, refs, mean, sd = _log_scale(eigenvalues, references)
    if data.size < 2:
        return False
    draws = refs.shape[0]
    error = sd[1] * np.sqrt(1 / draws + MARGIN_Z**2 / (2 * (draws - 1)))
    return bool(abs(data[1] - (mean[1] + MARGIN_Z * sd[1])) < error)


def reference_k(eigenvalues, references) -> ReferenceChoice:
    """The number of clusters from P's eigenvalues against the references'.

    Parameters
    ----------
    eigenvalues : array-like
        P's largest eigenvalues, descending (λ1 = 1).
    references : ndarray of shape (draws, count)
        From :func:`reference_spectra` on the same ensemble.

    Returns
    -------
    ReferenceChoice
    """
    data, refs, mean, sd = _log_scale(eigenvalues, references)
    count = data.size
    threshold = mean + MARGIN_Z * sd
    below = np.flatnonzero(data[1:] <= threshold[1:])
    k_signal = 1 + (int(below[0]) if below.size else count - 1)
    floor = float(np.exp(threshold[1])) if count > 1 else 1.0
    floors = tuple(float(f) for f in np.exp(threshold[1:]))
    excess = data - mean
    drops = excess[:-1] - excess[1:]  # drops[j - 1]: from λ_j to λ_(j+1)
    ref_drops = (refs - mean)[:, :-1] - (refs - mean)[:, 1:]
    spread = np.maximum(ref_drops.std(axis=0, ddof=1) if refs.shape[0] > 1 else 0.0, MIN_DROP_SD)
    z_drops = drops / spread
    z_drops[0] = -np.inf  # the drop after λ1 = 1 is step 1's question
    if k_signal == 1:
        cliff = int(np.argmax(z_drops))
        held = float(np.mean(excess[1 : cliff + 1])) if cliff else 0.0
        if z_drops[cliff] <= CLIFF_Z or held < CLIFF_EXCESS:
            note = (
                f"no cluster structure: λ2 = {np.exp(data[1]):.3f} is within what the same "
                f"ensemble gives on {refs.shape[0]} reference data sets with the data's spread "
                f"and no clusters (mean {np.exp(mean[1]):.3f}, threshold {floor:.3f})"
            )
            return ReferenceChoice(1, 1, floor, 0.0, 0.0, (note,), floors)
        k = cliff + 1
        notes = [
            f"λ2 = {np.exp(data[1]):.3f} is no higher than on reference data without clusters, "
            f"but the spectrum falls off a cliff after λ{k} = {np.exp(data[k - 1]):.3f} "
            f"(to λ{k + 1} = {np.exp(data[k]):.3f}), {z_drops[cliff]:.0f} reference standard "
            f"deviations: {k} groups that the coarse runs lump together in ever different ways"
        ]
        return ReferenceChoice(
            k, k, floor, float(drops[cliff]), float(z_drops[cliff]), tuple(notes), floors
        )
    # λ_(k_signal + 1) may still belong to the groups when it stands above the
    # references' mean, short of the margin: then the cut may fall after it
    beyond = k_signal < count and data[k_signal] > mean[k_signal]
    top = min(k_signal + int(beyond), drops.size)
    k = 1 + int(np.argmax(drops[1:top])) + 1
    # further on (at most twice k_signal), a clear cut after eigenvalues that all stand
    # above the references' mean: groups that runs at the coarse levels lump together
    # (λ_(k_signal + 1) held down below the margin) and the finer runs cut apart
    reach = top
    while reach < min(drops.size, 2 * k_signal) and excess[reach] > 0:
        reach += 1
    if reach > top:
        far = top + int(np.argmax(drops[top:reach]))
        if drops[far] > drops[k - 1] and z_drops[far] >= BEYOND_Z:
            k, top = far + 1, reach
    drop, z = float(drops[k - 1]), float(z_drops[k - 1])
    notes = [
        f"{k_signal} eigenvalue(s) of P, λ1 included, lie above what the same ensemble gives "
        f"on reference data without clusters; k = {k} is where the spectrum falls most "
        f"against the references (λ{k} = {np.exp(data[k - 1]):.3f}, "
        f"λ{k + 1} = {np.exp(data[k]):.3f}), {z:.1f} reference standard deviations"
    ]
    others = np.delete(drops[1:top], k - 2)
    runner = 0
    if others.size and others.max() > NEAR * drop:
        runner = 2 + int(np.flatnonzero(drops[1:top] == others.max())[0])
        notes.append(
            f"the cut at k = {k} is not much clearer than at k = {runner}: both are plausible"
        )
    return ReferenceChoice(k, k_signal, floor, drop, z, tuple(notes), floors, runner)


def settled(eigenvalues, references) -> bool:
    """Whether the first references already settle k, so that more would not move it.

    Only a clear structure is settled: k >= 2, λ2 ... λk each above every
    reference's by :data:`SETTLED_EXCESS` (log scale), the spectrum falling
    after λk by :data:`SETTLED_Z` of the references' standard deviations
    (floored at :data:`MIN_DROP_SD`: a fall of at least 0.3 on the log scale),
    and no other cut nearly as clear.  k = 1 and every doubtful case are
    decided against all :data:`DRAWS` references.

    Parameters
    ----------
    eigenvalues : array-like
        P's largest eigenvalues, descending (λ1 = 1).
    references : ndarray of shape (draws, count)
        The first references' (:func:`reference_spectra`).

    Returns
    -------
    bool
    """
    choice = reference_k(eigenvalues, references)
    if choice.k < 2 or choice.z < SETTLED_Z or choice.runner:
        return False
    data = np.log(np.maximum(np.asarray(eigenvalues, dtype=float)[1 : choice.k], TINY))
    refs = np.log(np.maximum(np.asarray(references, dtype=float)[:, 1 : choice.k], TINY))
    return bool(np.all(data - refs.max(axis=0) >= SETTLED_EXCESS))
