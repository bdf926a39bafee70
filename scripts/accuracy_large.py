"""The default's k on raw data larger than the reference data (beyond ``accuracy.py``'s cases).

Above :data:`sca.reference.MAX_REFERENCE_N` rows the reference data sets of
the k rule are drawn at that size, not at the data's n.  This runs the
default estimator, as ``accuracy.py`` does, on inputs from 3,000 to about
10,000 rows: Gaussian noise (10⁴ x 50) and uniform 3-D and 5-D cubes (no
structure: k = 1 is right), 5 blobs (10⁴ x 50), 20 blobs (10⁴ x 10 and
3,000 x 20) and six very unequal blobs (6,000 down to 40 rows), printing a
JSON line per case: the true and the found k, the ARI, CPU (of the process and
its worker processes) and wall seconds.
``--max-reference-n`` sets the references' rows, so that two sizes can be
compared on the same inputs in the same hour::

    python scripts/accuracy_large.py
    python scripts/accuracy_large.py --max-reference-n 4000
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
from shared import cpu_seconds
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

import sca
import sca.reference

#: Rows of the very unequal blobs, largest first.
UNEQUAL = [6000, 2000, 800, 300, 100, 40]


def cases(seed: int):
    """``(name, X, truth or None, true k)`` of each input."""
    rng = np.random.default_rng(seed)
    yield "Gaussian noise 10^4 x 50", rng.normal(size=(10000, 50)), None, 1
    yield "uniform cube 10^4 x 3", rng.random((10000, 3)), None, 1
    yield "uniform cube 10^4 x 5", rng.random((10000, 5)), None, 1
    yield "5 blobs 10^4 x 50", *make_blobs(10000, 50, centers=5, random_state=seed), 5
    yield "20 blobs 10^4 x 10", *make_blobs(10000, 10, centers=20, random_state=seed), 20
    yield "20 blobs 3000 x 20", *make_blobs(3000, 20, centers=20, random_state=seed), 20
    X, y = make_blobs(UNEQUAL, 10, center_box=(-12, 12), random_state=seed + 1)
    yield "6 unequal blobs 9240 x 10", X, y, len(UNEQUAL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-reference-n", type=int, default=sca.reference.MAX_REFERENCE_N)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sca.reference.draws.MAX_REFERENCE_N = args.max_reference_n  # where reference_spectra reads it
    warnings.simplefilter("ignore")
    for name, X, truth, k in cases(args.seed):
        wall, cpu = time.perf_counter(), cpu_seconds()
        model = sca.StochasticClustering(random_state=args.seed).fit(X)
        row = {
            "max_reference_n": args.max_reference_n,
            "case": name,
            "true k": k,
            "k": int(model.n_clusters_),
            "ARI": None if truth is None else round(adjusted_rand_score(truth, model.labels_), 3),
            "CPU s": round(cpu_seconds() - cpu, 1),
            "wall s": round(time.perf_counter() - wall, 1),
        }
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
