"""The stages run end to end: from an input, or an operator, to the result.

:func:`cluster` builds the consensus operator from one input
(:func:`sca.pipeline.build_operator`) and walks every stage of
:data:`sca.pipeline.STAGES` on it (:func:`clustering`); :func:`run_stages`
walks them up to the iteration and hands back the core's own results, and
:func:`prepare` up to the spectrum.  Options are checked here, once, by the
registry (:mod:`sca.options`).
"""

from __future__ import annotations

from dataclasses import replace

from .. import options as registry
from .ids import check_ids, with_ids
from .results import rounded
from .source import RawData, build_operator
from .stages import walk


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

    The stages of :data:`~sca.pipeline.stages.STAGES` up to the iteration, as
    :func:`cluster` walks them (Fig. 3.1, steps 2-5).

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
        result["timings"] = rounded(timings)
    done["result"] = result
    return done


def cluster(ids=None, options=None, progress=None, **inputs) -> dict:
    """The stochastic clustering algorithm end to end (Fig. 3.1).

    The consensus operator is reached from exactly one input; the stages of
    :data:`~sca.pipeline.stages.STAGES` (balancing, spectrum, iteration,
    diagnostics) then run on it.
    Raw data without ``ensemble`` or ``snn`` is clustered by
    :func:`sca.ensemble_spec.default_ensemble`.

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
