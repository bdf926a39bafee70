"""The result of a clustering too large to list its elements, and its per-element arrays.

:func:`sca.pipeline.result_dict` lists every element (``labels``, the
``clusters``' members, ``confidence``): for n in the tens of millions that is
gigabytes of JSON, gathered on the client.  :func:`paged_result` answers with
the same summary (k, the spectrum, the clusters' confidence and uncoupling,
Definition 2.7) and the clusters' sizes instead of their members, every figure a
reduction over the blocks of a chunked operator's labels
(:mod:`sca.operators.chunked`), and hands back the per-element arrays as Dask
arrays for the caller to write where they can be read a page at a time
(:func:`sca.storage.write_labels`, :func:`sca.storage.stack_rows`).  Its
``per_element`` is ``"paged"``.
"""

from __future__ import annotations

import numpy as np

from .results import diagnosed, rounded, summary, timed

#: The ``per_element`` of a result whose per-element data is written, not listed.
PAGED = "paged"


def _sizes(labels, k: int) -> list[int]:
    import dask.array as da

    return [int(size) for size in da.bincount(labels, minlength=k).compute()]


def paged_result(
    S, P, balance: dict, spectrum: dict, result, timings: dict | None = None
) -> tuple[dict, dict]:
    """The JSON result of a clustering on a chunked operator without per-element lists.

    Parameters
    ----------
    S : ChunkedLabelOperator
        The consensus matrix (for the uncoupling measure of S).
    P : ChunkedLabelOperator
        The balanced ``P = D S D``.
    balance : dict
        :func:`sca.pipeline.balance_dict` of the balancing.
    spectrum : dict
        :func:`sca.pipeline.spectrum_dict` of the spectrum, with the k chosen.
    result : IterationResult
        The outcome of :func:`sca.iterate` on P: its labels a Dask array.
    timings : dict of str to float, optional
        Seconds per stage; the diagnostics' are added.

    Returns
    -------
    result : dict
        ``n``, ``k``, ``per_element`` (``"paged"``), ``cluster_sizes``, the
        spectrum's entries, ``cluster_confidence``, ``cluster_uncoupling``,
        ``balancing``, ``iterations``, ``uncoupling`` (σ of S and of P),
        ``solutions`` (each with its ``frequency`` and ``cluster_sizes``),
        ``failed_starts`` and ``rounds``: the entries of
        :func:`sca.pipeline.result_dict` without ``clusters``, ``labels``,
        ``confidence``, ``membership`` and ``ids``.
    arrays : dict of str to dask.array.Array
        ``labels`` (int64), ``confidence`` (rounded to 6 places as in the
        listed form) and, with several starts, ``membership`` (``n x k``):
        chunked like the label matrix, nothing computed.

    References
    ----------
    .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 2.3,
       Definition 2.7.
    """
    labels = result.labels.astype(np.int64)
    k = int(spectrum["k"])
    clock = {} if timings is None else timings
    uncoupling, firm = diagnosed(S, P, labels, clock)
    with timed(clock, "diagnostics"):
        sizes = _sizes(labels, k)
    out = summary(
        n=S.n,
        k=k,
        listing={"per_element": PAGED, "cluster_sizes": sizes},
        spectrum=spectrum,
        elements={},  # per-element figures are written, not listed
        firm=firm,
        balance=balance,
        result=result,
        uncoupling=uncoupling,
        solutions=[
            {"frequency": freq, "cluster_sizes": _sizes(sol.astype(np.int64), k)}
            for sol, freq in result.solutions
        ],
    )
    if timings is not None:
        out["timings"] = rounded(timings)
    arrays = {"labels": labels, "confidence": firm["elements"].round(6)}
    if result.membership is not None:
        arrays["membership"] = result.membership.round(6)
    return out, arrays
