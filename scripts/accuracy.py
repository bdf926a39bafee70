"""Accuracy of the automatic k and of the clusters, against peers: on raw data and on label runs.

**Raw data** (``--part raw``, :mod:`accuracy_raw`): the estimator
(``sca.StochasticClustering`` with its defaults, called in ``sca_fit``) and
six peers get exactly the same rows (standardised for all when the
estimator's default ``scale`` is ``standard``; the header line says which).
Peers choose k in 1 ... ceil(sqrt(n)) kept within [10, 25]: ``gap`` (gap
statistic, uniform references over the principal-component box), ``sil+gap``
(best k-means silhouette, k = 1 when the gap statistic keeps it),
``gmm-bic`` (Gaussian mixture, least BIC; diagonal covariance when d > n/5),
``hdbscan`` (scikit-learn's defaults; noise is one more cluster for the
ARI), ``monti`` (consensus clustering, k by PAC; never k = 1; above 2,000
rows the consensus is built on 2,000 and the rest take their nearest
neighbour's label) and ``EA`` (evidence accumulation, lifetime k).  A peer
whose work estimate stands for more than about a minute on one core is
skipped on that case and shown as '-'.  Cases (:mod:`accuracy_cases`):
structureless (uniform 2-D, Gaussian 10-D, Gaussian 200 x 1000), weak
structure (3 overlapping blobs), 2 ... 20 planted blobs, very unequal blobs
(500, 150, 40, 15), anisotropic and unequal-spread blobs, moons, circles, at
seeds 0 ... seeds - 1; and once each iris, wine, breast cancer, digits
(scikit-learn), leukemia, medulloblastoma and Ruspini (data/).  Each row
prints the true k, every method's k and ARI, sca's ARI when told the true k
and its seconds; the summary counts, per method, k right, k = 1 on
structureless data, k no more than planted on weak structure, the largest
unequal blocks not split, the mean ARI on the real sets and the seconds.

**Label runs** (``--part labels``): no structure (random labels), weak
structure (few runs, most labels random), 10/20/40 equal blocks at n = 4,000
and 100,000, very unequal blocks (2000, 500, 100, 30, 10), iris (k-means
k = 3, 4) and leukemia (NMF k = 3).  For each case and seed, on the same
label runs, it prints the true k and:

* ``sca``: k by the default rule (the noise floor of :mod:`sca.null`) and the
  ARI of the default configuration with it; beside it the k of the
  alternatives on the same spectrum: the null's top eigenvalue alone as the
  floor (``edge``), the largest gap among λ2..λk̂ (``gap``, the earlier
  default) and the paper's Perron cluster;
* ``EA``: average-linkage evidence accumulation on ``1 - S/r`` with Fred &
  Jain's lifetime k (the k whose range of cut heights is longest, k = 1
  included), and its ARI;
* ``HDBSCAN`` on ``1 - S/r`` (scikit-learn, precomputed; noise points form one
  more cluster for the ARI);
* ``SC``: scikit-learn's ``SpectralClustering(affinity="precomputed")`` with
  the true k.

Peers need the dense n x n consensus and run up to n = 10,000 only.

BLAS and OpenMP run on one thread throughout.

    python scripts/accuracy.py                          # both parts, 3 seeds
    python scripts/accuracy.py --part raw --quick       # seed 0, every raw case
    python scripts/accuracy.py --part labels --quick    # n <= 4,000 and seed 0
    python scripts/accuracy.py --part raw --markdown    # summary table for the README
    python scripts/accuracy.py --part raw --case moons --case circles --ensemble single:2,3,4,5x8
    python scripts/accuracy.py --part raw --quick --ensemble single:2,3,4,5x4 --beside-default
"""

from __future__ import annotations

import argparse
import sys
import time

import accuracy_raw
import numpy as np
from accuracy_peers import lifetime_k
from shared import DATA, PEER_MAX_N, load_labels, load_matrix, spectral_clustering
from sklearn.metrics import adjusted_rand_score
from threadpoolctl import threadpool_limits

import sca
from sca.cli import parse_ensemble
from sca.ensemble_spec import default_ensemble
from sca.planted import planted_runs, planted_truth

NO_STRUCTURE, WEAK, PLANTED, DATA_SETS = "no structure", "weak", "planted", "data"


def peers(S: sca.FactoredOperator, runs: int, k_true: int, seed: int) -> dict:
    from sklearn.cluster import HDBSCAN

    A = S.to_dense()
    D = np.clip(1.0 - A / runs, 0.0, None)
    np.fill_diagonal(D, 0.0)
    out = {}
    out["ea_k"], out["ea_labels"] = lifetime_k(D)
    hdb = HDBSCAN(metric="precomputed", min_cluster_size=5, copy=True).fit_predict(D)
    out["hdb_k"], out["hdb_labels"] = int(np.unique(hdb[hdb >= 0]).size), hdb
    if k_true > 1:
        out["sc_labels"] = spectral_clustering(A, k_true, seed)
    return out


def score(kind: str, S, runs: int, truth, seed: int, sparse=None) -> dict:
    k_true = int(np.unique(truth).size)
    t = time.perf_counter()
    _, spec, found, _ = sca.run_stages(S, {"seed": seed})
    ari = lambda labels: float(adjusted_rand_score(truth, labels))  # noqa: E731
    same = None
    if sparse is not None:  # the same stages on the sparse H of the same runs
        _, spec_h, found_h, _ = sca.run_stages(sparse, {"seed": seed})
        same = int(spec_h.k == spec.k and np.array_equal(found_h.labels, found.labels))
    row = {
        "kind": kind,
        "n": S.n,
        "k_true": k_true,
        "k": spec.k,
        "ari": ari(found.labels),
        "seconds": time.perf_counter() - t,
        # the alternatives, read off the same spectrum: the null's top eigenvalue
        # alone as the floor, the largest gap among λ2..λk̂, the Perron cluster
        "k_edge": max(1, int(np.sum(spec.eigenvalues > spec.floor))),
        "k_gap": sca.largest_gap_k(spec.eigenvalues) if spec.k_hat > 2 else 1,
        "k_perron": sca.perron_cluster(spec.eigenvalues),
        "same_as_h": same,
    }
    if S.n <= PEER_MAX_N:
        p = peers(S, runs, k_true, seed)
        row.update(
            ea_k=p["ea_k"],
            ea_ari=ari(p["ea_labels"]),
            hdb_k=p["hdb_k"],
            hdb_ari=ari(p["hdb_labels"]),
        )
        if "sc_labels" in p:
            row["sc_ari"] = ari(p["sc_labels"])
    return row


def cases(quick: bool, seeds: int = 3):
    for seed in range(1 if quick else seeds):
        rng = np.random.default_rng(seed)
        for n, r, k in ((300, 50, 5), (1800, 100, 5)) + (() if quick else ((100_000, 100, 5),)):
            yield (
                NO_STRUCTURE,
                f"random labels n={n} r={r}",
                seed,
                rng.integers(0, k, (n, r)),
                np.zeros(n, dtype=int),
            )
        truth = planted_truth(300, [1, 1, 1], rng)
        yield WEAK, "3 blocks n=300 r=5 60% random", seed, planted_runs(truth, 5, 0.6, rng), truth
        for n in (4000,) if quick else (4000, 100_000):
            for blocks in (10, 20, 40):
                truth = planted_truth(n, [1] * blocks, rng)
                yield (
                    PLANTED,
                    f"{blocks} blocks n={n}",
                    seed,
                    planted_runs(truth, 100, 0.5, rng),
                    truth,
                )
        truth = rng.permutation(np.repeat(np.arange(5), [2000, 500, 100, 30, 10]))
        yield PLANTED, "blocks 2000,500,100,30,10", seed, planted_runs(truth, 100, 0.3, rng), truth
        X = load_matrix(DATA / "iris" / "X.csv")
        runs = sca.ensemble_labels(X, [{"algorithm": "kmeans", "k": [3, 4], "runs": 50}], seed)
        truth = load_labels(DATA / "iris" / "labels.csv")
        yield DATA_SETS, "iris kmeans(3,4)x50", seed, runs, truth
        X = load_matrix(DATA / "leukemia" / "X.csv")
        runs = sca.ensemble_labels(X, [{"algorithm": "nmf", "k": 3, "runs": 100}], seed)
        yield (
            DATA_SETS,
            "leukemia nmf(3)x100",
            seed,
            runs,
            load_labels(DATA / "leukemia" / "labels.csv"),
        )


def labels_part(quick: bool, seeds: int, compare_sparse: bool) -> None:
    """Every label-runs case: the table, then the summary lines."""
    cols = [
        ("k_true", "true k"),
        ("k", "sca k"),
        ("ari", "sca ARI"),
        ("k_edge", "edge k"),
        ("k_gap", "gap k"),
        ("k_perron", "Perron k"),
        ("ea_k", "EA k"),
        ("ea_ari", "EA ARI"),
        ("hdb_k", "HDB k"),
        ("hdb_ari", "HDB ARI"),
        ("sc_ari", "SC ARI"),
    ] + ([("same_as_h", "same H")] if compare_sparse else [])
    print(f"{'case':<32} {'seed':>4} " + " ".join(f"{title:>8}" for _, title in cols), flush=True)
    rows = []
    for kind, name, seed, runs, truth in cases(quick, seeds):
        sparse = None
        if compare_sparse:
            from sca.inputs import membership_factors

            H, groups = membership_factors(runs)
            sparse = sca.FactoredOperator(H, groups=groups)
        row = score(kind, sca.membership_operator(runs), runs.shape[1], truth, seed, sparse)
        rows.append(row)
        cells = [
            f"{'-':>8}"
            if row.get(c) is None
            else f"{row[c]:>8}"
            if isinstance(row[c], int)
            else f"{row[c]:>8.3f}"
            for c, _ in cols
        ]
        print(f"{name:<32} {seed:>4} " + " ".join(cells), flush=True)
    of = lambda kind: [r for r in rows if r["kind"] == kind]  # noqa: E731
    none, weak, planted = of(NO_STRUCTURE), of(WEAK), of(PLANTED)
    with_peers = [r for r in planted if "ea_k" in r]
    print(
        f"\nno structure: sca k = 1 in {sum(r['k'] == 1 for r in none)}/{len(none)}, EA "
        f"{sum(r.get('ea_k') == 1 for r in none if 'ea_k' in r)}/"
        f"{sum('ea_k' in r for r in none)}"
    )
    print(
        f"weak structure: sca k in {{true k, 1}} in "
        f"{sum(r['k'] in (1, r['k_true']) for r in weak)}/{len(weak)}, "
        f"EA {sum(r['ea_k'] in (1, r['k_true']) for r in weak)}/{len(weak)}"
    )
    print(
        f"planted: sca k right in {sum(r['k'] == r['k_true'] for r in planted)}/{len(planted)}"
        f" (with peers: {sum(r['k'] == r['k_true'] for r in with_peers)}/{len(with_peers)}), "
        f"EA lifetime k right in {sum(r['ea_k'] == r['k_true'] for r in with_peers)}/"
        f"{len(with_peers)}"
    )
    for key, title in (
        ("k_edge", "edge-only floor"),
        ("k_gap", "largest gap"),
        ("k_perron", "Perron cluster"),
    ):
        print(
            f"alternative k rules, {title}: k = 1 on no structure "
            f"{sum(r[key] == 1 for r in none)}/{len(none)}; weak in {{true k, 1}} "
            f"{sum(r[key] in (1, r['k_true']) for r in weak)}/{len(weak)}; planted right "
            f"{sum(r[key] == r['k_true'] for r in planted)}/{len(planted)}"
        )
    for name in ("iris", "leukemia"):
        data = [r for r in of(DATA_SETS) if r["n"] == (150 if name == "iris" else 38)]
        print(
            f"{name}: sca ARI median {np.median([r['ari'] for r in data]):.3f}, EA ARI median "
            f"{np.median([r['ea_ari'] for r in data]):.3f}"
        )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("raw", "labels", "all"), default="all")
    parser.add_argument("--quick", action="store_true", help="seed 0 only, and the cheaper cases")
    parser.add_argument("--seeds", type=int, default=3, help="seeds of the synthetic cases")
    parser.add_argument(
        "--markdown", action="store_true", help="the raw part's summary table as Markdown"
    )
    parser.add_argument(
        "--compare-sparse",
        action="store_true",
        help="label runs: also run the stages on the sparse H of the same runs; column "
        "'same H' is 1 when k and the clusters are identical",
    )
    parser.add_argument(
        "--ensemble",
        action="append",
        type=parse_ensemble,
        metavar="ALGO:KxRUNS",
        help="raw data: sca's ensemble instead of the default, as for 'sca cluster' (repeatable)",
    )
    parser.add_argument(
        "--case",
        action="append",
        default=[],
        metavar="TEXT",
        help="raw data: only the cases whose name contains TEXT (repeatable)",
    )
    parser.add_argument(
        "--beside-default",
        action="store_true",
        help="raw data: --ensemble's runs are added to the default ensemble",
    )
    args = parser.parse_args(argv)
    ensemble = args.ensemble
    if args.beside_default and args.ensemble:

        def ensemble(n: int) -> list[dict]:
            return default_ensemble(n) + args.ensemble

        ensemble.__doc__ = f"the default and {args.ensemble}"
    # the machine is shared and the timings compare methods, not thread pools
    with threadpool_limits(1):
        if args.part in ("labels", "all"):
            labels_part(args.quick, args.seeds, args.compare_sparse)
        if args.part in ("raw", "all"):
            if args.part == "all":
                print()
            t = time.perf_counter()
            accuracy_raw.run(args.quick, args.seeds, args.markdown, ensemble, args.case)
            print(f"raw part: {time.perf_counter() - t:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
