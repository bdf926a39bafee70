"""Results and query answers as JSON-ready dicts, with element ids, shaped once.

A clustering's result (:func:`result_dict`) is computed with 0-based element
indices, which is how the service's worker stores it;
:func:`with_ids` names the elements by their ids when a result is shown.
The command line, :func:`sca.cluster`, the worker and the service all go
through these functions, so every interface answers with the same shape:
``k``, ``clusters`` (lists of ids, or 0-based indices without ids),
``labels``, ``eigenvalues`` (descending), ``lambda2``, ``gap``,
``balancing``, ``iterations``, ``uncoupling``, ``solutions``,
``membership``, ``trace`` and, from the command line, per-stage ``timings``
(seconds).  A clustering too large to list its elements has the paged form
of :mod:`sca.pipeline.paged` instead (the same entries but the per-element
ones, and the clusters' sizes).
"""

from __future__ import annotations

import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping
from contextlib import contextmanager

import numpy as np

from ..custom import CustomResult, custom_cluster, neighbours, row_neighbours
from ..diagnostics import confidence, uncoupling_measure
from ..errors import SCAError


@contextmanager
def timed(timings: dict, stage: str):
    """Add the seconds spent in the block to ``timings[stage]``."""
    start = time.perf_counter()
    yield
    timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start


#: Most bytes of one element id in UTF-8.  Ids name elements in answers, paths
#: and plots' labels: a longer one costs every answer and drawing that shows it.
MAX_ID_BYTES = 256


def check_id(element, field: str) -> str:
    """One element id as text: at most :data:`MAX_ID_BYTES` bytes of valid
    Unicode, without control characters (SCAError naming ``field`` otherwise).

    JSON may carry a lone surrogate (``"\\ud800"``): Python keeps it in the
    string, but it has no UTF-8 form, so it could neither be drawn in a plot
    nor written in a path; a control character cannot be shown either.
    """
    text = str(element)
    for char in text:
        category = unicodedata.category(char)
        if category == "Cs":
            raise SCAError(
                f"{field} holds a lone surrogate (U+{ord(char):04X}): not valid Unicode", field
            )
        if category == "Cc":
            raise SCAError(
                f"{field} holds the control character U+{ord(char):04X}; ids are printable text",
                field,
            )
    size = len(text.encode("utf-8"))
    if size > MAX_ID_BYTES:
        raise SCAError(f"{field} is {size} bytes in UTF-8; at most {MAX_ID_BYTES}", field)
    return text


def check_ids(ids, n: int, field: str = "ids"):
    """Element ids: n distinct strings (or None), each as :func:`check_id`
    wants it (its error names ``field[i]``)."""
    if ids is None:
        return None
    ids = [check_id(element, f"{field}[{i}]") for i, element in enumerate(ids)]
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


def namer(ids: list | None) -> Callable:
    """Element index -> the element's id (its index when there are no ids)."""
    return (lambda i: ids[i]) if ids is not None else int


def with_ids(result: Mapping, ids: list | None) -> dict:
    """A result of :func:`result_dict` (element indices) with its clusters, and
    those of its trace, as lists of element ids."""
    out = dict(result)
    if ids is None:
        return out
    name = namer(ids)
    if "clusters" in result:  # a paged result lists no members
        out["clusters"] = [[name(i) for i in members] for members in result["clusters"]]
    if out.get("trace"):
        out["trace"] = [
            dict(
                step,
                clusters=None
                if step.get("clusters") is None
                else [[name(i) for i in members] for members in step["clusters"]],
            )
            for step in out["trace"]
        ]
    return out


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
    with timed({} if timings is None else timings, "diagnostics"):
        uncoupling = {"S": uncoupling_measure(S, labels), "P": uncoupling_measure(P, labels)}
        firm = confidence(P, labels)
    out = {
        "n": S.n,
        "k": spectrum["k"],
        "clusters": clusters,
        "labels": labels.tolist(),
        **spectrum_fields(spectrum),
        "confidence": np.round(np.asarray(firm["elements"]), 6).tolist(),
        "cluster_confidence": np.round(firm["clusters"], 6).tolist(),
        "cluster_uncoupling": np.round(firm["uncoupling"], 6).tolist(),
        "balancing": dict(balance),
        "iterations": result.iterations,
        "uncoupling": uncoupling,
        "solutions": [
            {"labels": np.asarray(sol).tolist(), "frequency": freq}
            for sol, freq in result.solutions
        ],
        "failed_starts": result.failed_starts,
        "rounds": result.rounds,
    }
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
        out["timings"] = {stage: round(sec, 6) for stage, sec in timings.items()}
    return with_ids(out, ids)


def custom_dict(found: CustomResult, k: int, ids=None) -> dict:
    """The JSON answer of a custom-cluster query (:func:`sca.custom_cluster`)."""
    name = namer(ids)
    return {
        "element": name(found.element),
        "cluster": [name(i) for i in found.cluster],
        "ranked": [{"id": name(i), "score": s} for i, s in found.ranked],
        "iterations": found.iterations,
        "k": k,
    }


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
    """The custom cluster of one element, plus raw-data neighbours when X is given.

    Parameters
    ----------
    P : ConsensusOperator
        The balanced ``P = D S D``.
    element : int or str
        The target element, by id (when ``ids`` are given) or 0-based index.
    ids : sequence of str, optional
        The elements' names: n distinct strings.
    k : int, default 2
        Clusters per split (:func:`sca.custom_cluster`).
    min_size : int, default 1
        The smallest size of the target's cluster.
    max_size : int, optional
        The largest size of the target's cluster; default n.
    max_iterations : int, default 1000
        The most steps taken.
    X : array_like of shape (n, m), optional
        The raw data: its 2-norm and cosine nearest neighbours are added
        (:func:`sca.neighbours`), as the paper's table compares them.
    limit : int, optional
        Rank only the ``limit`` closest elements (6 neighbours by default).

    Returns
    -------
    dict
        ``element``, ``cluster``, ``ranked`` (``{"id", "score"}``),
        ``iterations``, ``k`` and, with X, ``euclidean`` and ``cosine``
        (``{"id", "score", "distance"}``), elements named by ``ids``.

    Raises
    ------
    SCAError
        When ``ids`` are not n distinct strings (``field="ids"``), no element
        is ``element`` (``"element"``), or as :func:`sca.custom_cluster` raises.
    IterationError
        As :func:`sca.custom_cluster` raises it.

    See Also
    --------
    sca.custom_cluster : The custom clustering algorithm (Sec. 5.3, Fig. 5.2).
    """
    ids = check_ids(ids, P.n)
    index = resolve_element(element, ids, P.n)
    found = custom_cluster(P, index, k, min_size, max_size, max_iterations, limit)
    out = custom_dict(found, k, ids)
    if X is not None:
        name = namer(ids)
        for method in ("euclidean", "cosine"):
            near = neighbours(X, index, method, limit or 6)
            out[method] = [{"id": name(i), "score": s, "distance": d} for i, s, d in near]
    return out


def similar_dict(index: int, method: str, limit: int, ids=None, *, P=None, X=None) -> dict:
    """The ``limit`` elements most similar to one, most similar first (ties in
    index order): by the element's row of the balanced P for ``method``
    ``"sca"`` (:func:`sca.custom.row_neighbours`), by raw data X for
    ``"euclidean"`` and ``"cosine"`` (:func:`sca.neighbours`)."""
    name = namer(ids)
    if method == "sca":
        ranked = [{"id": name(i), "score": float(s)} for i, s in row_neighbours(P, index, limit)]
    else:
        ranked = [
            {"id": name(i), "score": s, "distance": d}
            for i, s, d in neighbours(X, index, method, limit)
        ]
    return {"element": name(index), "method": method, "ranked": ranked}
