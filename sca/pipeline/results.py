"""A clustering's result as a JSON-ready dict, shaped once.

A clustering's result (:func:`result_dict`) is computed with 0-based element
indices, which is how the service's worker stores it;
:func:`sca.pipeline.ids.with_ids` names the elements by their ids when a
result is shown.  The command line, :func:`sca.cluster`, the worker and the service all go
through these functions, so every interface answers with the same shape:
``k``, ``clusters`` (lists of ids, or 0-based indices without ids),
``labels``, ``eigenvalues`` (descending), ``lambda2``, ``gap``,
``balancing``, ``iterations``, ``uncoupling``, ``solutions``,
``membership``, ``trace`` and, from the command line, per-stage ``timings``
(seconds).  A clustering too large to list its elements has the paged form
of :mod:`sca.pipeline.paged` instead (the same entries but the per-element
ones, and the clusters' sizes); both take the entries they share from
:func:`summary`.  The answers of the queries on a clustering are
:mod:`sca.pipeline.answers`.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import numpy as np

from ..diagnostics import confidence, uncoupling_measure
from .answers import custom_dict, custom_result, similar_dict
from .ids import MAX_ID_BYTES, check_id, check_ids, namer, resolve_element, with_ids

# The answers and the ids were imported from here before they had modules of their own.
__all__ = [
    "MAX_ID_BYTES",
    "balance_dict",
    "check_id",
    "check_ids",
    "custom_dict",
    "custom_result",
    "diagnosed",
    "namer",
    "resolve_element",
    "result_dict",
    "rounded",
    "similar_dict",
    "spectrum_dict",
    "spectrum_fields",
    "summary",
    "timed",
    "with_ids",
]


@contextmanager
def timed(timings: dict, stage: str):
    """Add the seconds spent in the block to ``timings[stage]``."""
    start = time.perf_counter()
    yield
    timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start


def balance_dict(balanced) -> dict:
    """What the result reports of balancing (JSON-ready).

    Parameters
    ----------
    balanced : BalanceResult
        The outcome of :func:`sca.balance`.

    Returns
    -------
    dict
        ``iterations``, ``residual`` and ``components`` (the connected
        components of S).
    """
    return {
        "iterations": int(balanced.iterations),
        "residual": float(balanced.residual),
        "components": int(balanced.n_components),
    }


def spectrum_dict(spec) -> dict:
    """What the result reports of the spectrum (JSON-ready; no gap is ``None``).

    Parameters
    ----------
    spec : SpectrumResult
        The outcome of :func:`sca.spectrum`.

    Returns
    -------
    dict
        ``k``, ``eigenvalues``, ``lambda2``, ``gap``, ``rule``, ``k_hat``,
        ``noise_floor``, ``noise_floors``, ``k_signal``, ``structure``,
        ``k_hat_capped``, ``notes``, ``k_candidates`` and ``k_scores``.
    """
    return {
        "k": int(spec.k),
        "eigenvalues": spec.eigenvalues.tolist(),
        "lambda2": spec.lambda2,
        "gap": None if np.isnan(spec.gap) else spec.gap,
        "rule": spec.rule,
        "k_hat": spec.k_hat,
        "noise_floor": spec.floor,
        "noise_floors": list(spec.floors) if spec.floors else None,
        "k_signal": spec.k_signal,
        "structure": spec.structure,
        "k_hat_capped": spec.capped,
        "notes": list(spec.notes),
        "k_candidates": list(spec.candidates),
        "k_scores": {str(k): v for k, v in spec.scores.items()},
    }


def spectrum_fields(spectrum: dict) -> dict:
    """The entries of a result that come from its spectrum (the iteration's
    choice of k): ``eigenvalues`` to ``k_scores``, in that order."""
    return {
        "eigenvalues": list(spectrum["eigenvalues"]),
        "lambda2": spectrum["lambda2"],
        "gap": spectrum["gap"],
        "rule": spectrum["rule"],
        "k_hat": spectrum.get("k_hat", len(spectrum["eigenvalues"])),
        "noise_floor": spectrum.get("noise_floor"),
        "noise_floors": spectrum.get("noise_floors"),
        "k_signal": spectrum.get("k_signal"),
        "structure": spectrum.get("structure"),
        "k_hat_capped": spectrum.get("k_hat_capped", False),
        "notes": list(spectrum.get("notes", [])),
        "k_candidates": list(spectrum.get("k_candidates", [])),
        "k_scores": dict(spectrum.get("k_scores", {})),
    }


def diagnosed(S, P, labels, timings: dict | None = None) -> tuple[dict, dict]:
    """The diagnostics of a clustering, their time added to ``timings["diagnostics"]``.

    Returns the uncoupling measure σ of S and of P at ``labels`` (Definition
    2.7, ``{"S", "P"}``) and :func:`sca.diagnostics.confidence` of P.
    """
    with timed({} if timings is None else timings, "diagnostics"):
        uncoupling = {"S": uncoupling_measure(S, labels), "P": uncoupling_measure(P, labels)}
        firm = confidence(P, labels)
    return uncoupling, firm


def summary(
    *,
    n: int,
    k: int,
    listing: dict,
    spectrum: dict,
    elements: dict,
    firm: dict,
    balance: dict,
    result,
    uncoupling: dict,
    solutions: list,
) -> dict:
    """The entries every form of a clustering's result has, in their order.

    ``n``, ``k``, then ``listing`` (how the clusters are given: their members
    and the labels, or the paged form's sizes), the spectrum's entries
    (:func:`spectrum_fields`), ``elements`` (the listed form's per-element
    confidence), ``cluster_confidence`` and ``cluster_uncoupling`` of ``firm``
    (:func:`diagnosed`), ``balancing``, ``iterations``, ``uncoupling``,
    ``solutions`` and the :class:`sca.IterationResult`'s ``failed_starts`` and
    ``rounds``.  :func:`result_dict` and :func:`sca.pipeline.paged_result`
    build theirs on it.
    """
    return {
        "n": n,
        "k": k,
        **listing,
        **spectrum_fields(spectrum),
        **elements,
        "cluster_confidence": np.round(firm["clusters"], 6).tolist(),
        "cluster_uncoupling": np.round(firm["uncoupling"], 6).tolist(),
        "balancing": dict(balance),
        "iterations": result.iterations,
        "uncoupling": uncoupling,
        "solutions": solutions,
        "failed_starts": result.failed_starts,
        "rounds": result.rounds,
    }


def rounded(timings: dict) -> dict:
    """A result's ``timings``: the seconds of each stage to the microsecond."""
    return {stage: round(sec, 6) for stage, sec in timings.items()}


def result_dict(
    S, P, balance: dict, spectrum: dict, result, ids=None, timings: dict | None = None
) -> dict:
    """The JSON result of a clustering (same shape for the CLI and the service).

    ``balance`` and ``spectrum`` are :func:`balance_dict` and
    :func:`spectrum_dict` (a worker stores them between stages).

    Parameters
    ----------
    S : ConsensusOperator
        The consensus matrix (for the uncoupling measure of S).
    P : ConsensusOperator
        The balanced ``P = D S D``.
    balance : dict
        :func:`balance_dict` of the balancing.
    spectrum : dict
        :func:`spectrum_dict` of the spectrum.
    result : IterationResult
        The outcome of :func:`sca.iterate`.
    ids : sequence of str, optional
        The elements' names; when given the elements are named by them
        (:func:`with_ids`), else by 0-based index.
    timings : dict of str to float, optional
        Seconds per stage, reported when given (the diagnostics' are added).

    Returns
    -------
    dict
        ``n``, ``k``, ``clusters``, ``labels``, the spectrum's entries,
        ``confidence``, ``cluster_confidence``, ``cluster_uncoupling``,
        ``balancing``, ``iterations``, ``uncoupling`` (σ of S and of P,
        Definition 2.7), ``solutions``, ``failed_starts``, ``rounds`` and, when
        present, ``ids``, ``membership``, ``trace`` and ``timings``.

    See Also
    --------
    cluster : Runs every stage and returns this dict.
    """
    labels = np.asarray(result.labels)  # gathered from a chunked operator: the result lists them
    order = np.argsort(labels, kind="stable")  # members of each cluster, ascending
    bounds = np.cumsum(np.bincount(labels, minlength=int(labels.max()) + 1))[:-1]
    clusters = [members.tolist() for members in np.split(order, bounds)]
    uncoupling, firm = diagnosed(S, P, labels, timings)
    out = summary(
        n=S.n,
        k=spectrum["k"],
        listing={"clusters": clusters, "labels": labels.tolist()},
        spectrum=spectrum,
        elements={"confidence": np.round(np.asarray(firm["elements"]), 6).tolist()},
        firm=firm,
        balance=balance,
        result=result,
        uncoupling=uncoupling,
        solutions=[
            {"labels": np.asarray(sol).tolist(), "frequency": freq}
            for sol, freq in result.solutions
        ],
    )
    if ids is not None:
        out["ids"] = list(ids)
    if result.membership is not None:
        out["membership"] = np.round(np.asarray(result.membership), 6).tolist()
    if result.trace is not None:
        out["trace"] = [
            {
                "t": step["t"],
                "x": None if step["x"] is None else step["x"].tolist(),
                "clusters": None
                if step["labels"] is None
                else [
                    np.flatnonzero(step["labels"] == c).tolist()
                    for c in range(int(step["labels"].max()) + 1)
                ],
            }
            for step in result.trace
        ]
    if timings is not None:
        out["timings"] = rounded(timings)
    return with_ids(out, ids)
