"""The number of clusters of raw data, against reference data without clusters.

On label runs the noise floor of :mod:`sca.null` permutes each run's labels:
it asks "are the runs independent random partitions?".  k-means runs on the
same rows are never independent: on data without clusters each run cuts
nearly the same cells, so the consensus of an ensemble on pure noise has
many eigenvalues of P far above that floor.  For raw data the question is
instead the gap statistic's (Tibshirani, Walther & Hastie 2001) and M3C's
(John et al. 2020): what does the *same ensemble* make of data that has the
shape of these rows but no clusters?

Reference data are Gaussian rows with the data's principal axes and
variances (its covariance; for more features than rows, its ``n - 1``
principal components), so a reference keeps the spread, the correlations
and the effective dimension of the data and loses only its groups.  Each
reference runs through the same ensemble, is balanced (Sec. 2.2) and its
eigenvalues read (Sec. 2.4), as the data's are.

k then follows from the data's spectrum against the references', on a log
scale (``-log λ_j`` is the rate at which the walk P forgets its start
inside j groups, Sec. 3):

1. Eigenvalues above the references: ``log λ_j`` above the references' mean
   plus :data:`MARGIN_Z` standard deviations, counted from λ2 until the
   first that is not: ``k_signal``.  None (``k_signal = 1``): no cluster
   structure, k = 1 -- unless the spectrum falls off a cliff further on
   (step 2's drop above :data:`CLIFF_Z` of the references' standard
   deviations, after eigenvalues well above theirs): many groups of similar
   size, which runs at the coarse levels lump together in ever different
   ways, can hold λ2 down to a reference's while λ3 ... λk stand far above.
2. Among k = 2 ... k_signal (and k_signal + 1 when λ_(k_signal+1) is above
   the references' mean, short of the margin), the cut where the data's excess over the
   references, ``e_j = log λ_j - mean log λ_j^ref``, drops most from λ_k
   to λ_(k+1): the Perron cluster (Definition 2.9) with each gap measured
   against the gap that data without clusters shows at the same place.
   A cut further on, up to twice k_signal, after eigenvalues that all stand
   above the references' mean, is taken when its drop is larger still and at least
   :data:`BEYOND_Z` of the references' standard deviations: groups that
   the coarse runs lump together can hold one eigenvalue below the margin.
   Within a cluster the ensemble's finer runs leave the smooth spectrum of
   a reference; between clusters the spectrum stays near 1; the cut is
   where one gives way to the other.
3. With few rows the references' spectra spread as widely as small groups
   lift the data's, and the spectrum undercounts (4 groups of 15 rows:
   k = 1).  The gap statistic of the ensemble's own k-means runs against
   the references' runs (:mod:`~sca.reference.gap`) then decides: its k
   replaces the spectrum's where the data's groups at that k are at least
   twice as tight as the references' cells (:data:`MIN_EFFECT`) and the
   spectrum sees them: λ2 ... λk all stand above the references' mean, or
   its clearest fall against the references, of at least :data:`MARGIN_Z`
   of their standard deviations, comes after λk (very unequal groups: the
   references' fine cells are as tight as a group of 15 rows).  Where the
   spectrum sees no structure at all, groups at least four times as tight
   (:data:`~sca.reference.gap.DECISIVE_EFFECT`) stand on their own: groups
   along one principal axis have references elongated alike, whose cells
   k-means cuts as consistently as the groups themselves.

The package: :mod:`~sca.reference.draws` draws the reference data and runs
them through the ensemble, :mod:`~sca.reference.rule` reads k off the
spectra, and :mod:`~sca.reference.gap` gives the rule the gap statistic of
the ensemble's own k-means runs for the few-rows cases the spectrum cannot
count.
"""

from .draws import (
    BALANCE_TOL,
    DRAWS,
    EXTRA,
    FIRST_DRAWS,
    MAX_DRAWS,
    MAX_REFERENCE_N,
    References,
    eigenvalues_of,
    gap_applies,
    reference_applies,
    reference_count,
    reference_data,
    reference_spectra,
    reference_spectrum,
    run_levels,
)
from .gap import DECISIVE_EFFECT, MIN_EFFECT, GapStatistic, gap_choice, level_dispersions, levels_of
from .rule import (
    BEYOND_Z,
    CLIFF_EXCESS,
    CLIFF_Z,
    MARGIN_Z,
    MIN_DROP_SD,
    MIN_SD,
    NEAR,
    SETTLED_EXCESS,
    SETTLED_Z,
    TINY,
    ReferenceChoice,
    in_doubt,
    reference_k,
    settled,
)

__all__ = [
    "BALANCE_TOL",
    "BEYOND_Z",
    "CLIFF_EXCESS",
    "CLIFF_Z",
    "DRAWS",
    "EXTRA",
    "FIRST_DRAWS",
    "MARGIN_Z",
    "MAX_DRAWS",
    "MAX_REFERENCE_N",
    "MIN_DROP_SD",
    "DECISIVE_EFFECT",
    "MIN_EFFECT",
    "MIN_SD",
    "NEAR",
    "SETTLED_EXCESS",
    "SETTLED_Z",
    "TINY",
    "GapStatistic",
    "ReferenceChoice",
    "References",
    "eigenvalues_of",
    "gap_applies",
    "gap_choice",
    "in_doubt",
    "level_dispersions",
    "levels_of",
    "reference_applies",
    "reference_count",
    "reference_data",
    "reference_k",
    "reference_spectra",
    "reference_spectrum",
    "run_levels",
    "settled",
]
