"""The stages of the algorithm, declared once (Meyer & Wessell, Fig. 3.1).

:data:`STAGES` is the table every runner walks: :func:`run_stages` and
:func:`sca.cluster` here, the estimator (:mod:`sca.estimator`), and the
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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from .. import options as registry
from ..balance import balance
from ..clustering import iterate, iterate_best
from ..spectral import eigenvalues_for_reference, spectrum
from .results import balance_dict, check_ids, result_dict, spectrum_dict, timed, with_ids
from .source import RawData, build_operator, null_reference

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

    reference = null_reference(
        artifacts["source"], options, P.n, lambda: artifacts["scaled"], eigenvalues
    )
    found = spectrum(P, reference=reference, known=known, **options)
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


def _options(options: dict | None, n: int | None = None) -> dict:
    """The options with defaults filled in, checked by the registry (against n when given)."""
    return registry.validate(options, n=n, scope="core")


def _start(S, raw: RawData | None) -> dict:
    """The artifacts a walk starts from."""
    return {
        "S": S,
        "source": None if raw is None else raw.source,
        "scaled": None if raw is None else raw.scaled,
    }


def prepare(
    S,
    options: dict | None = None,
    timings: dict | None = None,
    progress=None,
    raw: RawData | None = None,
):
    """Balancing and spectrum of S: ``(balanced, spectrum_result)``.

    ``progress(stage, fraction)``, when given, is called as each stage starts;
    ``raw`` (from :func:`build_operator`) gives raw data its reference null
    (:func:`null_reference`).
    """
    done = walk(_start(S, raw), _options(options, S.n), "spectral", timings, progress)
    return done["balanced"], done["found"]


def run_stages(
    S,
    options: dict | None = None,
    timings: dict | None = None,
    progress=None,
    raw: RawData | None = None,
):
    """Balancing, spectrum and iteration on operator S.

    The stages of :data:`STAGES` up to the iteration, as :func:`cluster` walks
    them (Fig. 3.1, steps 2-5).

    Parameters
    ----------
    S : ConsensusOperator
        The consensus operator.
    options : dict, optional
        Clustering options (:mod:`sca.options`); defaults fill the rest.
    timings : dict, optional
        Receives the seconds per stage (a new dict when None).
    progress : callable, optional
        ``progress(stage, fraction)`` is called as each stage starts.
    raw : RawData, optional
        As for :func:`prepare`: from :func:`build_operator`, gives raw data its
        reference null (:func:`null_reference`).

    Returns
    -------
    balanced : BalanceResult
        The balancing.
    spectrum : SpectrumResult
        The spectrum, with the k the iteration chose (its gap and the
        candidates' scores).
    result : IterationResult
        The iteration's outcome.
    timings : dict of str to float
        Seconds per stage.

    Raises
    ------
    SCAError
        When an option is invalid (``field`` names it, e.g. ``"options.k"``).
    BalancingError
        When balancing stops at its iteration cap.
    IterationError
        When no start of the iteration settles within ``max_iterations``.

    See Also
    --------
    cluster : Every stage, from the input to the JSON result.
    """
    timings = {} if timings is None else timings
    done = walk(_start(S, raw), _options(options, S.n), "iteration", timings, progress)
    spec, choice = done["found"], done["choice"]
    k = choice["k"]
    gap = float(spec.eigenvalues[k - 1] - spec.eigenvalues[k]) if k < spec.k_hat else float("nan")
    scores = {int(c): v for c, v in choice["k_scores"].items()}
    return done["balanced"], replace(spec, k=k, gap=gap, scores=scores), done["iteration"], timings


def clustering(
    S,
    options: dict | None = None,
    ids=None,
    timings: dict | None = None,
    progress=None,
    raw: RawData | None = None,
) -> dict:
    """Every stage on operator S; returns the artifacts, ``result`` being the
    JSON result with the elements named by ``ids`` and, when ``timings`` is
    given, the seconds per stage."""
    clock = {} if timings is None else timings
    done = walk(_start(S, raw), _options(options, S.n), None, clock, progress)
    result = with_ids(done["result"], ids)
    if ids is not None:
        result["ids"] = list(ids)
    if timings is not None:
        result["timings"] = {stage: round(sec, 6) for stage, sec in timings.items()}
    done["result"] = result
    return done


def cluster(ids=None, options=None, progress=None, **inputs) -> dict:
    """The stochastic clustering algorithm end to end (Fig. 3.1).

    The consensus operator is reached from exactly one input; the stages of
    :data:`STAGES` (balancing, spectrum, iteration, diagnostics) then run on it.
    Raw data without ``ensemble`` or ``snn`` is clustered by
    :func:`sca.ensemble.default_ensemble`.

    Parameters
    ----------
    ids : sequence of str, optional
        The elements' names, n distinct strings; the result names the elements
        by them (0-based indices without).
    options : dict, optional
        Clustering options (:mod:`sca.options`: ``k``, ``rule``, ``seed``,
        ``scale``, ...); defaults fill the rest.
    progress : callable, optional
        ``progress(stage, fraction)`` is called as each stage starts (and as
        an ensemble's runs finish).
    **inputs : dict, optional
        Exactly one input: ``consensus`` (an ``n x n`` similarity matrix),
        ``labels`` (``n x r`` label runs) or ``data`` (``n x m`` raw data),
        the last with, optionally, ``ensemble`` (a spec, as for
        :func:`sca.ensemble_labels`) or ``snn`` (κ, or
        ``{"kappa", "metric"}``).

    Returns
    -------
    dict
        The JSON result (:func:`result_dict`), with the elements named by
        ``ids`` and per-stage ``timings``.

    Raises
    ------
    SCAError
        When the inputs are not exactly one (``field="input"``), an input is
        invalid (``field`` names it: ``"consensus"``, ``"labels"``, ``"data"``,
        ``"ensemble[0].k"``, ``"ids"``, ...) or an option is
        (``"options.k"``, ...).
    BalancingError
        When balancing stops at its iteration cap.
    IterationError
        When no start of the iteration settles within ``max_iterations``.

    See Also
    --------
    StochasticClustering : The same as a scikit-learn estimator.
    run_stages : The stages on an operator already built.

    References
    ----------
    .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 3,
       Fig. 3.1.
    """
    timings: dict = {}
    seed = (options or {}).get("seed", 0)
    scale = (options or {}).get("scale")
    S, raw = build_operator(seed=seed, timings=timings, progress=progress, scale=scale, **inputs)
    return clustering(S, options, check_ids(ids, S.n), timings, progress, raw)["result"]
