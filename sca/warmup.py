"""Compiled kernels and first calls taken before a process's first job.

The label-matrix operator's loops (:mod:`sca.operators.compiled`) are compiled
by numba for each type of their arguments, and cached on disk; a process still
loads each from that cache, and imports what the stages use (scipy's
eigensolvers, scikit-learn's k-means), on its first job.  :func:`warm` runs a
small label-run job through every stage, large enough for the compiled loops
(twice :data:`sca.operators.kernels.COMPILED_MIN_ROWS` rows), for each width of
label codes the operator packs, and the products of runs with as many
labels as elements (:data:`MANY_LABELS`) and the groups of a count by bounds
(:mod:`sca.bounds`): a process that calls it before taking work
(a Celery worker process, the embedded default's runner, an image build
with ``sca warm``) gives its first job the speed of the next ones.  With an
empty disk cache the same call compiles the loops and fills the cache.
"""

from __future__ import annotations

import threading
import time

#: (runs, clusters) of the warm-up jobs: many runs (packed codes, pair counts),
#: few (the one-column products' wide codes, used once n exceeds their number
#: of codes), and more labels a run (wider codes).
SHAPES = ((100, 5), (10, 5), (20, 40))
#: (runs, clusters) of label runs with as many labels as elements, whose products
#: alone are taken: their wide codes, and the single-precision block products of
#: an iteration without a Gram matrix (a whole job of them would double the warm-up).
MANY_LABELS = (100, 100)

_lock = threading.Lock()
_warmed = False


def warm(seed: int = 0) -> float:
    """Run the warm-up jobs (see the module) once per process; the seconds they
    took, 0.0 when this process was already warm.  Thread-safe: a second
    caller waits for the first."""
    global _warmed
    with _lock:
        if _warmed:
            return 0.0
        import numpy as np

        from .inputs import membership_operator
        from .operators import compiled
        from .operators.kernels import COMPILED_MIN_ROWS, strong_pair_roots
        from .operators.labels import BLOCK_MIN_COLUMNS
        from .pipeline import run_stages
        from .planted import planted_runs, planted_truth

        start = time.perf_counter()
        rng = np.random.default_rng(seed)
        for runs, k in SHAPES:
            truth = planted_truth(2 * COMPILED_MIN_ROWS, [1] * k, rng)
            labels = planted_runs(truth, runs, 0.3, rng)
            run_stages(membership_operator(labels), {"seed": seed}, {})
        runs, k = MANY_LABELS
        truth = planted_truth(runs * k, [1] * k, rng)  # as many elements as codes
        S = membership_operator(planted_runs(truth, runs, 0.3, rng))
        S.matmat(np.ones(S.n))  # its wide codes, then a null draw's, packed by run
        S.null_draw(rng).matmat(np.ones(S.n))
        S.matmat(np.ones((S.n, BLOCK_MIN_COLUMNS)), single=True)
        # the groups of a count by bounds (sca.bounds): their loops on a few elements
        few = planted_truth(64, [1] * 4, rng)
        strong_pair_roots(membership_operator(planted_runs(few, 4, 0.3, rng)).H, 2)
        compiled.merge_forests(np.arange(4), np.arange(4))  # where the rows span the cores
        _warmed = True
        return time.perf_counter() - start
