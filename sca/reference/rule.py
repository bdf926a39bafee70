"""k from P's eigenvalues against the references' (:mod:`sca.reference`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .gap import GapStatistic, gap_choice

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
        From :func:`sca.reference.reference_spectra`, at least two.

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


def reference_k(eigenvalues, references, gap: GapStatistic | None = None) -> ReferenceChoice:
    """The number of clusters from P's eigenvalues against the references'.

    Parameters
    ----------
    eigenvalues : array-like
        P's largest eigenvalues, descending (λ1 = 1).
    references : ndarray of shape (draws, count)
        From :func:`sca.reference.reference_spectra` on the same ensemble.
    gap : GapStatistic, optional
        The gap statistic of the data's runs against the references' runs
        (:meth:`sca.reference.References.gap`); its k replaces the spectrum's
        where :func:`sca.reference.gap_choice` says so.

    Returns
    -------
    ReferenceChoice
    """
    data, refs, mean, sd = _log_scale(eigenvalues, references)
    drops, z_drops = _drops(data, refs, mean)
    choice = _spectrum_choice(data, refs, mean, sd, drops, z_drops)
    excess = data - mean

    def above(j: int) -> bool:  # λ2 ... λj all above the references' mean
        return bool(np.all(excess[1:j] > 0))

    def falls(j: int) -> bool:  # the spectrum's clearest fall, and a clear one, after λj
        return bool(z_drops[j - 1] >= MARGIN_Z and z_drops[j - 1] >= z_drops[1:j].max())

    k = gap_choice(gap, choice.k, lambda j: j < excess.size and (above(j) or falls(j)))
    if k is None or gap is None:
        return choice
    if above(k):
        seen = f"λ2 … λ{k} all stand above the references' mean"
    elif falls(k):
        seen = (
            f"the spectrum falls most after λ{k} ({z_drops[k - 1]:.1f} reference standard "
            "deviations)"
        )
    else:  # gap_choice's DECISIVE_EFFECT against a spectrum that sees no structure
        seen = "that outweighs a spectrum no higher than the references'"
    note = (
        f"the k-means runs at k = {k} find groups {np.exp(gap.effect):.1f} times tighter than "
        "on reference data without clusters, beyond what k = 1 shows (the gap statistic of "
        f"Tibshirani et al.), and {seen}: k = {k} (the spectrum alone gave k = {choice.k})"
    )
    return replace(
        choice, k=k, drop=float(drops[k - 1]), z=float(z_drops[k - 1]), notes=(note,), runner=0
    )


def _drops(data, refs, mean):
    """The data's excess over the references' mean (:func:`_log_scale`) falling
    from λ_j to λ_(j+1) (``drops[j - 1]``), and each drop in the references'
    standard deviations of theirs (the drop after λ1 is step 1's question:
    ``-inf``)."""
    excess = data - mean
    drops = excess[:-1] - excess[1:]
    ref_drops = (refs - mean)[:, :-1] - (refs - mean)[:, 1:]
    spread = np.maximum(ref_drops.std(axis=0, ddof=1) if refs.shape[0] > 1 else 0.0, MIN_DROP_SD)
    z_drops = drops / spread
    z_drops[0] = -np.inf
    return drops, z_drops


def _spectrum_choice(data, refs, mean, sd, drops, z_drops) -> ReferenceChoice:
    """k from the spectrum alone (this package's steps 1 and 2), on the log scale
    of :func:`_log_scale` with the :func:`_drops`."""
    count = data.size
    threshold = mean + MARGIN_Z * sd
    below = np.flatnonzero(data[1:] <= threshold[1:])
    k_signal = 1 + (int(below[0]) if below.size else count - 1)
    floor = float(np.exp(threshold[1])) if count > 1 else 1.0
    floors = tuple(float(f) for f in np.exp(threshold[1:]))
    excess = data - mean
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
        The first references' (:func:`sca.reference.reference_spectra`).

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
