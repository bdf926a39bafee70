"""The noise floor of P's spectrum: a null reference made from the input itself.

The paper takes k as the size of the Perron cluster (Sec. 2.4, Definition
2.9), the eigenvalues "close to 1".  How close is close depends on n, on the
number of runs and on their cluster sizes: a consensus of random labels has
no structure, yet its largest gap can sit anywhere.  We therefore compare
P's eigenvalues with those of the same input stripped of its structure,
built by :meth:`ConsensusOperator.null_draw`:

* label runs (and ensembles): each run's labels permuted over the elements
  (every run keeps its cluster sizes, co-membership across runs is lost);
* a dense or sparse similarity matrix: its off-diagonal entries moved to
  random pairs, symmetrically, with the diagonal kept (the distribution of
  similarities is kept, which pairs hold them is not);
* shared nearest neighbours: every element gets random neighbourhoods of the
  same size.

Each null draw is balanced like S (Sec. 2.2) and its largest nontrivial
eigenvalue read (after as many eigenvalues 1 as the null has connected
components).  That is a Monte Carlo version of the Marchenko-Pastur edge, in
the spirit of the reference distributions of M3C (John et al. 2020).  An
eigenvalue of P is signal when it exceeds

    floor = max(edges) + 4 * max(sd(edges), mean(edges) * n^(-2/3)),

the second term a margin for the edge's own fluctuation: the standard
deviation of the draws, but at least the Tracy-Widom scale n^(-2/3) of a
random matrix's top eigenvalue, which a few draws underestimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .balance import balance
from .errors import BalancingError
from .operators import ConsensusOperator

#: Null draws by n: many where the edge fluctuates most (and draws are cheap), one where
#: it hardly fluctuates at all.
DRAWS = ((2_000, 8), (20_000, 3), (None, 1))
#: Margin, in units of the edge's fluctuation.
MARGIN_Z = 4.0
#: Eigenvalues below this are zero (rounding), never signal.
ZERO = 1e-9
#: A null is balanced roughly: its eigenvalues move by about the residual.
_NULL_TOL = 1e-6


@dataclass(frozen=True)
class NoiseFloor:
    """The floor, the null draws' largest nontrivial eigenvalues, and the margin."""

    floor: float
    edges: np.ndarray
    margin: float


def null_edge(null: ConsensusOperator) -> float:
    """Largest nontrivial eigenvalue of the balanced null (past its components' 1s)."""
    try:
        balanced = balance(null, tol=_NULL_TOL)
    except BalancingError as exc:
        balanced = exc.partial
    skip = balanced.n_components
    if skip >= null.n:
        return 0.0
    return float(balanced.P.eigenvalues(skip + 1, few=True)[skip])


def noise_floor(S: ConsensusOperator, seed: int = 0, draws: int | None = None) -> NoiseFloor:
    """The noise floor of the spectrum of P = D S D (see the module docstring).

    Parameters
    ----------
    S : ConsensusOperator
        The unbalanced consensus (``P.unscaled()``).
    seed : int
        Seeds the null draws, so the floor is reproducible.
    draws : int, optional
        Null draws; default 8 up to n = 2000, 3 up to 20,000, else 1.
    """
    if draws is None:
        draws = next(count for limit, count in DRAWS if limit is None or S.n <= limit)
    rng = np.random.default_rng([seed, 0x5CA])
    edges = np.array([null_edge(S.null_draw(rng)) for _ in range(draws)])
    spread = max(float(edges.std(ddof=1)) if draws > 1 else 0.0,
                 float(edges.mean()) * S.n ** (-2 / 3))
    margin = MARGIN_Z * spread
    return NoiseFloor(max(float(edges.max()) + margin, ZERO), edges, margin)
