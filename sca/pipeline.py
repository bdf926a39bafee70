"""The whole algorithm, stage by stage, with results as JSON-ready dicts.

The command line and the service's worker both call these functions, so
their results have the same shape: ``k``, ``clusters`` (lists of ids, or
0-based indices without ids), ``labels``, ``eigenvalues`` (descending),
``lambda2``, ``gap``, ``balancing``, ``iterations``, ``uncoupling``,
``solutions``, ``membership``, ``trace`` and per-stage ``timings`` (seconds).
"""

from __future__ import annotations

import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np

from . import options as registry
from .balance import balance
from .clustering import iterate, iterate_best
from .custom import custom_cluster, neighbours
from .diagnostics import confidence, uncoupling_measure
from .ensemble import default_ensemble, ensemble_fit, needs_nonnegative
from .errors import SCAError
from .inputs import (
    Scaling,
    check_data,
    consensus_operator,
    fit_scaling,
    membership_operator,
    snn_operator,
)
from .reference import reference_applies, reference_spectra
from .spectral import MIN_NULL_N, spectrum

#: Options of the balancing / spectral / iteration stages and their defaults (the
#: registry's, :mod:`sca.options`).
DEFAULTS = registry.defaults("core")

#: Options of :func:`sca.clustering.iterate` among :data:`DEFAULTS`.
ITERATION_OPTIONS = tuple(o.name for o in registry.options_for("core", stages=("iteration",)))


@contextmanager
def timed(timings: dict, stage: str):
    start = time.perf_counter()
    yield
    timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start


def check_ids(ids, n: int):
    """Element ids: n distinct strings (or None)."""
    if ids is None:
        return None
    ids = [str(i) for i in ids]
    if len(ids) != n:
        raise SCAError(f"ids has {len(ids)} entries for n = {n} elements", "ids")
    repeated = [i for i, count in Counter(ids).items() if count > 1]
    if repeated:
        raise SCAError(f"ids must be distinct; {repeated[0]!r} repeats", "ids")
    return ids


def resolve_element(element, ids, n: int) -> int:
    """An element given by id (when ids exist) or by 0-based index."""
    if ids is not None and str(element) in ids:
        return ids.index(str(element))
    try:
        index = int(element)
    except (TypeError, ValueError):
        raise SCAError(f"no element {element!r}", "element") from None
    if str(index) != str(element).strip() or not 0 <= index < n:
        raise SCAError(f"no element {element!r}", "element")
    return index


def data_source(X, ensemble=None, snn=None, scale: str | None = None) -> dict:
    """What clusters raw data X: ``{"snn": ...}`` or ``{"ensemble": spec}``, and ``scale``.

    Without ``ensemble`` and ``snn`` the ensemble is
    :func:`sca.ensemble.default_ensemble`; both at once is an error.  Every
    interface (this module, the service, the command line) resolves raw data
    here, so they run the same default.
    """
    if ensemble is not None and snn is not None:
        raise SCAError("data takes ensemble or snn, not both", "ensemble")
    scale = registry.OPTIONS["scale"].default if scale is None else scale
    registry.check("scale", scale)
    if snn is not None:
        return {"snn": snn, "scale": scale}
    return {"ensemble": default_ensemble(len(X)) if ensemble is None else ensemble, "scale": scale}


@dataclass(frozen=True, eq=False)
class RawData:
    """Raw data and how the ensemble or the SNN saw it.

    ``X`` as given, ``scaled`` as the ensemble or the SNN read it
    (``scaling``, the ``scale`` option fitted on X), ``source`` what clusters
    it (:func:`data_source`), and ``fitted`` the ensemble's labels and models
    (:func:`sca.ensemble.ensemble_fit`; None with the SNN), for new rows.
    """

    X: np.ndarray
    scaled: np.ndarray
    scaling: Scaling
    source: dict
    fitted: dict | None = None


def build_operator(
    data=None,
    ensemble=None,
    consensus=None,
    labels=None,
    snn=None,
    seed: int = 0,
    timings: dict | None = None,
    progress=None,
    scale: str | None = None,
):
    """Reach the consensus operator from exactly one input.

    Raw data without ``ensemble`` or ``snn`` is clustered by
    :func:`sca.ensemble.default_ensemble`, after its columns are scaled by
    ``scale`` (the option's default when None; :func:`sca.inputs.fit_scaling`).
    Returns ``(operator, raw)``: raw is a :class:`RawData` for raw data (with
    the ensemble's models, a few centres a run, for new rows), else None.
    """
    timings = {} if timings is None else timings
    registry.one_input(
        [
            name
            for name, value in (("data", data), ("consensus", consensus), ("labels", labels))
            if value is not None
        ]
    )
    if consensus is not None:
        with timed(timings, "consensus"):
            return consensus_operator(consensus), None
    if labels is not None:
        with timed(timings, "consensus"):
            return membership_operator(labels), None
    X = check_data(data)
    source = data_source(X, ensemble, snn, scale)
    if snn is not None:
        kappa, metric = (
            (snn, "euclidean")
            if not isinstance(snn, dict)
            else (snn.get("kappa"), snn.get("metric", "euclidean"))
        )
        with timed(timings, "consensus"):
            scaling = fit_scaling(X, source["scale"])
            scaled = scaling.transform(X)
            S = snn_operator(scaled, kappa, metric)  # type: ignore[arg-type]  # checked there
            return S, RawData(X, scaled, scaling, source)
    with timed(timings, "ensemble"):
        scaling = fit_scaling(X, source["scale"], not needs_nonnegative(source["ensemble"]))
        scaled = scaling.transform(X)
        report = (
            None if progress is None else (lambda done, total: progress("ensemble", done / total))
        )
        fitted = ensemble_fit(scaled, source["ensemble"], seed, progress=report)
    with timed(timings, "consensus"):
        return membership_operator(fitted["labels"]), RawData(X, scaled, scaling, source, fitted)


def null_reference(source: dict, options: dict, n: int, scaled) -> np.ndarray | None:
    """Eigenvalues of reference data without clusters run through raw data's
    ensemble (:func:`sca.reference.reference_spectra`), the null of the
    ``"noise"`` rule on raw data; None where that null does not apply (another
    rule, k given, the SNN, NMF, fewer than ``MIN_NULL_N`` rows) and the
    spectral stage falls back on its own rules (:mod:`sca.spectral`).

    ``source`` is :func:`data_source`'s, ``n`` the number of rows, and
    ``scaled()`` gives the rows as the ensemble saw them, read only when the
    null applies."""
    spec = source.get("ensemble")
    if options["rule"] != "noise" or options["k"] is not None or spec is None:
        return None
    if n < MIN_NULL_N or not reference_applies(spec):  # too few rows: see sca.spectral
        return None
    return reference_spectra(scaled(), spec, options["seed"])


def _options(options: dict | None, n: int | None = None) -> dict:
    """The options with defaults filled in, checked by the registry (against n when given)."""
    return registry.validate(options, n=n, scope="core")


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
    opts = _options(options, S.n)
    timings = {} if timings is None else timings
    if progress is not None:
        progress("balancing", 0.0)
    with timed(timings, "balancing"):
        balanced = balance(S, tol=opts["tol"], max_iter=opts["balance_max_iterations"])
    if progress is not None:
        progress("spectral", 0.0)
    with timed(timings, "spectral"):
        spec = spectrum(
            balanced.P,
            k=opts["k"],
            k_hat=opts["k_hat"],
            min_k=opts["min_k"],
            max_k=opts["max_k"],
            rule=opts["rule"],
            seed=opts["seed"],
            reference=None
            if raw is None
            else null_reference(raw.source, opts, S.n, lambda: raw.scaled),
        )
    return balanced, spec


def run_stages(
    S,
    options: dict | None = None,
    timings: dict | None = None,
    progress=None,
    raw: RawData | None = None,
):
    """Balancing, spectrum and iteration on operator S.

    Returns ``(balanced, spectrum_result, iteration_result, timings)``;
    ``progress(stage, fraction)`` is called as each stage starts; ``raw`` as
    for :func:`prepare`.
    """
    opts = _options(options, S.n)
    timings = {} if timings is None else timings
    balanced, spec = prepare(S, opts, timings, progress, raw)
    if progress is not None:
        progress("iteration", 0.0)
    with timed(timings, "iteration"):
        k, scores, result = iteration(balanced.P, spec.k, spec.candidates, opts)
    gap = float(spec.eigenvalues[k - 1] - spec.eigenvalues[k]) if k < spec.k_hat else float("nan")
    return balanced, replace(spec, k=k, gap=gap, scores=scores), result, timings


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
    """:func:`iteration` from a stored :func:`spectrum_dict`; returns the dict
    with the chosen k (and its gap and the candidates' scores) and the result."""
    k, scores, result = iteration(P, spectrum["k"], spectrum.get("k_candidates") or (), options)
    values = spectrum["eigenvalues"]
    gap = values[k - 1] - values[k] if k < len(values) else None
    return {
        **spectrum,
        "k": k,
        "gap": spectrum["gap"] if k == spectrum["k"] else gap,
        "k_scores": {str(c): v for c, v in scores.items()},
    }, result


def balance_dict(balanced) -> dict:
    """What the result reports of balancing (JSON-ready)."""
    return {
        "iterations": int(balanced.iterations),
        "residual": float(balanced.residual),
        "components": int(balanced.n_components),
    }


def spectrum_dict(spec) -> dict:
    """What the result reports of the spectrum (JSON-ready; no gap is ``None``)."""
    return {
        "k": int(spec.k),
        "eigenvalues": spec.eigenvalues.tolist(),
        "lambda2": spec.lambda2,
        "gap": None if np.isnan(spec.gap) else spec.gap,
        "rule": spec.rule,
        "k_hat": spec.k_hat,
        "noise_floor": spec.floor,
        "k_signal": spec.k_signal,
        "structure": spec.structure,
        "k_hat_capped": spec.capped,
        "notes": list(spec.notes),
        "k_candidates": list(spec.candidates),
        "k_scores": {str(k): v for k, v in spec.scores.items()},
    }


def result_dict(
    S, P, balance: dict, spectrum: dict, result, ids=None, timings: dict | None = None
) -> dict:
    """The JSON result of a clustering (same shape for the CLI and the service).

    ``balance`` and ``spectrum`` are :func:`balance_dict` and
    :func:`spectrum_dict` (a worker stores them between stages); ``timings``
    (seconds per stage) is reported when given.
    """
    names = (lambda idx: [ids[i] for i in idx]) if ids is not None else (lambda idx: idx.tolist())
    labels = result.labels
    order = np.argsort(labels, kind="stable")  # members of each cluster, ascending
    bounds = np.cumsum(np.bincount(labels, minlength=int(labels.max()) + 1))[:-1]
    clusters = [names(members) for members in np.split(order, bounds)]
    with timed({} if timings is None else timings, "diagnostics"):
        uncoupling = {"S": uncoupling_measure(S, labels), "P": uncoupling_measure(P, labels)}
        firm = confidence(P, labels)
    out = {
        "n": S.n,
        "k": spectrum["k"],
        "clusters": clusters,
        "labels": labels.tolist(),
        "eigenvalues": list(spectrum["eigenvalues"]),
        "lambda2": spectrum["lambda2"],
        "gap": spectrum["gap"],
        "rule": spectrum["rule"],
        "k_hat": spectrum.get("k_hat", len(spectrum["eigenvalues"])),
        "noise_floor": spectrum.get("noise_floor"),
        "k_signal": spectrum.get("k_signal"),
        "structure": spectrum.get("structure"),
        "k_hat_capped": spectrum.get("k_hat_capped", False),
        "notes": list(spectrum.get("notes", [])),
        "k_candidates": list(spectrum.get("k_candidates", [])),
        "k_scores": dict(spectrum.get("k_scores", {})),
        "confidence": np.round(firm["elements"], 6).tolist(),
        "cluster_confidence": np.round(firm["clusters"], 6).tolist(),
        "cluster_uncoupling": np.round(firm["uncoupling"], 6).tolist(),
        "balancing": dict(balance),
        "iterations": result.iterations,
        "uncoupling": uncoupling,
        "solutions": [
            {"labels": sol.tolist(), "frequency": freq} for sol, freq in result.solutions
        ],
        "failed_starts": result.failed_starts,
        "rounds": result.rounds,
    }
    if ids is not None:
        out["ids"] = list(ids)
    if result.membership is not None:
        out["membership"] = np.round(result.membership, 6).tolist()
    if result.trace is not None:
        out["trace"] = [
            {
                "t": step["t"],
                "x": None if step["x"] is None else step["x"].tolist(),
                "clusters": None
                if step["labels"] is None
                else [
                    names(np.flatnonzero(step["labels"] == c))
                    for c in range(int(step["labels"].max()) + 1)
                ],
            }
            for step in result.trace
        ]
    if timings is not None:
        out["timings"] = {stage: round(sec, 6) for stage, sec in timings.items()}
    return out


def cluster(ids=None, options=None, progress=None, **inputs) -> dict:
    """The stochastic clustering algorithm end to end (Fig. 3.1)."""
    timings: dict = {}
    seed = (options or {}).get("seed", 0)
    scale = (options or {}).get("scale")
    S, raw = build_operator(seed=seed, timings=timings, progress=progress, scale=scale, **inputs)
    ids = check_ids(ids, S.n)
    balanced, spec, result, timings = run_stages(S, options, timings, progress, raw)
    return result_dict(
        S, balanced.P, balance_dict(balanced), spectrum_dict(spec), result, ids, timings
    )


def custom_result(
    P,
    element,
    ids=None,
    k: int = 2,
    min_size: int = 1,
    max_size=None,
    max_iterations: int = 1000,
    X=None,
    limit: int | None = None,
) -> dict:
    """The custom cluster of one element, plus raw-data neighbours when X is given."""
    ids = check_ids(ids, P.n)
    index = resolve_element(element, ids, P.n)
    name = (lambda i: ids[i]) if ids is not None else int
    found = custom_cluster(P, index, k, min_size, max_size, max_iterations, limit)
    out = {
        "element": name(index),
        "cluster": [name(i) for i in found.cluster],
        "ranked": [{"id": name(i), "score": s} for i, s in found.ranked],
        "iterations": found.iterations,
        "k": k,
    }
    if X is not None:
        for method in ("euclidean", "cosine"):
            near = neighbours(X, index, method, limit or 6)
            out[method] = [{"id": name(i), "score": s} for i, s in near]
    return out
