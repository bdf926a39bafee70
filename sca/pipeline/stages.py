"""The stages of the algorithm, declared once (Meyer & Wessell, Fig. 3.1).

:data:`STAGES` is the table every runner walks (:func:`walk`):
:func:`~sca.pipeline.runs.run_stages` and :func:`sca.cluster`
(:mod:`sca.pipeline.runs`), the estimator (:mod:`sca.estimator`), and the
service's worker, whose Celery canvas and embedded runner run one task per
stage and only add storage (an artifact key per stored artifact) and
messaging (events, progress) around each entry.  Each :class:`Stage` names
its function, the options it reads, the artifacts it needs and those it
makes.  The artifacts:

==============  ==========================================================
``S``           the consensus operator (:func:`sca.pipeline.build_operator`)
``source``      how raw data is clustered (:func:`sca.pipeline.data_source`;
                None for a consensus matrix or label runs)
``scaled``      raw data's rows as the ensemble saw them (read only when the
                reference null applies)
``P``           the balanced operator P = D S D (``P.unscaled()`` is S)
``balance``     :func:`sca.pipeline.balance_dict` of the balancing
``balanced``    the :class:`sca.BalanceResult` (in memory only)
``spectrum``    :func:`sca.pipeline.spectrum_dict` of the spectrum
``found``       the :class:`sca.SpectrumResult` (in memory only)
``choice``      the spectrum with the k the iteration chose (its gap, the
                candidates' scores)
``iteration``   the :class:`sca.IterationResult`
``result``      :func:`sca.pipeline.result_dict` with element indices
==============  ==========================================================

Adding a stage is its function and its entry here (and its label on the
service's job page); an option of a stage is its :mod:`sca.options` entry
(``stage=``) and the parameter of the function that reads it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .. import options as registry
from ..balance import balance
from ..clustering import iterate, iterate_best
from ..spectral import eigenvalues_for_reference, spectrum
from .results import balance_dict, result_dict, spectrum_dict, timed
from .source import null_reference

#: Every option of the stages with its default (the registry's, :mod:`sca.options`).
DEFAULTS = registry.defaults("core")

#: Options of :func:`sca.clustering.iterate` among :data:`DEFAULTS`.
ITERATION_OPTIONS = tuple(o.name for o in registry.options_for("core", stages=("iteration",)))


@dataclass(frozen=True)
class Stage:
    """One stage of the algorithm.

    ``run(artifacts, options)`` returns the artifacts it makes, a dict with
    the keys ``makes``; ``artifacts`` holds (at least) those it ``needs``, and
    ``options`` exactly those it reads (:attr:`options`).  ``keeps`` are the
    artifacts it makes for later stages to read, which a worker stores
    between its tasks (P as arrays, the others as JSON); the rest live in
    memory.  A stage ``within`` another is run and reported as part of that
    one (its progress, its task in the worker, its time in a job's record).
    """

    name: str
    run: Callable[[Mapping, dict], dict]
    needs: tuple[str, ...]
    makes: tuple[str, ...]
    keeps: tuple[str, ...] = ()
    #: Options it reads besides those the registry assigns to it (``Option.stage``).
    reads: tuple[str, ...] = ()
    within: str | None = None

    @property
    def options(self) -> tuple[str, ...]:
        """The names of the options it reads."""
        own = (o.name for o in registry.options_for("core", stages=(self.name,)))
        return (*own, *self.reads)

    def read(self, options: Mapping) -> dict:
        """Its options out of all of them (missing ones take their default)."""
        return {name: options.get(name, DEFAULTS[name]) for name in self.options}


def _balancing(artifacts: Mapping, options: dict) -> dict:
    """Sinkhorn-Knopp: P = D S D (Sec. 2.2)."""
    balanced = balance(
        artifacts["S"], tol=options["tol"], max_iter=options["balance_max_iterations"]
    )
    return {"P": balanced.P, "balance": balance_dict(balanced), "balanced": balanced}


def _spectral(artifacts: Mapping, options: dict) -> dict:
    """Eigenvalues of P and k (Sec. 2.4 and 3): the user's, or by the k rule; on raw
    data clustered by k-means, against reference data run through the same
    ensemble (:func:`sca.pipeline.null_reference`)."""
    P = artifacts["P"]
    known: dict = {}  # P's eigenvalues read for the references' early stop, read once

    def eigenvalues(count: int):
        if count not in known:
            known[count] = eigenvalues_for_reference(P, count)
        return known[count]

    scaled = functools.cache(lambda: artifacts["scaled"])  # read once, where the null applies
    reference = null_reference(artifacts["source"], options, P.n, scaled, eigenvalues)
    found = spectrum(
        P,
        reference=None if reference is None else reference.spectra,
        known=known,
        gap_statistic=None if reference is None else reference.gap(P.unscaled(), scaled()),
        **options,
    )
    P.release_spectrum_work()
    return {"spectrum": spectrum_dict(found), "found": found}


def iteration(P, k: int, candidates, options: dict):
    """The iteration stage: with k, or with each candidate k when the spectrum
    left the cut in doubt (:func:`sca.clustering.iterate_best`).

    Returns ``(k, {candidate: score}, IterationResult)``.
    """
    opts = {name: options[name] for name in ITERATION_OPTIONS if name in options}
    if candidates:
        k, result, scores = iterate_best(P, candidates, **opts)
        return k, scores, result
    return k, {}, iterate(P, k, **opts)


def iteration_dict(P, spectrum: dict, options: dict):
    """The iteration stage from a stored :func:`spectrum_dict`.

    :func:`iteration` with the k (or the candidates) the spectrum chose.

    Parameters
    ----------
    P : ConsensusOperator
        The balanced ``P = D S D``.
    spectrum : dict
        The spectrum's :func:`spectrum_dict`.
    options : dict
        Checked options; the iteration's (``seed``, ``starts``, ``stable``,
        ``max_iterations``, ``split``, ...) are read.

    Returns
    -------
    choice : dict
        The spectrum's dict with the chosen k, its gap and the candidates'
        scores (``k_scores``).
    result : IterationResult
        The outcome of the iteration at that k.
    """
    k, scores, result = iteration(P, spectrum["k"], spectrum.get("k_candidates") or (), options)
    values = spectrum["eigenvalues"]
    gap = values[k - 1] - values[k] if k < len(values) else None
    return {
        **spectrum,
        "k": k,
        "gap": spectrum["gap"] if k == spectrum["k"] else gap,
        "k_scores": {str(c): v for c, v in scores.items()},
    }, result


def _iteration(artifacts: Mapping, options: dict) -> dict:
    """The stochastic iteration x_t^T = x_{t-1}^T P (Sec. 3)."""
    choice, result = iteration_dict(artifacts["P"], artifacts["spectrum"], options)
    return {"choice": choice, "iteration": result}


def _diagnostics(artifacts: Mapping, options: dict) -> dict:
    """The result with its uncoupling measures and confidences (Definition 2.7)."""
    P = artifacts["P"]
    result = result_dict(
        P.unscaled(), P, artifacts["balance"], artifacts["choice"], artifacts["iteration"]
    )
    return {"result": result}


#: The stages in order.  ``seed`` also draws the spectral stage's null.
STAGES: tuple[Stage, ...] = (
    Stage(
        "balancing",
        _balancing,
        needs=("S",),
        makes=("P", "balance", "balanced"),
        keeps=("P", "balance"),
    ),
    Stage(
        "spectral",
        _spectral,
        needs=("P", "source", "scaled"),
        makes=("spectrum", "found"),
        keeps=("spectrum",),
        reads=("seed",),
    ),
    Stage("iteration", _iteration, needs=("P", "spectrum"), makes=("choice", "iteration")),
    Stage(
        "diagnostics",
        _diagnostics,
        needs=("P", "balance", "choice", "iteration"),
        makes=("result",),
        keeps=("result",),
        within="iteration",
    ),
)

#: The stages reported on their own (a job's record, the worker's tasks, progress).
TASKS: tuple[str, ...] = tuple(stage.name for stage in STAGES if stage.within is None)


def parts(task: str) -> tuple[Stage, ...]:
    """The stage ``task`` and those run within it, in order."""
    return tuple(s for s in STAGES if task in (s.name, s.within))


def walk(
    artifacts: dict,
    options: Mapping,
    until: str | None = None,
    timings: dict | None = None,
    progress=None,
) -> dict:
    """Run the stages in order on ``artifacts`` (updated in place and returned).

    ``options`` are checked ones (every option with a value); the walk stops
    after stage ``until`` when given.  Each stage's time goes to
    ``timings[name]``; ``progress(stage, fraction)`` is called as each
    reported stage (:data:`TASKS`) starts.
    """
    timings = {} if timings is None else timings
    for stage in STAGES:
        if progress is not None and stage.within is None:
            progress(stage.name, 0.0)
        with timed(timings, stage.name):
            artifacts.update(stage.run(artifacts, stage.read(options)))
        if stage.name == until:
            break
    return artifacts
