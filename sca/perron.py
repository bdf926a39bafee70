"""The Perron cluster and the gap rules for k (Meyer & Wessell, Sec. 2.4).

:func:`perron_cluster` is the paper's Definition 2.9, :func:`largest_gap_k`
the ``"gap"`` rule, and :func:`k_candidates` the values of k the ``"noise"``
rule hands to the iteration stage when its floor leaves the cut in doubt
(:mod:`sca.spectral` describes the rules).
"""

from __future__ import annotations

import numpy as np

from .errors import SCAError
from .null import ZERO


def perron_cluster(eigenvalues) -> int:
    """Size of the Perron cluster (Definition 2.9), ties to the smallest k.

    The Perron cluster ends at the largest gap ``λ_k - λ_{k+1}`` over all
    consecutive pairs of eigenvalues.

    Parameters
    ----------
    eigenvalues : array_like of float
        Eigenvalues of P, descending; at least two.

    Returns
    -------
    int
        The number of eigenvalues in the Perron cluster, k.

    Raises
    ------
    SCAError
        With ``field="options.k_hat"`` when fewer than two eigenvalues are given.

    See Also
    --------
    largest_gap_k : The largest gap from ``min_k`` on.
    spectrum : Chooses k by a rule, ``"perron"`` among them.

    References
    ----------
    .. [1] C. D. Meyer and C. D. Wessell, Stochastic Data Clustering, Sec. 2.4,
       Definition 2.9.

    Examples
    --------
    >>> perron_cluster([1.0, 0.8670, 0.2078, 0.1095, 0.0598, 0.0254])
    2
    """
    values = np.asarray(eigenvalues, dtype=float)
    if values.size < 2:
        raise SCAError("the Perron cluster needs at least two eigenvalues", "options.k_hat")
    return int(np.argmax(values[:-1] - values[1:])) + 1


def largest_gap_k(eigenvalues, min_k: int = 2, max_k: int | None = None) -> int:
    """The k maximising ``λ_k - λ_{k+1}`` over ``min_k <= k <= max_k``, ties to the smallest.

    Gaps into eigenvalues that are zero (S of low rank) are not candidates.

    Parameters
    ----------
    eigenvalues : array_like of float
        Eigenvalues of P, descending.
    min_k : int, default 2
        The smallest k considered (2: the gap after λ1 is not a candidate).
    max_k : int, optional
        The largest k considered; default: as many as the eigenvalues allow.

    Returns
    -------
    int
        The chosen k.

    Raises
    ------
    SCAError
        With ``field="options.k_hat"`` when too few eigenvalues (above zero)
        are given to choose k in ``[min_k, max_k]``.

    See Also
    --------
    perron_cluster : The largest gap over all consecutive pairs.
    """
    values = np.asarray(eigenvalues, dtype=float)
    top = values.size - 1 if max_k is None else min(int(max_k), values.size - 1)
    nonzero = int(np.sum(values > ZERO))
    top = min(top, max(nonzero - 1, min_k))
    if top < min_k:
        raise SCAError(
            f"need more than {min_k} eigenvalues to choose k in [{min_k}, {max_k}]; raise k_hat",
            "options.k_hat",
        )
    gaps = values[min_k - 1 : top] - values[min_k : top + 1]
    return int(np.argmax(gaps)) + min_k


def k_candidates(values: np.ndarray, k_signal: int, low: int, high: int, ones: int = 1) -> tuple:
    """The values of k worth an iteration each when the floor leaves the cut in doubt
    (``ones``: eigenvalues 1 counted from S's components, no gap among them)."""
    if k_signal < 2:
        return ()
    found = {k_signal}
    if k_signal > max(2, ones):
        found.add(largest_gap_k(values, max(2, ones), k_signal))
    if k_signal + 1 < values.size and (
        values[k_signal - 1] - values[k_signal] < values[k_signal] - values[k_signal + 1]
    ):
        found.add(k_signal + 1)
    found = {int(np.clip(k, low, high)) for k in found}
    return tuple(sorted(found)) if len(found) > 1 else ()
