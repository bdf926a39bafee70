"""Expression-shaped raw data (few rows, thousands of columns): what the default
sees, and what three alternatives to it would see.

Part ``scale``: the default job (``scale="standard"``) beside ``scale="none"``
on the real expression sets (leukemia, medulloblastoma) and on the
synthetic ones of ``accuracy_cases.py`` (three groups over lognormal genes;
genes in modules without groups), each with the automatic k and told the
true k; and, where there are groups, the paper's ensemble on leukemia (NMF
at the true k, 100 runs) with either scaling.

Part ``references``: λ2 … λ4 of P for the data, run through the default
ensemble, against eight reference data sets of three kinds, each run
through the same ensemble by the code the default uses
(``sca.reference.reference_spectrum``):

- ``pca``: the default's references (``sca.reference.reference_data``):
  Gaussian rows with the data's principal axes and variances;
- ``exact``: the same axes, the scores drawn at random but made orthonormal,
  so that each reference has exactly the data's sample principal variances
  (with fewer rows than columns, Gaussian scores inflate the top variances);
- ``columns``: each column's values permuted across the rows on its own
  (every column's distribution kept, every correlation lost);

and, for leukemia, NMF runs (the paper's ensemble on this set) against
column-permuted references (NMF needs nonnegative references, which the
first two kinds are not).  Prints the data's eigenvalues, the references'
mean and their standard scores.

Part ``genes``: the field's usual preparation of expression data before
consensus clustering (ConsensusClusterPlus, M3C): log2 of the values, then
only the genes of largest variance (200 or 1,000), given to the default job
with ``scale="none"`` and to the gap statistic of ``accuracy_peers.py``::

    python scripts/accuracy_expression.py --part scale references genes
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from accuracy_cases import expression, gene_modules
from accuracy_peers import gap_k, gap_statistic
from shared import DATA, load_labels, load_matrix
from sklearn.metrics import adjusted_rand_score
from threadpoolctl import threadpool_limits

import sca
from sca.ensemble_spec import default_ensemble
from sca.inputs import fit_scaling
from sca.reference import reference_data, reference_spectrum

#: Reference data sets of each kind.
DRAWS = 8
#: Eigenvalues printed, λ2 first.
SHOWN = 3
#: Genes kept in part ``genes``: those of largest variance of log2 expression.
TOP_GENES = (200, 1000)


def cases() -> list[tuple[str, np.ndarray, np.ndarray]]:
    out = [
        (name, load_matrix(DATA / name / "X.csv"), load_labels(DATA / name / "labels.csv"))
        for name in ("leukemia", "medulloblastoma")
    ]
    for seed in range(3):
        out.append((f"3 groups lognormal s{seed}", *expression(seed)))
    for seed in range(3):
        X = gene_modules(seed)
        out.append((f"gene modules s{seed}", X, np.zeros(X.shape[0], dtype=int)))
    return out


def scale_part() -> None:
    print(f"{'case':26s} {'ensemble':12s} {'scale':9s} {'k':>3s} {'ARI':>6s} {'ARI@k':>6s}")
    for name, X, y in cases():
        true_k = np.unique(y).size
        ensembles = {"default": None}
        if true_k > 1:  # the paper's ensemble on leukemia, at the true k
            ensembles[f"NMF {true_k} x 100"] = [{"algorithm": "nmf", "k": [true_k], "runs": 100}]
        for label, ensemble in ensembles.items():
            for scale in ("standard", "none"):
                found = sca.StochasticClustering(
                    ensemble=ensemble, scale=scale, random_state=0
                ).fit(X)
                told = "-"
                if ensemble is None and true_k > 1:
                    fit = sca.StochasticClustering(scale=scale, random_state=0, n_clusters=true_k)
                    told = f"{adjusted_rand_score(y, fit.fit(X).labels_):.2f}"
                elif true_k == 1:
                    told = f"{adjusted_rand_score(y, found.labels_):.2f}"
                print(
                    f"{name:26s} {label:12s} {scale:9s} {found.n_clusters_:3d} "
                    f"{adjusted_rand_score(y, found.labels_):6.2f} {told:>6s}"
                )


def exact_reference(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Rows with exactly the sample principal axes and variances of X."""
    centre = X.mean(axis=0)
    _, s, Vt = np.linalg.svd(X - centre, full_matrices=False)
    r = min(X.shape[0] - 1, s.size)
    Z = rng.standard_normal((X.shape[0], r))
    Q, R = np.linalg.qr(Z - Z.mean(axis=0))
    return centre + (Q * np.sign(np.diag(R)) * s[:r]) @ Vt[:r]


def column_reference(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each column's values permuted across the rows on its own."""
    return rng.permuted(X, axis=0)


KINDS = {"pca": reference_data, "exact": exact_reference, "columns": column_reference}


def against(X: np.ndarray, ensemble: list[dict], kind: str = "pca"):
    """λ1 … λ(SHOWN + 1) of the data's P, the references' mean, and the data's
    standard scores against them."""
    count = SHOWN + 1
    data, _ = reference_spectrum(X, ensemble, 0, count)
    rng = np.random.default_rng(1)
    spectra = np.array(
        [reference_spectrum(KINDS[kind](X, rng), ensemble, s + 1, count)[0] for s in range(DRAWS)]
    )
    mean, sd = spectra.mean(axis=0), spectra.std(axis=0, ddof=1)
    return data, mean, (data - mean) / np.where(sd > 0, sd, np.inf)


def compare(name: str, X: np.ndarray, ensemble: list[dict], kinds) -> None:
    for kind in kinds:
        data, mean, z = against(X, ensemble, kind)
        cells = "  ".join(f"{data[i]:.3f}/{mean[i]:.3f} z {z[i]:5.1f}" for i in range(1, data.size))
        print(f"{name:26s} {kind:8s} {cells}")


def references_part() -> None:
    print(f"{'case':26s} {'kind':8s} λ2 … λ{SHOWN + 1}: data / references' mean, standard score")
    rng = np.random.default_rng(0)
    leukemia = load_matrix(DATA / "leukemia" / "X.csv")
    modules = gene_modules(0)
    inputs = {
        "leukemia": leukemia,
        "gene modules s0": modules,
        "Gaussian 200 x 1000": rng.standard_normal((200, 1000)),
        "uniform 2-D n=60": rng.uniform(size=(60, 2)),
    }
    for name, X in inputs.items():
        compare(name, fit_scaling(X).transform(X), default_ensemble(X.shape[0]), KINDS)
    nmf = [{"algorithm": "nmf", "k": list(range(2, 11)), "runs": 4}]
    for name, X in (("leukemia", leukemia), ("gene modules s0", modules)):
        # as the default scales for NMF runs: divided, not centred
        compare(f"{name}, NMF", fit_scaling(X, centre=False).transform(X), nmf, ["columns"])


def genes_part() -> None:
    print(
        f"{'case':26s} {'genes':>5s}   sca k  ARI  ARI@k   λ2 … λ4 z against the references"
        "   gap statistic k  ARI"
    )
    for name, X, y in cases():
        true_k = np.unique(y).size
        logged = np.log2(X)
        order = np.argsort(logged.var(axis=0))[::-1]
        for top in TOP_GENES:
            Z = logged[:, order[:top]]
            found = sca.StochasticClustering(scale="none", random_state=0).fit(Z)
            told = "-"
            if true_k > 1:
                fit = sca.StochasticClustering(scale="none", random_state=0, n_clusters=true_k)
                told = f"{adjusted_rand_score(y, fit.fit(Z).labels_):.2f}"
            z = against(Z, default_ensemble(Z.shape[0]))[2][1:]  # λ2 … against the default's
            k, labels = gap_k(gap_statistic(Z, 0, 10))
            print(
                f"{name:26s} {top:5d}   {found.n_clusters_:5d} "
                f"{adjusted_rand_score(y, found.labels_):5.2f} {told:>5s}   "
                f"{'  '.join(f'{v:5.1f}' for v in z):36s}   {k:15d} "
                f"{adjusted_rand_score(y, labels):5.2f}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--part",
        nargs="+",
        choices=("scale", "references", "genes"),
        default=["scale", "references", "genes"],
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)
    with threadpool_limits(1):
        if "scale" in args.part:
            scale_part()
        if "references" in args.part:
            references_part()
        if "genes" in args.part:
            genes_part()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
