"""Accuracy of the default configuration against peers, and of its rule for k.

On planted partitions (equal and unequal blocks, n = 1e3 to 1e5), iris and
leukemia, prints for each case and seed:

* k by the default rule (largest gap among λ2 .. λk̂) and by the eigengap of
  the same spectrum (the paper's Perron cluster), against the true k;
* adjusted Rand index of the default configuration (k-means split of a block
  of iterates) with its own k and with the true k, of the paper's algorithm
  (single start, gap split) with the true k, and of scikit-learn's
  ``SpectralClustering(affinity="precomputed")`` with the true k on the same
  consensus (where S fits in memory).

    python scripts/accuracy.py            # about 10 minutes on 2 cores
    python scripts/accuracy.py --quick
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from sklearn.metrics import adjusted_rand_score

import sca
from sca.planted import planted_runs, planted_truth
from shared import DATA, PEER_MAX_N, load_labels, load_matrix, spectral_clustering


def score(S, truth, seed: int) -> dict:
    k_true = int(np.unique(truth).size)
    P = sca.balance(S).P
    spec = sca.spectrum(P)
    ari = lambda labels: float(adjusted_rand_score(truth, labels))  # noqa: E731
    row = {"n": S.n, "k_true": k_true, "k_default": spec.k,
           "k_eigengap": sca.perron_cluster(spec.eigenvalues),
           "ari_default": ari(sca.iterate(P, spec.k, seed=seed).labels),
           "ari_default_true_k": ari(sca.iterate(P, k_true, seed=seed).labels)}
    try:
        row["ari_paper_true_k"] = ari(sca.iterate(P, k_true, seed=seed, split="gaps").labels)
    except sca.IterationError:
        row["ari_paper_true_k"] = float("nan")
    if S.n <= PEER_MAX_N:
        row["ari_spectral_clustering"] = ari(spectral_clustering(S.to_dense(), k_true, seed))
    return row


def cases(quick: bool):
    sizes = [1000, 10_000] if quick else [1000, 10_000, 100_000]
    seeds = range(2) if quick else range(3)
    for n in sizes:
        for shape, blocks in (("equal", [1] * 5), ("unequal", [1, 2, 3, 4, 5, 6])):
            for seed in seeds:
                rng = np.random.default_rng(seed)
                truth = planted_truth(n, blocks, rng)
                S = sca.membership_operator(planted_runs(truth, 100, 0.5, rng))
                yield f"planted {shape} n={n}", seed, S, truth
    X = load_matrix(DATA / "iris" / "X.csv")
    species = load_labels(DATA / "iris" / "labels.csv")
    for seed in seeds:
        runs = sca.ensemble_labels(X, [{"algorithm": "kmeans", "k": [3, 4], "runs": 50}], seed)
        yield "iris kmeans(3,4)x50", seed, sca.membership_operator(runs), species
    X = load_matrix(DATA / "leukemia" / "X.csv")
    classes = load_labels(DATA / "leukemia" / "labels.csv")
    for seed in seeds:
        runs = sca.ensemble_labels(X, [{"algorithm": "nmf", "k": 3, "runs": 30 if quick else 100}],
                                   seed)
        yield "leukemia nmf(3)", seed, sca.membership_operator(runs), classes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    cols = ["k_true", "k_default", "k_eigengap", "ari_default", "ari_default_true_k",
            "ari_paper_true_k", "ari_spectral_clustering"]
    print(f"{'case':<28} {'seed':>4} " + " ".join(f"{c:>12}" for c in cols))
    tally = {"default_k_right": 0, "eigengap_k_right": 0, "cases": 0,
             "default_ge_sc": 0, "sc_cases": 0}
    for name, seed, S, truth in cases(args.quick):
        row = score(S, truth, seed)
        cells = []
        for c in cols:
            v = row.get(c)
            cells.append(f"{'-':>12}" if v is None else
                         f"{v:>12}" if isinstance(v, int) else f"{v:>12.3f}")
        print(f"{name:<28} {seed:>4} " + " ".join(cells), flush=True)
        tally["cases"] += 1
        tally["default_k_right"] += row["k_default"] == row["k_true"]
        tally["eigengap_k_right"] += row["k_eigengap"] == row["k_true"]
        if "ari_spectral_clustering" in row:
            tally["sc_cases"] += 1
            tally["default_ge_sc"] += row["ari_default_true_k"] >= row["ari_spectral_clustering"] - 1e-9
    print(f"\nk right: default rule {tally['default_k_right']}/{tally['cases']}, eigengap "
          f"{tally['eigengap_k_right']}/{tally['cases']}; default ARI (true k) >= "
          f"SpectralClustering ARI in {tally['default_ge_sc']}/{tally['sc_cases']} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
