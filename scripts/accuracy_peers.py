"""The peers that choose k on raw data, for ``scripts/accuracy.py``.

Each peer takes the rows X, a seed and the largest k it may answer
(:func:`k_max`) and returns ``(k, labels)``.  :func:`lifetime_k` is the
evidence-accumulation cut, shared with the label-runs part of the script.
"""

from __future__ import annotations

import math

import numpy as np

#: Reference sets of the gap statistic.
GAP_REFERENCES = 10
#: Monti's subsamples, the share of rows in each, and the consensus band of PAC.
MONTI_RUNS, MONTI_FRACTION, PAC_BAND = 25, 0.8, (0.1, 0.9)
#: Largest n on which Monti's consensus is built; more rows are subsampled.
MONTI_MAX_N = 2000
#: k-means runs of evidence accumulation.
EA_RUNS = 50


def k_max(n: int) -> int:
    """The largest k a peer may choose: ceil(sqrt(n)) kept within [10, 25] (so that
    20 planted clusters are reachable from n = 400), and below n."""
    return min(n - 1, max(10, min(25, math.ceil(math.sqrt(n)))))


def lifetime_k(D: np.ndarray) -> tuple[int, np.ndarray]:
    """Average linkage on distances D, cut at the longest-lived k (Fred & Jain 2005).

    Distances lie in [0, 1], so k = 1 lives from the last merge up to 1.
    """
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    tree = linkage(squareform(D, checks=False), method="average")
    heights = np.concatenate([[0.0], tree[:, 2], [max(1.0, tree[-1, 2])]])
    # k clusters live from the (n-k)-th merge height to the next; all singletons
    # (k = n) are not a candidate
    life = np.diff(heights)
    k = D.shape[0] - 1 - int(np.argmax(life[1:]))
    return k, fcluster(tree, k, criterion="maxclust")


def _kmeans(X: np.ndarray, k: int, seed, n_init: int = 1):
    from sklearn.cluster import KMeans

    return KMeans(k, n_init=n_init, random_state=seed).fit(X)


def gap_statistic(X: np.ndarray, seed: int, kmax: int) -> dict:
    """Gap(k), s_k and k-means labels for k = 1 ... kmax (Tibshirani et al. 2001).

    W_k is k-means' within-cluster sum of squares (n_init=3); the references
    are uniform over the box of the data's principal components (the paper's
    method b).  The work is done in principal-component coordinates: the
    rotation keeps every distance, and it makes wide data (200 x 1000) as
    cheap as square data.

    Returns
    -------
    dict
        ``gap`` and ``s`` indexed by k - 1, ``labels`` a dict k -> labels.
    """
    rng = np.random.default_rng(seed)
    Xc = X - X.mean(axis=0)
    U, d, _ = np.linalg.svd(Xc, full_matrices=False)
    Z = U * d
    lo, hi = Z.min(axis=0), Z.max(axis=0)

    def log_w(Y, keep=None):
        out = [math.log(np.sum((Y - Y.mean(axis=0)) ** 2))]
        for k in range(2, kmax + 1):
            km = _kmeans(Y, k, int(rng.integers(2**31)), n_init=3)
            if keep is not None:
                keep[k] = km.labels_
            out.append(math.log(max(km.inertia_, 1e-300)))
        return np.array(out)

    labels = {1: np.zeros(X.shape[0], dtype=int)}
    observed = log_w(Z, labels)
    ref = np.array([log_w(rng.uniform(lo, hi, Z.shape)) for _ in range(GAP_REFERENCES)])
    gap = ref.mean(axis=0) - observed
    s = ref.std(axis=0) * math.sqrt(1.0 + 1.0 / GAP_REFERENCES)
    return {"gap": gap, "s": s, "labels": labels}


def gap_k(g: dict) -> tuple[int, np.ndarray]:
    """The smallest k with Gap(k) >= Gap(k+1) - s_{k+1} (k max when none)."""
    gap, s = g["gap"], g["s"]
    ks = [k for k in range(1, len(gap)) if gap[k - 1] >= gap[k] - s[k]]
    k = ks[0] if ks else len(gap)
    return k, g["labels"][k]


def sil_gap_k(X: np.ndarray, g: dict) -> tuple[int, np.ndarray]:
    """Best mean silhouette of the k-means labels over k >= 2, or k = 1 when the
    gap statistic keeps k = 1 (Gap(1) >= Gap(2) - s_2)."""
    from sklearn.metrics import silhouette_score

    if g["gap"][0] >= g["gap"][1] - g["s"][1]:
        return 1, g["labels"][1]
    ks = range(2, len(g["gap"]) + 1)
    scores = [silhouette_score(X, g["labels"][k]) for k in ks]
    k = ks[int(np.argmax(scores))]
    return k, g["labels"][k]


def gmm_bic(X: np.ndarray, seed: int, kmax: int) -> tuple[int, np.ndarray]:
    """The Gaussian mixture (n_init=2) with the smallest BIC over k = 1 ... kmax."""
    from sklearn.mixture import GaussianMixture

    n, d = X.shape
    # a full covariance has d(d+1)/2 parameters per component: with d above n/5
    # it cannot be estimated from the rows, the diagonal one can
    covariance = "diag" if d > n / 5 else "full"
    best = None
    for k in range(1, kmax + 1):
        gm = GaussianMixture(k, covariance_type=covariance, n_init=2, random_state=seed).fit(X)
        bic = gm.bic(X)
        if best is None or bic < best[0]:
            best = (bic, k, gm.predict(X))
    return best[1], best[2]


def hdbscan(X: np.ndarray, seed: int, kmax: int) -> tuple[int, np.ndarray]:
    """scikit-learn's HDBSCAN with its defaults; noise stays labelled -1, which the
    ARI counts as one more cluster.  ``seed`` and ``kmax`` are unused."""
    from sklearn.cluster import HDBSCAN

    labels = HDBSCAN(copy=True).fit_predict(X)
    return max(1, int(np.unique(labels[labels >= 0]).size)), labels


def _co_clustered(label_runs: list[np.ndarray], n: int) -> np.ndarray:
    """How many runs put each pair in one cluster; label -1 means not in the run."""
    blocks = []
    for labels in label_runs:
        seen = labels >= 0
        one_hot = np.zeros((n, int(labels.max()) + 1), dtype=np.float32)
        one_hot[np.flatnonzero(seen), labels[seen]] = 1.0
        blocks.append(one_hot)
    A = np.hstack(blocks)
    return A @ A.T


def monti(X: np.ndarray, seed: int, kmax: int) -> tuple[int, np.ndarray]:
    """Consensus clustering (Monti et al. 2003) with k by PAC (Şenbabaoğlu et al. 2014).

    25 subsamples of 80% of the rows, k-means (n_init=1) at each k = 2 ... kmax;
    the k with the smallest proportion of consensus entries in (0.1, 0.9)
    wins (a tie goes to the smaller k: well separated blobs give PAC = 0 at
    the true k and at fewer clusters alike), and its labels are average
    linkage on 1 - consensus.  It never answers k = 1.  Above 2,000 rows the
    consensus is built on 2,000 of them and the others take the label of
    their nearest neighbour among those.
    """
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(seed)
    n = X.shape[0]
    rows = np.sort(rng.choice(n, MONTI_MAX_N, replace=False)) if n > MONTI_MAX_N else np.arange(n)
    Y, m = X[rows], rows.size
    draws = [
        np.sort(rng.choice(m, int(MONTI_FRACTION * m), replace=False)) for _ in range(MONTI_RUNS)
    ]
    sampled = np.zeros((m, MONTI_RUNS), dtype=np.float32)
    for h, idx in enumerate(draws):
        sampled[idx, h] = 1.0
    together = np.maximum(sampled @ sampled.T, 1.0)  # pairs never drawn together: C = 0
    upper = np.triu_indices(m, 1)
    best = None
    for k in range(2, kmax + 1):
        runs = []
        for idx in draws:
            labels = np.full(m, -1)
            labels[idx] = _kmeans(Y[idx], k, int(rng.integers(2**31))).labels_
            runs.append(labels)
        C = _co_clustered(runs, m) / together
        pac = float(np.mean((C[upper] > PAC_BAND[0]) & (C[upper] < PAC_BAND[1])))
        if best is None or pac < best[0]:
            best = (pac, k, C)
    _, k, C = best
    D = np.clip(1.0 - C, 0.0, None)
    np.fill_diagonal(D, 0.0)
    labels = fcluster(linkage(squareform(D, checks=False), method="average"), k, "maxclust")
    if m < n:
        labels = KNeighborsClassifier(1).fit(Y, labels).predict(X)
    return k, labels


def evidence_accumulation(X: np.ndarray, seed: int, kmax: int) -> tuple[int, np.ndarray]:
    """Fred & Jain (2005): 50 k-means runs, k uniform in [ceil(sqrt(n)/2), ceil(sqrt(n))],
    average linkage on 1 - co-association, lifetime k.  ``kmax`` is unused."""
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    hi = min(n - 1, math.ceil(math.sqrt(n)))
    lo = min(hi, math.ceil(math.sqrt(n) / 2))
    runs = [
        _kmeans(X, int(rng.integers(lo, hi + 1)), int(rng.integers(2**31))).labels_
        for _ in range(EA_RUNS)
    ]
    D = 1.0 - _co_clustered(runs, n) / EA_RUNS
    np.fill_diagonal(D, 0.0)
    return lifetime_k(np.clip(D, 0.0, 1.0))
