"""The spectrum of P and the number of clusters (Meyer & Wessell, Sec. 2.4 and 3).

Two rules for k from the eigenvalues ``1 = λ1 >= λ2 >= ... >= λ_k̂``:

``"perron"``
    The paper's Definition 2.9: k is the size of the Perron cluster, the
    largest gap ``λ_k - λ_{k+1}`` over all consecutive pairs, ties to the
    smallest k.  It returns k = 1 whenever the gap after λ1 is the largest,
    which happens on consensus matrices of several unequal blocks.

``"gap"`` (default)
    The largest gap among ``λ_j - λ_{j+1}`` for ``min_k <= j <= max_k``
    (``min_k = 2`` by default, so the gap after λ1 is not a candidate), ties
    to the smallest k.  With ``min_k = 1`` and no ``max_k`` it is the
    Perron rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import SCAError
from .operators import DENSE_SPECTRUM_MAX_N, ConsensusOperator

#: Eigenvalues computed by default when n is too large for all of them.
DEFAULT_K_HAT = 20
RULES = ("gap", "perron")


@dataclass(frozen=True)
class SpectrumResult:
    """Eigenvalues used (descending), the chosen k, λ2 and the gap at k."""

    eigenvalues: np.ndarray
    k: int
    lambda2: float
    gap: float
    rule: str


def perron_cluster(eigenvalues) -> int:
    """Size of the Perron cluster (Definition 2.9), ties to the smallest k.

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
    """k maximising ``λ_k - λ_{k+1}`` over ``min_k <= k <= max_k``, ties to the smallest."""
    values = np.asarray(eigenvalues, dtype=float)
    top = values.size - 1 if max_k is None else min(int(max_k), values.size - 1)
    if top < min_k:
        raise SCAError(f"need more than {min_k} eigenvalues to choose k in "
                       f"[{min_k}, {max_k}]; raise k_hat", "options.k_hat")
    gaps = values[min_k - 1:top] - values[min_k:top + 1]
    return int(np.argmax(gaps)) + min_k


def check_spectrum_options(n: int, k=None, k_hat=None, min_k: int = 2, max_k=None,
                           rule: str = "gap") -> int:
    """Check the spectral options against n; returns k_hat with its default resolved.

    Kept apart from :func:`spectrum` so a caller can refuse bad options before
    any work (the service does, at submission).
    """
    if rule not in RULES:
        raise SCAError(f"k rule must be one of {RULES}, got {rule!r}", "options.rule")
    if k is not None and not (isinstance(k, (int, np.integer)) and 1 <= k <= n):
        raise SCAError(f"k must be an integer in [1, n] = [1, {n}], got {k!r}", "options.k")
    if k_hat is None:
        k_hat = n if n <= DENSE_SPECTRUM_MAX_N else min(DEFAULT_K_HAT, n - 1)
    elif not (isinstance(k_hat, (int, np.integer)) and 2 <= k_hat < n):
        raise SCAError(f"k_hat must be an integer in [2, n-1] = [2, {n - 1}], got {k_hat!r}",
                       "options.k_hat")
    if not (isinstance(min_k, (int, np.integer)) and 1 <= min_k < n):
        raise SCAError(f"min_k must be an integer in [1, n-1] = [1, {n - 1}], got {min_k!r}",
                       "options.min_k")
    if max_k is not None and not (isinstance(max_k, (int, np.integer)) and max_k >= min_k):
        raise SCAError(f"max_k must be an integer >= min_k = {min_k}, got {max_k!r}",
                       "options.max_k")
    return int(k_hat)


def spectrum(P: ConsensusOperator, k: int | None = None, k_hat: int | None = None,
             min_k: int = 2, max_k: int | None = None, rule: str = "gap") -> SpectrumResult:
    """Eigenvalues of P and the number of clusters.

    Parameters
    ----------
    P : ConsensusOperator
        The balanced operator.
    k : int, optional
        The user's number of clusters; overrides the rule (1 <= k <= n).
    k_hat : int, optional
        How many of the largest eigenvalues to compute (Sec. 3: "the user ...
        can direct the program to find only the k̂ largest").  Default: all of
        them when n <= 1000, else 20.  An explicit k_hat must be in [2, n-1].
    min_k, max_k : int, optional
        Range of k for the ``"gap"`` rule.
    rule : {"gap", "perron"}

    Returns
    -------
    SpectrumResult
        ``gap`` is ``λ_k - λ_{k+1}`` for the chosen k (``nan`` if not computed).
    """
    k_hat = check_spectrum_options(P.n, k, k_hat, min_k, max_k, rule)
    values = P.eigenvalues(k_hat)
    if k is None:
        k = perron_cluster(values) if rule == "perron" else largest_gap_k(values, min_k, max_k)
    gap = float(values[k - 1] - values[k]) if k < values.size else float("nan")
    lambda2 = float(values[1]) if values.size > 1 else float("nan")
    return SpectrumResult(values, int(k), lambda2, gap, rule)
