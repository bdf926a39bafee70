"""Where the consensus operator S comes from: one input, and raw data's ensemble or SNN.

:func:`build_operator` reaches S from exactly one input (raw data, a
consensus matrix or label runs); :func:`data_source` resolves how raw data is
clustered, for every interface alike; :func:`null_reference` gives raw data
its reference null for the spectral stage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import options as registry
from ..ensemble import ensemble_fit
from ..ensemble_spec import default_ensemble, needs_nonnegative
from ..errors import SCAError
from ..inputs import (
    SIMILARITIES,
    Scaling,
    check_data,
    fit_scaling,
    membership_operator,
    snn_operator,
)
from ..reference import References, reference_applies, reference_spectra
from ..spectral import MIN_NULL_N
from .results import timed


def data_source(X, ensemble=None, snn=None, scale: str | None = None) -> dict:
    """What clusters raw data X: ``{"snn": ...}`` or ``{"ensemble": spec}``, and ``scale``.

    Without ``ensemble`` and ``snn`` the ensemble is
    :func:`sca.ensemble_spec.default_ensemble`; both at once is an error.  Every
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
    snn=None,
    seed: int = 0,
    timings: dict | None = None,
    progress=None,
    scale: str | None = None,
    **similarity,
):
    """Reach the consensus operator from exactly one input.

    ``similarity`` is an input that gives S directly, by its kind's name
    (:data:`sca.inputs.SIMILARITIES`: ``consensus=`` or ``labels=``).  Raw data
    without ``ensemble`` or ``snn`` is clustered by
    :func:`sca.ensemble_spec.default_ensemble`, after its columns are scaled by
    ``scale`` (the option's default when None; :func:`sca.inputs.fit_scaling`).
    Returns ``(operator, raw)``: raw is a :class:`RawData` for raw data (with
    the ensemble's models, a few centres a run, for new rows), else None.
    """
    unknown = sorted(set(similarity) - set(SIMILARITIES))
    if unknown:
        raise TypeError(f"build_operator() got unexpected keyword arguments {unknown}")
    timings = {} if timings is None else timings
    given = {"data": data, **similarity}
    kind = registry.one_input([name for name, value in given.items() if value is not None])
    if kind in SIMILARITIES:
        with timed(timings, "consensus"):
            return SIMILARITIES[kind].operator(given[kind]), None
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


def null_reference(
    source: dict | None, options: dict, n: int, scaled, eigenvalues=None
) -> References | None:
    """Reference data without clusters run through raw data's ensemble
    (:func:`sca.reference.reference_spectra`: their eigenvalues and runs'
    dispersions), the null of the
    ``"noise"`` rule on raw data; None where that null does not apply (another
    rule, k given, the SNN, NMF, fewer than ``MIN_NULL_N`` rows) and the
    spectral stage falls back on its own rules (:mod:`sca.spectral`).

    ``source`` is :func:`data_source`'s (None for other inputs), ``n`` the
    number of rows, and ``scaled()`` gives the rows as the ensemble saw them,
    read only when the null applies; ``eigenvalues(count)``, P's largest, lets
    the references stop early (:func:`sca.reference.reference_spectra`)."""
    spec = None if source is None else source.get("ensemble")
    if options["rule"] != "noise" or options["k"] is not None or spec is None:
        return None
    if n < MIN_NULL_N or not reference_applies(spec):  # too few rows: see sca.spectral
        return None
    return reference_spectra(scaled(), spec, options["seed"], eigenvalues=eigenvalues)
