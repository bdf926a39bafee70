"""The k and r axes of ``scripts/benchmark.py``: many clusters, many runs.

Planted equal blocks (:mod:`sca.planted`, each run relabelling a ``noise``
fraction of the elements at random) at one n: along the k axis r is fixed
and the number of blocks grows (``--clusters 40 200 1000``), along the r axis
k is fixed and the number of runs grows (``--runs-axis 100 1000``).  Each
point runs in a fresh process after a small warm-up: the stages
(``sca.run_stages``: balancing, spectrum with the automatic k, iteration)
from the label runs, then, on the same labels in the same process, a peer
that scales in k: scikit-learn's ``HDBSCAN`` on the Hamming distance of the
label rows (the fraction of runs that disagree, ``1 - S_ij / r``, the
evidence-accumulation distance), precomputed on a random subsample of
:data:`PEER_ROWS` rows (the distances of all n rows would not fit), with
``min_cluster_size`` a quarter of a planted block's share of the subsample.
HDBSCAN finds its own number of clusters, as the automatic k does; its ARI
is on the subsample, against the truth, its noise points one cluster.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from shared import peak_rss_gib

#: Rows of the peer's subsample: its precomputed distances are PEER_ROWS^2 floats.
PEER_ROWS = 8000
#: Wall-second targets at n = 10^5, r = 100 (issue 23's k axis).
K_TARGETS = {40: 3.0, 200: 10.0, 1000: 60.0}

AXES_HEADER = (
    "| n | r | k planted | stages wall s | stages CPU s | peak RSS | k found | ARI "
    "| HDBSCAN wall s | HDBSCAN CPU s | HDBSCAN k | HDBSCAN ARI | target s |\n"
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def _timed(fn):
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - c


def peer(labels: np.ndarray, truth: np.ndarray, blocks: int, seed: int) -> dict:
    """HDBSCAN on the Hamming distance of a subsample of the label rows."""
    from scipy.spatial.distance import pdist, squareform
    from sklearn.cluster import HDBSCAN
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(labels.shape[0], min(PEER_ROWS, labels.shape[0]), replace=False))
    size = max(2, rows.size // (4 * blocks))

    def fit():
        D = squareform(pdist(labels[rows], metric="hamming"))
        return HDBSCAN(min_cluster_size=size, metric="precomputed").fit_predict(D)

    found, wall, cpu = _timed(fit)
    return {
        "wall": wall,
        "cpu": cpu,
        "k": int(np.unique(found[found >= 0]).size),
        "ari": float(adjusted_rand_score(truth[rows], found)),
    }


def one_point(n: int, runs: int, blocks: int, noise: float, seed: int) -> dict:
    """The stages and the peer on one planted input, in this process."""
    from sklearn.metrics import adjusted_rand_score

    import sca
    from sca.planted import planted_runs, planted_truth

    rng = np.random.default_rng(seed + 1)  # warm-up: imports, thread pools, compiled kernels
    small = planted_truth(8192, [1] * 5, rng)
    S = sca.membership_operator(planted_runs(small, 20, noise, rng, dtype=np.uint8))
    sca.run_stages(S, {"seed": seed})
    rng = np.random.default_rng(seed)
    truth = planted_truth(n, [1] * blocks, rng)
    dtype = np.uint8 if blocks <= 256 else np.uint16
    labels = planted_runs(truth, runs, noise, rng, dtype=dtype)
    rss_before = peak_rss_gib()

    def stages():
        return sca.run_stages(sca.membership_operator(labels), {"seed": seed})

    (_, spec, result, _), wall, cpu = _timed(stages)
    out = {
        "n": n,
        "runs": runs,
        "blocks": blocks,
        "wall": wall,
        "cpu": cpu,
        "rss_gib": peak_rss_gib(),
        "rss_before_gib": rss_before,
        "k": int(spec.k),
        "ari": float(adjusted_rand_score(truth, result.labels)),
    }
    out["peer"] = peer(labels, truth, blocks, seed)
    return out


def summary(rows: list[dict]) -> dict:
    """Medians over the repeats of one point."""

    def med(f):
        return statistics.median(f(r) for r in rows)

    first = rows[0]
    target = K_TARGETS.get(first["blocks"]) if first["runs"] == 100 else None
    return {
        "n": first["n"],
        "runs": first["runs"],
        "blocks": first["blocks"],
        "repeats": len(rows),
        "wall": med(lambda r: r["wall"]),
        "cpu": med(lambda r: r["cpu"]),
        "rss_gib": med(lambda r: r["rss_gib"]),
        "k": med(lambda r: r["k"]),
        "ari": med(lambda r: r["ari"]),
        "peer_wall": med(lambda r: r["peer"]["wall"]),
        "peer_cpu": med(lambda r: r["peer"]["cpu"]),
        "peer_k": med(lambda r: r["peer"]["k"]),
        "peer_ari": med(lambda r: r["peer"]["ari"]),
        "target": target,
    }


def markdown_row(row: dict) -> str:
    target = "—" if row["target"] is None else f"{row['target']:.0f}"
    cells = [
        f"{row['n']:,}",
        str(row["runs"]),
        str(row["blocks"]),
        f"{row['wall']:.2f}",
        f"{row['cpu']:.2f}",
        f"{row['rss_gib']:.2f} GiB",
        f"{row['k']:.0f}",
        f"{row['ari']:.3f}",
        f"{row['peer_wall']:.2f}",
        f"{row['peer_cpu']:.2f}",
        f"{row['peer_k']:.0f}",
        f"{row['peer_ari']:.3f}",
        target,
    ]
    return "| " + " | ".join(cells) + " |"


def points(n: int, runs: int, blocks: int, clusters, runs_axis) -> list[tuple[int, int, int]]:
    """``(n, r, k)`` of each point: the k axis at r = ``runs``, then the r axis at
    k = ``blocks``."""
    out = [(n, runs, k) for k in clusters or ()]
    out += [(n, r, blocks) for r in runs_axis or ()]
    return out
