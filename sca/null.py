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
eigenvalues read (past as many eigenvalues 1 as the null has connected
components): a Monte Carlo version of the Marchenko-Pastur edge, in the
spirit of the reference distributions of M3C (John et al. 2020).  As in
Horn's parallel analysis, P's j-th eigenvalue is compared with the null's
j-th: when the structure takes up a sizeable share of S's rank (few runs),
the remaining bulk of P sits below the null's edge, and the null's top
eigenvalue alone would hide real clusters.  P's j-th nontrivial eigenvalue
is signal when it exceeds

    floor_j = max(null_j) + 4 * max(sd(null_j), mean(null_j) * tw),

the second term a margin for the null's own fluctuation: the standard
deviation over the draws, but at least the Tracy-Widom scale of a random
matrix's top eigenvalue, which a few draws underestimate.  S = H H^T has
rank at most m = min(n, K) (K clusters over all runs), and the relative
fluctuation of the top eigenvalue of such a product is about (Johnstone 2001)

    J(n, m) = (n^(-1/2) + m^(-1/2))^(1/3) / (n^(1/2) + m^(1/2)),

0.63 n^(-2/3) at full rank and more where K << n (label runs).  With
several draws tw = max(n^(-2/3), J); with one draw (n > 5,000) there is no
spread to measure and tw = max(n^(-2/3), 2^(2/3) J), which is n^(-2/3) at
full rank.  Measured on random labels: over 8 draws (n = 300 to 2*10^5,
K = 15 to 500) J was within a factor 1.6 of the draws' spread, where
n^(-2/3) was up to 5 times below it; with one draw at n = 70,000 and r = 20
runs of 5 labels, the margin n^(-2/3) gave k = 2 on 2 of 10 seeds, J on 1,
2^(2/3) J on none.

With one draw the null's eigenvalues come from a Krylov space where its
products are dear (label runs of many labels: Sec. 3's block Lanczos), and
its crowded edge converges slowest.  The spectral stage then asks first for
bounds (``rough``): only the null's largest nontrivial eigenvalue is
resolved; every other lies between its Ritz value (a lower bound, by
Cauchy's interlacing) and the largest's bound.  The thresholds of the two
ends bracket the exact ones, and the count of P's eigenvalues above them
falls as they rise, so where both ends give the same count it is the exact
floor's (:meth:`NoiseFloor.settles`); where not, the exact floor is computed
from the same draw.  The reported floors are then the lower ends: λ2's
resolved as the exact one is, those past it at most the exact ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .balance import balance
from .components import Components, nontrivial_eigenvalues
from .errors import BalancingError
from .operators import ConsensusOperator

#: Null draws by n: many where the edge fluctuates most (and draws are cheap), one where
#: it hardly fluctuates at all.
DRAWS = ((2_000, 8), (5_000, 3), (None, 1))
#: Margin, in units of the edge's fluctuation.
MARGIN_Z = 4.0
#: Eigenvalues below this are zero (rounding), never signal.
ZERO = 1e-9
#: A null is balanced roughly: its eigenvalues move by about the residual.
_NULL_TOL = 1e-6
#: Null eigenvalues compared index by index: when the null's spectrum is cheap, and when not.
CHEAP, FEW = 128, 8


@dataclass(frozen=True)
class NoiseFloor:
    """Thresholds for P's nontrivial eigenvalues λ2, λ3, ... (the last stands
    for those beyond), and the null draws they come from (draws x len).

    A rough floor (:func:`noise_floor` with ``rough``) also holds ``ceiling``:
    the thresholds of the null's eigenvalues taken at their upper bounds, the
    ``floors`` then those of their lower bounds; the exact thresholds lie between.
    """

    floors: np.ndarray
    draws: np.ndarray
    ceiling: np.ndarray | None = None

    @property
    def floor(self) -> float:
        """The threshold for λ2: the noise floor reported to users."""
        return float(self.floors[0])

    def along(self, count: int, floors: np.ndarray | None = None) -> np.ndarray:
        """The thresholds of the ``count - 1`` eigenvalues λ2 ... λ_count (the
        last of :attr:`floors`, or of ``floors``, stands for those beyond)."""
        floors = self.floors if floors is None else floors
        size = max(count - 1, 0)
        return np.concatenate([floors, np.full(max(0, size - floors.size), floors[-1])])[:size]

    def signal(self, eigenvalues, floors: np.ndarray | None = None) -> int:
        """Eigenvalues above the floor, λ1 included, counted until the first below it
        (against :attr:`floors`, or ``floors``)."""
        values = np.asarray(eigenvalues, dtype=float)[1:]
        below = np.flatnonzero(values <= self.along(values.size + 1, floors))
        return 1 + (int(below[0]) if below.size else values.size)

    def settles(self, eigenvalues) -> bool:
        """Whether :meth:`signal` is the same for every floor between :attr:`floors`
        and :attr:`ceiling` (fewer eigenvalues clear a higher floor, so the two
        ends decide): then the exact floor would count the same."""
        return self.ceiling is None or self.signal(eigenvalues) == self.signal(
            eigenvalues, self.ceiling
        )


def null_spectrum(null: ConsensusOperator, count: int) -> np.ndarray:
    """The ``count`` largest nontrivial eigenvalues of the balanced null
    (past its components' 1s), zero-padded."""
    return null_bounds(null, count, rough=False)[0]


def null_bounds(null: ConsensusOperator, count: int, rough: bool) -> tuple:
    """:func:`null_spectrum` as bounds ``(lower, upper)``: with ``rough``, where
    the null's products are dear (a kept Krylov space), only its largest
    nontrivial eigenvalue is resolved and the rest bounded
    (:meth:`~sca.operators.eigen.Eigenvalues.eigenvalue_bounds`); else both
    are the eigenvalues."""
    try:
        balanced = balance(null, tol=_NULL_TOL, find_components=False)
    except BalancingError as exc:
        balanced = exc.partial
    P = balanced.P
    if null.full_spectrum_cheap:
        values = P.eigenvalues(min(null.n, null.rank_bound + 1), few=True)  # zeros past the rank
        if values.size > 1 and values[1] >= 1 - 1e-6:  # a disconnected null: rarely, but look
            values = values[null.components()[0] :]
        else:
            values = values[1:]
        upper = values
    else:
        # the components first: a null of many (a sparse S of few off-diagonal entries) has
        # as many eigenvalues 1, which no iterative solver should be asked to resolve
        parts = Components.of(null)
        if parts.count == 1 and rough:
            values, upper = (v[1:] for v in P.eigenvalue_bounds(min(count + 1, null.n)))
        elif parts.count == 1:
            values = upper = P.eigenvalues(min(count + 1, null.n), few=True)[1:]
        else:
            values = upper = nontrivial_eigenvalues(P, parts, count, few=True)
    return tuple(
        np.concatenate([v[:count], np.zeros(count - v[:count].size)]) for v in (values, upper)
    )


def tracy_widom(S: ConsensusOperator, draws: int) -> float:
    """The relative fluctuation of the top eigenvalue of a random S of its
    shape and rank (the module docstring's ``tw``)."""
    n, m = S.n, min(S.n, S.rank_bound)
    johnstone = (n**-0.5 + m**-0.5) ** (1 / 3) / (n**0.5 + m**0.5)
    return max(n ** (-2 / 3), johnstone * (1.0 if draws > 1 else 2 ** (2 / 3)))


def noise_floor(
    S: ConsensusOperator, seed: int = 0, draws: int | None = None, rough: bool = False
) -> NoiseFloor:
    """The noise floor of the spectrum of P = D S D (see the module docstring).

    Parameters
    ----------
    S : ConsensusOperator
        The unbalanced consensus (``P.unscaled()``).
    seed : int
        Seeds the null draws, so the floor is reproducible.
    draws : int, optional
        Null draws; default 8 up to n = 2000, 3 up to 5000, else 1.
    rough : bool, default False
        With one draw, bound the null's eigenvalues where they are dear
        (:func:`null_bounds`): the floor's :attr:`~NoiseFloor.ceiling` is
        then set, and where it does not :meth:`~NoiseFloor.settles` the
        count, the exact floor, this function without ``rough``, does.  The
        same draw, the same Krylov space stopped no later: each threshold is
        at most the exact one, and the largest, the floor of λ2, resolved as
        far as it.
    """
    if draws is None:
        draws = next(count for limit, count in DRAWS if limit is None or S.n <= limit)
    count = min(CHEAP if S.full_spectrum_cheap else FEW, S.n - 1)
    rng = np.random.default_rng([seed, 0x5CA])
    bounds = [null_bounds(S.null_draw(rng), count, rough and draws == 1) for _ in range(draws)]
    null = np.array([lower for lower, _ in bounds])
    upper = np.array([high for _, high in bounds])
    tw = tracy_widom(S, draws)
    floors = _thresholds(null, tw)
    ceiling = None if np.array_equal(null, upper) else _thresholds(upper, tw)
    return NoiseFloor(floors, null, ceiling)


def _thresholds(null: np.ndarray, tw: float) -> np.ndarray:
    """The floors of the null draws' eigenvalues (draws x count): the largest draw
    plus the margin, made non-increasing along the spectrum."""
    spread = np.maximum(
        null.std(axis=0, ddof=1) if null.shape[0] > 1 else 0.0, null.mean(axis=0) * tw
    )
    floors = np.maximum(null.max(axis=0) + MARGIN_Z * spread, ZERO)
    return np.maximum.accumulate(floors[::-1])[::-1]
