"""Reproduce the results of Meyer & Wessell, "Stochastic Data Clustering", with ``sca``.

Covers the paper's small baseball example (exact), the iris table and the
leukemia DNA microarray results (k = 2, 3, S2 + S3, k = 4 and the custom
cluster of patient 2).  Ensembles are random, so every ensemble-based result
is reported as a distribution over ensemble seeds.  Writes
``docs/paper-reproduction.md``; the output depends only on the seeds (and the
installed numpy / scikit-learn), never on the date or the machine's speed.

Usage::

    python scripts/reproduce_paper.py            # full run (10 iris / 5 leukemia seeds)
    python scripts/reproduce_paper.py --quick    # 5 iris / 2 leukemia seeds

Only files inside this repository are read.
"""

from __future__ import annotations

import os

# One BLAS / OpenMP thread: the machine is shared, and k-means / NMF results
# are then independent of the thread count.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy  # noqa: E402
import sklearn  # noqa: E402
from scipy.optimize import linear_sum_assignment  # noqa: E402

import sca  # noqa: E402
from sca.errors import IterationError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
DEFAULT_OUT = ROOT / "docs" / "paper-reproduction.md"

RUNS = 100          # clusterings per ensemble, as in the paper
IPVS = 100          # random initial probability vectors per leukemia consensus matrix
PAPER_ALGO = {"rule": "perron", "split": "gaps", "starts": 1}
DEFAULT_ALGO = {}   # the package defaults: rule="gap", split="kmeans", starts=1


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------
def load_matrix(path: Path) -> np.ndarray:
    return np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


def load_labels(path: Path) -> np.ndarray:
    return np.loadtxt(path, delimiter=",", skiprows=1, dtype=int, ndmin=1)


def compact(numbers) -> str:
    """1-based patient numbers in the paper's style: ``1, 3, 5, 7–9, 11–14``."""
    nums = sorted(int(n) for n in numbers)
    if not nums:
        return "–"
    parts, start, prev = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        if prev - start >= 2:
            parts.append(f"{start}–{prev}")
        else:
            parts.extend(str(v) for v in range(start, prev + 1))
        if n is not None:
            start = prev = n
    return ", ".join(parts)


def plist(numbers) -> str:
    """A list in its given order: ``29, 19, 4``."""
    return ", ".join(str(int(n)) for n in numbers)


def counts(values) -> str:
    """``value (count×)`` for a list of hashable values, most frequent first."""
    c = Counter(values)
    items = sorted(c.items(), key=lambda kv: (-kv[1], str(kv[0])))
    return ", ".join(f"{v} ({n}×)" for v, n in items)


def matching(labels, truth):
    """Best one-to-one matching of clusters to classes: cluster -> class (or -1)."""
    labels, truth = np.asarray(labels), np.asarray(truth)
    k, m = int(labels.max()) + 1, int(truth.max()) + 1
    overlap = np.zeros((k, m))
    np.add.at(overlap, (labels, truth), 1)
    rows, cols = linear_sum_assignment(-overlap)
    mapping = np.full(k, -1)
    mapping[rows] = cols
    return mapping


def misclustered(labels, truth):
    """1-based numbers of the elements not in their class's matched cluster."""
    mapping = matching(labels, truth)
    return [i + 1 for i in range(len(labels)) if mapping[labels[i]] != truth[i]]


def solution_runs(result, starts):
    """(labels, number of starts) for each distinct solution of an iterate result."""
    return [(labels, int(round(freq * (starts - result.failed_starts))))
            for labels, freq in result.solutions]


def run_sca(S, options):
    """Run balancing + spectrum + iteration; ``(spectrum, result)`` or ``(spectrum, None)``."""
    try:
        _, spec, result, _ = sca.run_stages(S, options)
        return spec, result
    except IterationError:
        _, spec = sca.pipeline.prepare(S, options)
        return spec, None


class Markdown:
    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, text: str = "") -> None:
        self.lines.append(text)

    def table(self, header, rows) -> None:
        self(f"| {' | '.join(header)} |")
        self(f"| {' | '.join('---' for _ in header)} |")
        for row in rows:
            self(f"| {' | '.join(str(c) for c in row)} |")
        self()

    def text(self) -> str:
        return "\n".join(self.lines).rstrip() + "\n"


# ---------------------------------------------------------------------------
# 1. the small (baseball) example
# ---------------------------------------------------------------------------
PLAYERS = ["Rose", "Cobb", "Fisk", "Ott", "Ruth", "Mays"]
BASEBALL_S = np.array([
    [100, 67, 73, 2, 0, 2],
    [67, 100, 50, 1, 2, 7],
    [73, 50, 100, 15, 9, 24],
    [2, 1, 15, 100, 92, 82],
    [0, 2, 9, 92, 100, 77],
    [2, 7, 24, 82, 77, 100],
], dtype=float)
# P as printed in the paper (with its 0.01082 at (Ruth, Cobb)).
PAPER_P = [
    ["0.4131", "0.2935", "0.2786", "0.0075", "0", "0.0075"],
    ["0.2935", "0.4644", "0.2023", "0.0040", "0.0082", "0.0277"],
    ["0.2786", "0.2023", "0.3525", "0.0517", "0.0323", "0.0826"],
    ["0.0075", "0.0040", "0.0517", "0.3374", "0.3233", "0.2761"],
    ["0", "0.01082", "0.0323", "0.3233", "0.3660", "0.2701"],
    ["0.0075", "0.0277", "0.0826", "0.2761", "0.2701", "0.3361"],
]
PAPER_EIGENVALUES = [1.0000, 0.8670, 0.2078, 0.1095, 0.0598, 0.0254]
PAPER_TRACE = np.array([
    [0.2334, 0.2595, 0.0364, 0.2617, 0.1812, 0.0279],
    [0.1848, 0.1997, 0.1520, 0.1592, 0.1618, 0.1425],
    [0.1795, 0.1836, 0.1707, 0.1554, 0.1557, 0.1550],
    [0.1779, 0.1787, 0.1732, 0.1565, 0.1561, 0.1576],
    [0.1765, 0.1765, 0.1729, 0.1578, 0.1574, 0.1589],
    [0.1752, 0.1751, 0.1722, 0.1590, 0.1586, 0.1600],
    [0.1741, 0.1739, 0.1715, 0.1600, 0.1597, 0.1609],
    [0.1731, 0.1729, 0.1709, 0.1609, 0.1606, 0.1616],
])
PAPER_TRACE_CLUSTERS = (
    ["{Rose, Cobb, Ott, Ruth} {Fisk, Mays}", "{Rose, Cobb} {Fisk, Ott, Ruth, Mays}"]
    + ["{Rose, Cobb, Fisk} {Ott, Ruth, Mays}"] * 6)


def name_clusters(labels) -> str:
    labels = np.asarray(labels)
    groups = [[PLAYERS[i] for i in np.flatnonzero(labels == c)] for c in range(labels.max() + 1)]
    return " ".join("{" + ", ".join(g) + "}" for g in groups)


def baseball(md: Markdown) -> dict:
    log("baseball example")
    S = sca.consensus_operator(BASEBALL_S)
    balanced = sca.balance(S)
    P = balanced.P.to_dense()
    spec_perron = sca.spectrum(balanced.P, rule="perron")
    spec_gap = sca.spectrum(balanced.P)
    values = spec_perron.eigenvalues
    _, spec, result, _ = sca.run_stages(S, {"rule": "perron", "split": "gaps", "trace": True,
                                            "x0": PAPER_TRACE[0].tolist(), "stable": 6})
    xs = np.array([step["x"] for step in result.trace])
    diff = np.abs(xs - PAPER_TRACE)
    diff_rounded = np.abs(np.round(xs, 4) - PAPER_TRACE)
    # the paper ran to t = 1000 and saw the same clustering at every step
    long = sca.iterate(balanced.P, 2, split="gaps", trace=True, x0=PAPER_TRACE[0], stable=999,
                       max_iterations=1000)
    later = {tuple(step["labels"]) for step in long.trace[2:] if step["labels"] is not None}
    # the x_0 normalised to sum 1 (the printed one sums to 1.0001)
    x0n = PAPER_TRACE[0] / PAPER_TRACE[0].sum()
    norm = sca.iterate(balanced.P, 2, split="gaps", trace=True, x0=x0n, stable=6)
    xs_n = np.array([step["x"] for step in norm.trace])

    md("## 1. A small example (baseball) — exact")
    md()
    md("S is the paper's consensus matrix (50 NMF runs with k = 2 and 50 with k = 3, as printed). "
       "`sca.balance` (symmetric Sinkhorn–Knopp) gives P; residual "
       f"max |Pe − e| = {balanced.residual:.1e} after {balanced.iterations} steps.")
    md()
    md("**P to four decimals — ours / paper's** (identical in all 36 entries except the one "
       "marked; the paper prints P(Ruth, Cobb) = 0.01082, while symmetry of P = DSD gives "
       "P(Ruth, Cobb) = P(Cobb, Ruth) = 0.0082, which the paper itself prints one row up — "
       "a typesetting slip in the paper):")
    md()
    rows = []
    mismatch = []
    for i, who in enumerate(PLAYERS):
        cells = []
        for j in range(6):
            ours = f"{P[i, j]:.4f}"
            paper = PAPER_P[i][j]
            same = abs(float(ours) - float(paper)) < 5e-5
            if not same:
                mismatch.append((PLAYERS[i], PLAYERS[j], ours, paper))
            cells.append(f"{ours} / {paper}" + ("" if same else " **≠**"))
        rows.append([f"**{who}**"] + cells)
    md.table(["P"] + PLAYERS, rows)
    md(f"Entries that differ: {len(mismatch)} — "
       + "; ".join(f"({a}, {b}): ours {o}, paper {p}" for a, b, o, p in mismatch) + ".")
    md()
    md.table(["", "eigenvalues of P"],
             [["paper", "  ".join(f"{v:.4f}" for v in PAPER_EIGENVALUES)],
              ["ours", "  ".join(f"{v:.4f}" for v in values)]])
    k_perron, k_gap = sca.perron_cluster(values), sca.largest_gap_k(values)
    md(f"k: paper 2; ours `sca.perron_cluster` = {k_perron}, default `\"gap\"` rule "
       f"(`sca.largest_gap_k`) = {k_gap}; `sca.spectrum(rule=\"perron\").k` = {spec_perron.k}, "
       f"`sca.spectrum().k` = {spec_gap.k}.")
    md()
    md("**Table 3.1 — x_t from the paper's printed x_0** "
       "(`split=\"gaps\"`, `trace=True`, `x0=(0.2334, 0.2595, 0.0364, 0.2617, 0.1812, 0.0279)`, "
       "`stable=6`; columns Rose, Cobb, Fisk, Ott, Ruth, Mays):")
    md()
    rows = []
    for t, step in enumerate(result.trace):
        rows.append([t, " ".join(f"{v:.4f}" for v in PAPER_TRACE[t]),
                     " ".join(f"{v:.4f}" for v in step["x"]),
                     f"{diff[t].max():.1e}", PAPER_TRACE_CLUSTERS[t],
                     name_clusters(step["labels"])])
    md.table(["t", "paper x_t", "ours x_t", "max abs diff", "paper clusters", "ours clusters"],
             rows)
    same_clusters = all(name_clusters(step["labels"]) == PAPER_TRACE_CLUSTERS[t]
                        for t, step in enumerate(result.trace))
    md(f"Clusters at every step t = 0..7: {'identical to the paper' if same_clusters else 'DIFFER'}. "
       f"Our run stops at t = {result.iterations} (paper: t = 7, six identical clusterings "
       f"t = 2..7) with {name_clusters(result.labels)} (paper: {{Rose, Cobb, Fisk}} "
       "{Ott, Ruth, Mays}).")
    md()
    md(f"x_t differs from the printed values by at most {diff.max():.1e} (after rounding ours to "
       f"4 decimals: at most {diff_rounded.max():.4f}). The printed x_0 is itself rounded to 4 "
       f"decimals and sums to {PAPER_TRACE[0].sum():.4f}, so the paper's unrounded x_0 is not "
       "known; a last-digit difference is all that can be expected. (With x_0 rescaled to sum "
       f"to 1 the largest difference is {np.abs(xs_n - PAPER_TRACE).max():.1e}, the same order.)")
    md()
    md(f"Paper: \"run through t = 1000 and the same clustering was found at each step\". Ours "
       f"(deflated iteration, 1000 steps): {len(later)} distinct clustering(s) for t = 2..1000"
       + (f", namely {name_clusters(np.array(next(iter(later))))}." if len(later) == 1 else "."))
    md()
    return {"P_ok": len(mismatch) == 1, "trace_max": diff.max(), "stop": result.iterations,
            "clusters_ok": same_clusters}


# ---------------------------------------------------------------------------
# 2. iris
# ---------------------------------------------------------------------------
IRIS_ROWS = [
    # name, constituent ensembles, paper range, paper k, paper errors
    ("NMF (2)", [("nmf", 2)], "1–26", "2", "3"),
    ("NMF (3)", [("nmf", 3)], "19–72", "2", "0"),
    ("k-means (2)", [("kmeans", 2)], "3", "2", "3"),
    ("k-means (3)", [("kmeans", 3)], "21–38", "2", "0"),
    ("k-means (4)", [("kmeans", 4)], "n/a", "3", "16"),
    ("Combined (2)", [("nmf", 2), ("kmeans", 2)], "1–26", "2", "1"),
    ("Combined (3)", [("nmf", 3), ("kmeans", 3)], "19–72", "2", "0"),
]


def iris_errors(labels, species, two_class) -> int | None:
    """Errors in the paper's reading: 2 clusters against setosa / the rest, 3 against
    the species; any other number of clusters: one-to-one against the species."""
    k = int(np.max(labels)) + 1
    return sca.clustering_errors(labels, two_class if k == 2 else species)


def iris(md: Markdown, seeds) -> dict:
    X = load_matrix(DATA / "iris" / "X.csv")
    species = load_labels(DATA / "iris" / "labels.csv")
    two_class = (species != species[0]).astype(int)   # setosa (the first 50) vs the rest
    rows_out = {name: {"single": [], "paper": [], "default": [], "degenerate": 0}
                for name, *_ in IRIS_ROWS}
    forced = {"paper": [], "default": []}
    eig = {name: [] for name, *_ in IRIS_ROWS}
    for seed in seeds:
        log(f"iris seed {seed}")
        runs = {}
        for algorithm, k in {c for _, cs, *_ in IRIS_ROWS for c in cs}:
            runs[(algorithm, k)] = sca.ensemble_labels(
                X, {"algorithm": algorithm, "k": k, "runs": RUNS}, seed=seed)
        for name, constituents, *_ in IRIS_ROWS:
            # "Combined" sums the two consensus matrices = stacks the same runs
            L = np.hstack([runs[c] for c in constituents])
            S = sca.membership_operator(L)
            store = rows_out[name]
            for c in constituents:
                # a single run is scored by the k it was asked for (2: setosa / rest,
                # 3: species); k = 4 is n/a in the paper, kept one-to-one for the note
                truth = two_class if c[1] == 2 else species
                store["single"].extend(sca.clustering_errors(runs[c][:, j], truth)
                                       for j in range(RUNS))
                store["degenerate"] += sum(int(np.unique(runs[c][:, j]).size < c[1])
                                           for j in range(RUNS))
            for key, algo in (("paper", PAPER_ALGO), ("default", DEFAULT_ALGO)):
                spec, result = run_sca(S, {**algo, "seed": seed})
                if result is None:
                    store[key].append((spec.k, None, None))
                else:
                    store[key].append((spec.k, iris_errors(result.labels, species, two_class),
                                       sca.clustering_errors(result.labels, species)))
                if key == "paper":
                    eig[name].append(spec.eigenvalues[:5])
            if name == "k-means (4)":
                for key, algo in (("paper", PAPER_ALGO), ("default", DEFAULT_ALGO)):
                    spec, result = run_sca(S, {**algo, "seed": seed, "k": 3})
                    forced[key].append(None if result is None else
                                       sca.clustering_errors(result.labels, species))

    md("## 2. Iris (Table 5.1)")
    md()
    md(f"Each ensemble is {RUNS} runs of `sca.ensemble_labels` (NMF = scikit-learn "
       "multiplicative updates, random init; k-means = scikit-learn, one k-means++ start); "
       "\"Combined (k)\" stacks the NMF(k) and k-means(k) runs of the same seed, i.e. "
       "S = S_NMF + S_kmeans as in the paper (200 runs). "
       f"Ensemble seeds: {plist(seeds)} ({len(seeds)} seeds); the SCA uses the same seed for its "
       "random x_0. Two configurations of the SCA:")
    md()
    md("* **paper** — the paper's algorithm: `rule=\"perron\"` (k = size of the Perron cluster), "
       "`split=\"gaps\"` (cut at the k−1 largest gaps of x_t), `starts=1`, `stable=6`;")
    md("* **default** — the package defaults: `rule=\"gap\"` (largest gap after λ1), "
       "`split=\"kmeans\"`, `starts=1`, `stable=6`.")
    md()
    md("**How errors are counted.** `sca.clustering_errors` counts the elements outside their "
       "class's cluster under the best one-to-one matching of clusters to classes. Against the "
       "three species a 2-cluster result always has at least 50 errors (one species has no "
       "cluster), so the paper's \"0 errors\" for a 2-cluster SCA result can only mean *setosa "
       "vs. versicolor + virginica*, the two-cluster truth the paper describes (\"a perfect "
       "two-cluster separation of setosa irises from virginica and versicolor ones\"). We use "
       "that reading throughout: a clustering with **2 clusters is scored against setosa / the "
       "rest, one with 3 clusters against the 3 species** (this holds for the single "
       "clusterings of the ensemble too: NMF(2) 1–26 and k-means(2) \"3\" in the paper are only "
       "possible against setosa / the rest). k-means(4) single runs are \"n/a\" as in the paper. "
       "Cells give `value (number of seeds)`.")
    md()
    rows = []
    for name, constituents, p_range, p_k, p_err in IRIS_ROWS:
        s = rows_out[name]
        single = s["single"]
        lo, hi = min(single), max(single)
        rng = "n/a" if any(k > 3 for _, k in constituents) else (
            f"{lo}" if lo == hi else f"{lo}–{hi}")
        ks_p = counts([k for k, _, _ in s["paper"]])
        ks_d = counts([k for k, _, _ in s["default"]])
        er_p = counts(["no stable clustering" if e is None else e for _, e, _ in s["paper"]])
        er_d = counts(["no stable clustering" if e is None else e for _, e, _ in s["default"]])
        rows.append([name, p_range, rng, p_k, ks_p, ks_d, p_err, er_p, er_d])
    md.table(["S from (k)", "paper: range of errors, single", "ours: range of errors, single "
              "(all seeds)", "paper: k", "ours: k (paper)", "ours: k (default)",
              "paper: SCA errors", "ours: SCA errors (paper)", "ours: SCA errors (default)"],
             rows)
    # details
    md("Details: median over seeds of λ2..λ5 of P (paper configuration's spectrum; the spectrum "
       "does not depend on the configuration), and the SCA errors against the three species "
       "by one-to-one matching (`sca.clustering_errors`, ≥ 50 for any 2-cluster result).")
    md()
    rows = []
    for name, *_ in IRIS_ROWS:
        med = np.median(np.array(eig[name]), axis=0)
        s = rows_out[name]
        rows.append([name, " ".join(f"{v:.3f}" for v in med[1:5]),
                     counts([e3 for _, _, e3 in s["paper"]]),
                     counts([e3 for _, _, e3 in s["default"]])])
    md.table(["S from (k)", "median λ2 λ3 λ4 λ5", "vs 3 species (paper)",
              "vs 3 species (default)"], rows)
    nmf2 = rows_out["NMF (2)"]["single"]
    md(f"Single NMF(2) runs: ≤ 3 errors in {sum(e <= 3 for e in nmf2)} and > 15 errors in "
       f"{sum(e > 15 for e in nmf2)} of {len(nmf2)} (paper: 67 and 6 of 100, worst 26). Our "
       "NMF (scikit-learn `solver=\"mu\"`, random init, 500 iterations, cluster = argmax of W) "
       "on the raw 4 features is much more erratic than the authors'; some runs are degenerate "
       "(fewer non-empty clusters than asked for: "
       + ", ".join(f"{name} {rows_out[name]['degenerate']}" for name in ("NMF (2)", "NMF (3)"))
       + f" of {len(nmf2)} runs) and are scored like any other run.")
    md()
    km4 = rows_out["k-means (4)"]["single"]
    md(f"k-means (4) with k forced to 3 (the paper's SCA found k = 3 there and made 16 errors): "
       f"errors vs the species — paper configuration {counts(forced['paper'])}; default "
       f"{counts(forced['default'])}. (Single k-means(4) runs scored one-to-one against the "
       f"species, the 4th cluster counting as errors: {min(km4)}–{max(km4)}.)")
    md()
    return {"rows": rows_out, "forced": forced, "eig": eig}


# ---------------------------------------------------------------------------
# 3. leukemia
# ---------------------------------------------------------------------------
def histogram(errors, bins):
    """Counts of errors per bin; the last bin is ``>= bins[-1]``."""
    out = []
    for i, b in enumerate(bins):
        if i == len(bins) - 1:
            out.append(sum(1 for e in errors if e >= b))
        else:
            out.append(sum(1 for e in errors if e == b))
    return out


def leukemia(md: Markdown, seeds) -> dict:
    X = load_matrix(DATA / "leukemia" / "X.csv")
    y3 = load_labels(DATA / "leukemia" / "labels.csv")
    y2 = load_labels(DATA / "leukemia" / "labels_all_aml.csv")
    classes = {0: "ALL-B", 1: "ALL-T", 2: "AML"}
    res = {key: {"nmf": [], "paper": [], "default": [], "k": {"paper": [], "default": []}}
           for key in ("S2", "S3", "S23")}
    s4 = {"paper": Counter(), "default": Counter(), "nmf": Counter()}
    s4_per_seed = {"paper": [], "default": []}
    custom_rows = []
    per_patient_nmf2 = Counter()
    timings = []
    for seed in seeds:
        log(f"leukemia seed {seed}")
        start = time.perf_counter()
        E = {k: sca.ensemble_labels(X, {"algorithm": "nmf", "k": k, "runs": RUNS}, seed=seed)
             for k in (2, 3, 4, 6)}
        timings.append(time.perf_counter() - start)
        for j in range(RUNS):
            per_patient_nmf2.update(misclustered(E[2][:, j], y2))
        for key, L, truth, single in (("S2", E[2], y2, E[2]), ("S3", E[3], y3, E[3]),
                                      ("S23", np.hstack([E[2], E[3]]), y2, None)):
            if single is not None:
                res[key]["nmf"].extend(sca.clustering_errors(single[:, j], truth)
                                       for j in range(RUNS))
            S = sca.membership_operator(L)
            for cfg, algo in (("paper", PAPER_ALGO), ("default", DEFAULT_ALGO)):
                spec, result = run_sca(S, {**algo, "seed": seed, "starts": IPVS})
                res[key]["k"][cfg].append(spec.k)
                if result is None:
                    res[key][cfg].append((seed, spec.k, None, (), IPVS))
                    continue
                for labels, count in solution_runs(result, IPVS):
                    res[key][cfg].append((seed, spec.k, sca.clustering_errors(labels, truth),
                                          tuple(misclustered(labels, truth)), count))
                if result.failed_starts:
                    res[key][cfg].append((seed, spec.k, None, (), result.failed_starts))
        # k = 4
        S = sca.membership_operator(E[4])
        for j in range(RUNS):
            s4["nmf"][tuple(sca.iteration.canonical(E[4][:, j]).tolist())] += 1
        for cfg, algo in (("paper", PAPER_ALGO), ("default", DEFAULT_ALGO)):
            spec, result = run_sca(S, {**algo, "seed": seed, "starts": IPVS, "k": 4})
            if result is None:
                s4_per_seed[cfg].append(None)
                continue
            sols = solution_runs(result, IPVS)
            for labels, count in sols:
                s4[cfg][tuple(labels.tolist())] += count
            s4_per_seed[cfg].append(sols)
        # custom cluster of patient 2 on S6
        S6 = sca.membership_operator(E[6])
        balanced = sca.balance(S6)
        spec = sca.spectrum(balanced.P, rule="perron")
        for k in sorted({spec.k, 2}):
            try:
                found = sca.custom_cluster(balanced.P, 1, k, min_size=5, max_size=8)
                cluster = [i + 1 for i in found.cluster]
                ranked = [i + 1 for i, _ in found.ranked[:6]]
                step = found.iterations
            except IterationError:
                cluster, ranked, step = None, None, None
            sizes = cluster_sizes(balanced.P, 1, k, 100)
            custom_rows.append((seed, k, k == spec.k, cluster, ranked, step, sizes))

    # ---- (a) S2, (b) S3, (c) S2 + S3 ------------------------------------------
    md("## 3. Leukemia DNA microarray data (Sec. 5.2)")
    md()
    md(f"X is 38 patients × 5000 genes (raw values, rows in the paper's patient order: row i = "
       f"patient i + 1). Every ensemble is {RUNS} NMF runs (`sca.ensemble_labels`); ensemble "
       f"seeds {plist(seeds)} ({len(seeds)} seeds). As in the paper's tables, the SCA is run "
       f"from {IPVS} random initial probability vectors on each consensus matrix "
       f"(`starts={IPVS}`; each start is an independent run, and `solutions` gives how many "
       "starts ended in each clustering). Configurations as for iris: **paper** = "
       "`rule=\"perron\", split=\"gaps\"`; **default** = `rule=\"gap\", split=\"kmeans\"`. "
       "Patients are the paper's 1-based numbers; \"misclustered\" = not in the cluster matched "
       "to their class by the best one-to-one matching.")
    md()

    def solution_table(key, cfg):
        total = Counter()
        for seed, k, err, mis, count in res[key][cfg]:
            total[(err, mis)] += count
        rows = []
        for (err, mis), count in sorted(total.items(), key=lambda kv: -kv[1]):
            if err is None:
                rows.append([cfg, "no stable clustering", "", f"{count} of {IPVS * len(seeds)}"])
            else:
                rows.append([cfg, err, compact(mis), f"{count} of {IPVS * len(seeds)}"])
        return rows, total

    summary = {}
    for key, title, truth_name, paper_line in (
            ("S2", "(a) S2 = NMF k = 2 × 100, against ALL / AML", "ALL/AML",
             "exactly 2 errors, patients 6 and 29, in 100 of 100 SCA runs"),
            ("S3", "(b) S3 = NMF k = 3 × 100, against ALL-B / ALL-T / AML", "3 classes",
             "2 errors in 67 of 100 SCA runs, 10 or more in 33"),
            ("S23", "(c) S2 + S3 (both ensembles, 200 runs), against ALL / AML", "ALL/AML",
             "two clusters, one error: patient 29")):
        md(f"### {title}")
        md()
        md(f"Paper: {paper_line}.")
        md()
        md(f"k found — paper configuration: {counts(res[key]['k']['paper'])}; default: "
           f"{counts(res[key]['k']['default'])} (value (number of seeds)).")
        md()
        rows_p, tot_p = solution_table(key, "paper")
        rows_d, tot_d = solution_table(key, "default")
        md.table(["SCA configuration", "errors", "misclustered patients",
                  f"SCA runs (over {len(seeds)} seeds)"], rows_p + rows_d)
        summary[key] = {"paper": tot_p, "default": tot_d}
        per_seed = []
        for cfg in ("paper", "default"):
            for seed in seeds:
                parts = Counter()
                for s, k, err, mis, count in res[key][cfg]:
                    if s == seed:
                        parts["–" if err is None else err] += count
                per_seed.append([cfg, seed, ", ".join(
                    ("no stable clustering" if e == "–" else f"{e} error{'' if e == 1 else 's'}")
                    + f": {c}" for e, c in sorted(parts.items(),
                                                  key=lambda kv: (isinstance(kv[0], str), kv[0])))])
        md("Per seed (errors: number of the 100 SCA runs):")
        md()
        md.table(["configuration", "seed", "distribution"], per_seed)
        if key == "S2":
            bins = [0, 1, 2, 3, 4, 5]
            h = histogram(res[key]["nmf"], bins)
            sca_p = histogram([e for _, _, e, _, c in res[key]["paper"] if e is not None
                               for _ in range(c)], bins)
            sca_d = histogram([e for _, _, e, _, c in res[key]["default"] if e is not None
                               for _ in range(c)], bins)
            md(f"Errors per clustering, paper's Table 5.3(a) beside ours (ours summed over "
               f"{len(seeds)} seeds: {RUNS * len(seeds)} NMF runs and {IPVS * len(seeds)} SCA "
               "runs per configuration):")
            md()
            md.table(["# of errors", "0", "1", "2", "3", "4", "5+"],
                     [["NMF, paper", 0, 30, 65, 3, 2, 0], ["NMF, ours"] + h,
                      ["SCA, paper", 0, 0, 100, 0, 0, 0], ["SCA (paper config), ours"] + sca_p,
                      ["SCA (default), ours"] + sca_d])
            top = per_patient_nmf2.most_common(6)
            md("Why patient 6 differs: in our NMF k = 2 runs the patients most often misclustered "
               "are " + ", ".join(f"{p} ({c} of {RUNS * len(seeds)})" for p, c in top)
               + ". Patient 29 (AML) sits with the ALL patients in nearly every run, so the "
               "consensus keeps it there; patient 6 (ALL-B, one of the two samples the 2004 NMF "
               "paper calls consistently misclassified) is misplaced in too few of our runs for "
               "the consensus to move it. The paper's NMF table shows 65 runs with 2 errors and "
               "30 with 1; in ours the balance is reversed (more 1-error runs), consistent with "
               "patient 6 being misclustered less often by scikit-learn's NMF than by the "
               "authors' implementation (different initialisation / stopping rule), so the "
               "consensus decides patient 6 differently.")
            md()
        if key == "S3":
            bins = list(range(0, 10)) + [10]
            h = histogram(res[key]["nmf"], bins)
            sca_p = histogram([e for _, _, e, _, c in res[key]["paper"] if e is not None
                               for _ in range(c)], bins)
            sca_d = histogram([e for _, _, e, _, c in res[key]["default"] if e is not None
                               for _ in range(c)], bins)
            nmf_mean = float(np.mean(res[key]["nmf"]))
            mean_p = np.average([e for _, _, e, _, c in res[key]["paper"] if e is not None],
                                weights=[c for _, _, e, _, c in res[key]["paper"]
                                         if e is not None])
            mean_d = np.average([e for _, _, e, _, c in res[key]["default"] if e is not None],
                                weights=[c for _, _, e, _, c in res[key]["default"]
                                         if e is not None])
            md(f"Errors per clustering, paper's Table 5.3(b) beside ours (summed over "
               f"{len(seeds)} seeds):")
            md()
            md.table(["# of errors"] + [str(b) for b in bins[:-1]] + ["10+", "mean"],
                     [["NMF, paper", 0, 0, 71, 3, 9, 3, 3, 1, 2, 0, 8, "3.18"],
                      ["NMF, ours"] + h + [f"{nmf_mean:.2f}"],
                      ["SCA, paper", 0, 0, 67, 0, 0, 0, 0, 0, 0, 0, 33, "4.76"],
                      ["SCA (paper config), ours"] + sca_p + [f"{mean_p:.2f}"],
                      ["SCA (default), ours"] + sca_d + [f"{mean_d:.2f}"]])
            known = 71 * 2 + 3 * 3 + 9 * 4 + 3 * 5 + 3 * 6 + 1 * 7 + 2 * 8
            md(f"(The paper's NMF row is not consistent with its own mean: the counts give a "
               f"mean of at least ({known} + 8 × 10) / 100 = {(known + 80) / 100:.2f} > 3.18. "
               f"Its SCA mean 4.76 implies its 33 \"10+\" runs average "
               f"{(476 - 134) / 33:.1f} errors, in line with our 10- and 12-error solutions.)")
            md()

    # ---- (d) k = 4 ---------------------------------------------------------------
    md("### (d) S4 = NMF k = 4 × 100, k = 4 forced")
    md()
    md("Paper (Table 5.3(c)): ALL-B 1, 3, 5, 7–9, 11–14, 16–18; ALL-T 10, 20–27; AML 28, "
       "30–35, 37, 38; new cluster 4, 6, 19, 29, 36 — and the text: \"a fourth cluster made up "
       "of four ALL-B patients and two AML patients\". Note the paper's table is incomplete: "
       "patients 2 and 15 appear in none of its four rows (36 of 38 patients listed), and its "
       "new cluster has three ALL-B patients, not four.")
    md()

    def describe(labels):
        labels = np.asarray(labels)
        mapping = matching(labels, y3)
        parts = {}
        for c in range(int(labels.max()) + 1):
            members = [i + 1 for i in np.flatnonzero(labels == c)]
            parts[classes.get(int(mapping[c]), "new")] = members
        return [compact(parts.get(name, [])) for name in ("ALL-B", "ALL-T", "AML", "new")]

    keys = set(s4["paper"]) | set(s4["default"])
    ranked = sorted(keys, key=lambda key: -(s4["paper"][key] + s4["default"][key]))
    rows = [["paper", "—", "—", "—", "1, 3, 5, 7–9, 11–14, 16–18", "10, 20–27",
             "28, 30–35, 37, 38", "4, 6, 19, 29, 36"]]
    shown = 0
    for key in ranked:
        if shown >= 6:
            break
        shown += 1
        rows.append([f"ours #{shown}", s4["paper"][key], s4["default"][key], s4["nmf"][key]]
                    + describe(key))
    rest_p = sum(s4["paper"].values()) - sum(rows[i][1] for i in range(1, len(rows)))
    rest_d = sum(s4["default"].values()) - sum(rows[i][2] for i in range(1, len(rows)))
    md(f"The most frequent SCA clusterings over all seeds ({IPVS * len(seeds)} SCA runs per "
       f"configuration; the NMF column counts identical single NMF k = 4 runs out of "
       f"{RUNS * len(seeds)}); each cluster is named after the class it is matched to, the "
       "unmatched one is \"new\":")
    md()
    md.table(["clustering", "SCA runs (paper config)", "SCA runs (default)", "NMF runs",
              "ALL-B", "ALL-T", "AML", "new cluster"], rows)
    md(f"Other clusterings: {rest_p} runs (paper config), {rest_d} runs (default).")
    md()
    nmf_top = s4["nmf"].most_common(1)[0]
    md(f"Most frequent single NMF k = 4 clustering ({nmf_top[1]} of {RUNS * len(seeds)} runs): "
       + "; ".join(f"{name} {part}" for name, part in
                   zip(("ALL-B", "ALL-T", "AML", "new"), describe(nmf_top[0]))) + ".")
    md()

    # ---- (e) custom clustering ---------------------------------------------------
    neigh_e = [i + 1 for i, _ in sca.neighbours(X, 1, "euclidean", 6)]
    neigh_c = [i + 1 for i, _ in sca.neighbours(X, 1, "cosine", 6)]
    md("### (e) Custom cluster of patient 2 on S6 = NMF k = 6 × 100")
    md()
    md("`sca.custom_cluster(P, element=1, k, min_size=5, max_size=8)` (x_0 = e_2; stops at the "
       "first step where patient 2's cluster has 5–8 members — bounds around the paper's cluster "
       "of size 7), with k = the Perron-cluster size of S6's P (the SCA's k, paper rule) and, "
       "for comparison, k = 2. \"ranked\" = the six patients whose x_t entries are closest to "
       "patient 2's at that step (the paper's \"small number of data points whose x_t entries "
       "are closest to our target point\"). Neighbours by 2-norm and cosine come from "
       "`sca.neighbours` on the raw data and do not depend on any seed.")
    md()
    rows = [["paper", "—", "—", "—", "2, 4, 6, 15, 19, 29, 36", "29, 19, 4, 15, 36, 6", "—"]]
    for seed, k, is_rule, cluster, ranked6, step, sizes in custom_rows:
        rows.append([f"ours, seed {seed}", f"{k}" + (" (Perron)" if is_rule else ""),
                     "—" if step is None else step,
                     "—" if cluster is None else len(cluster),
                     "none within bounds" if cluster is None else compact(cluster),
                     "—" if ranked6 is None else plist(ranked6), compact(sizes)])
    md.table(["SCA (CCA)", "k", "step t", "size", "cluster (with patient 2)",
              "ranked (closest first)", "sizes of patient 2's cluster, t = 1..100"], rows)
    md.table(["method", "paper: other patients", "ours"],
             [["2-norm", "19, 16, 9, 3, 6, 18", plist(neigh_e)
               + (" (exact)" if neigh_e == [19, 16, 9, 3, 6, 18] else " (DIFFERS)")],
              ["cosine", "16, 19, 9, 3, 18, 4", plist(neigh_c)
               + (" (exact)" if neigh_c == [16, 19, 9, 3, 18, 4] else " (DIFFERS)")]])
    return {"summary": summary, "s4": s4, "custom": custom_rows, "neigh": (neigh_e, neigh_c),
            "timings": timings, "res": res, "per_patient": per_patient_nmf2}


def cluster_sizes(P, element, k, steps):
    """Sizes of ``element``'s cluster under the gap split of x_t, t = 1..steps."""
    x = np.zeros(P.n)
    x[element] = 1.0
    y = x - x.mean()
    sizes = set()
    for _ in range(steps):
        y = P.matmat(y)
        y -= y.mean()
        y /= np.linalg.norm(y) or 1.0
        labels = sca.gap_split(y, k)
        if labels is not None:
            sizes.add(int(np.sum(labels == labels[element])))
    return sorted(sizes)


# ---------------------------------------------------------------------------
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer seeds (5 for iris, 2 for leukemia)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="markdown output (default docs/paper-reproduction.md)")
    args = parser.parse_args(argv)
    iris_seeds = list(range(5 if args.quick else 10))
    leuk_seeds = list(range(2 if args.quick else 5))
    started = time.perf_counter()

    body = Markdown()
    bb = baseball(body)
    ir = iris(body, iris_seeds)
    lk = leukemia(body, leuk_seeds)

    md = Markdown()
    md("# Reproducing \"Stochastic Data Clustering\" (Meyer & Wessell) with `sca`")
    md()
    md("Produced by `python scripts/reproduce_paper.py" + (" --quick" if args.quick else "")
       + "`" + (" (a quick run with fewer seeds; the full run omits `--quick`)" if args.quick
                else " (`--quick` runs the same with fewer seeds)")
       + ". Deterministic given the seeds "
       f"listed in each section; library versions: numpy {np.__version__}, scipy "
       f"{scipy.__version__}, scikit-learn {sklearn.__version__}. Data: `data/iris`, "
       "`data/leukemia` of this repository. Each item puts the paper's figure beside ours.")
    md()
    md.lines.extend(summary_lines(bb, ir, lk, iris_seeds, leuk_seeds))
    md.lines.extend(body.lines)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(md.text(), encoding="utf-8")
    log(f"wrote {args.out} in {time.perf_counter() - started:.0f} s "
        f"(leukemia ensembles {sum(lk['timings']):.0f} s)")
    return 0


def summary_lines(bb, ir, lk, iris_seeds, leuk_seeds):
    md = Markdown()
    md("## Summary")
    md()
    md(f"* **Baseball (exact).** P matches the paper in all 36 entries to 4 decimals (apart "
       f"from the paper's misprint 0.01082 for 0.0082); eigenvalues match; k = 2 by both "
       f"rules; x_t for t = 0..7 within {bb['trace_max']:.1e} of the printed values; clusters at "
       f"every step {'match' if bb['clusters_ok'] else 'DIFFER'}; stop at t = {bb['stop']}.")
    rows = ir["rows"]

    def share(name, cfg, k=None, err=None):
        vals = rows[name][cfg]
        return sum(1 for kk, e, _ in vals if (k is None or kk == k) and (err is None or e == err))

    n = len(iris_seeds)
    pairs = [(a, b) for name in rows for a, b in zip(rows[name]["paper"], rows[name]["default"])]
    cases = len(pairs)
    same_k = sum(1 for a, b in pairs if a[0] == b[0])
    same_e = sum(1 for a, b in pairs if a[1] == b[1])
    md(f"* **Iris.** Over {n} ensemble seeds, paper configuration: NMF(3) and Combined(3) give "
       f"k = 2 with 0 errors (setosa vs rest) in {share('NMF (3)', 'paper', 2, 0)}/{n} and "
       f"{share('Combined (3)', 'paper', 2, 0)}/{n} seeds, as in the paper; k-means(2) gives "
       f"k = 2 with 3 errors in {share('k-means (2)', 'paper', 2, 3)}/{n}, as in the paper. "
       f"NMF(2) gives 0 errors in {share('NMF (2)', 'paper', 2, 0)}/{n} seeds (paper: 3) and "
       f"Combined(2) 3 errors in {share('Combined (2)', 'paper', 2, 3)}/{n} (paper: 1). "
       "k-means(3) and k-means(4) differ most: our k-means runs (k-means++) agree far more "
       "often than the paper's (its k-means(3) single runs had 21–38 errors), so their "
       "consensus has a third (and fourth) eigenvalue near 1 and the Perron cluster is larger "
       f"than the paper's: k-means(3) gives k = 3 in {share('k-means (3)', 'paper', 3)}/{n} "
       f"seeds (paper: 2), k-means(4) k = 4 in {share('k-means (4)', 'paper', 4)}/{n} "
       f"(paper: 3). The default configuration finds the same k as the paper configuration in "
       f"{same_k}/{cases} (row, seed) cases and the same number of errors in {same_e}/{cases}.")
    s = lk["summary"]
    m = len(leuk_seeds)
    tot = IPVS * m

    def runs(key, cfg, mis=None, err=None):
        return sum(c for (e, ms), c in s[key][cfg].items()
                   if (mis is None or ms == mis) and (err is None or e == err))

    md(f"* **Leukemia S2.** Paper: 2 errors (patients 6, 29) in 100/100 runs. Ours: "
       f"{runs('S2', 'paper', mis=(29,))}/{tot} (paper config) and "
       f"{runs('S2', 'default', mis=(29,))}/{tot} (default) runs make exactly 1 error, patient "
       f"29; patient 6 is clustered correctly ({runs('S2', 'paper', mis=(6, 29))} runs with "
       "6 and 29).")
    md(f"* **Leukemia S3.** Paper: 67 runs with 2 errors, 33 with 10+. Ours (paper config): "
       f"{runs('S3', 'paper', err=2)}/{tot} with 2 errors, "
       f"{sum(c for (e, _), c in s['S3']['paper'].items() if e is not None and e >= 10)}/{tot} "
       f"with 10+; default configuration: {runs('S3', 'default', err=2)}/{tot} with 2 errors.")
    md(f"* **Leukemia S2 + S3.** Paper: one error, patient 29. Ours: "
       f"{runs('S23', 'paper', mis=(29,))}/{tot} (paper config) and "
       f"{runs('S23', 'default', mis=(29,))}/{tot} (default) runs with exactly that error.")
    s4 = lk["s4"]
    target = None
    for key in s4["default"]:
        labels = np.array(key)
        groups = {tuple(i + 1 for i in np.flatnonzero(labels == c)) for c in range(4)}
        if (2, 4, 6, 15, 19, 29, 36) in groups and (10, 20, 21, 22, 23, 24, 25, 26, 27) in groups:
            target = key
    if target is not None:
        md(f"* **Leukemia k = 4.** The new cluster {{2, 4, 6, 15, 19, 29, 36}} with patient 10 "
           f"joining ALL-T: {s4['default'][target]}/{tot} runs (default), "
           f"{s4['paper'][target]}/{tot} (paper config), {s4['nmf'][target]}/{RUNS * m} single "
           "NMF runs. It is the paper's {4, 6, 19, 29, 36} plus patients 2 and 15 — exactly the "
           "two patients missing from every row of the paper's table.")
    else:
        md("* **Leukemia k = 4.** The clustering {2, 4, 6, 15, 19, 29, 36} + ALL-T with 10 was "
           "not found.")
    paper_set = {29, 19, 4, 15, 36, 6}

    def cca(rows):
        found = [r for r in rows if r[3] is not None]
        clusters = Counter("{" + compact(r[3]) + "}" for r in found)
        same = sum(1 for r in found if set(r[4]) == paper_set)
        seven = sum(1 for r in rows if 7 in r[6])
        next_two = sum(1 for r in found if set(r[4][4:6]) == {6, 36})
        return (", ".join(f"{c} ({n} of {len(rows)} seeds)" for c, n in clusters.most_common())
                or "none", same, seven, len(rows), next_two)

    rule = cca([r for r in lk["custom"] if r[2]])
    two = cca([r for r in lk["custom"] if r[1] == 2])
    md("* **Custom cluster of patient 2.** Paper: {2, 4, 6, 15, 19, 29, 36}, ranked 29, 19, 4, "
       f"15, 36, 6. Ours with k = the Perron-cluster size: {rule[0]}; the six closest patients "
       f"are the paper's six in {rule[1]} of {rule[3]} seeds. With k = 2: {two[0]}; the six "
       f"closest are the paper's six (in a different order) in {two[1]} of {two[3]} seeds. A "
       f"size-7 cluster of patient 2 occurs within 100 steps in {rule[2] + two[2]} of "
       f"{rule[3] + two[3]} cases, so the CCA with bounds 5–8 stops at the first admissible "
       "size; when that is 5 the cluster is the paper's without patients 6 and 36, which are "
       f"ranked 5th and 6th in {two[4]} of {two[3]} seeds with k = 2. "
       "Nearest neighbours by 2-norm and cosine: "
       + ("exactly the paper's." if lk["neigh"] == ([19, 16, 9, 3, 6, 18], [16, 19, 9, 3, 18, 4])
          else "DIFFER from the paper."))
    md()
    return md.lines


if __name__ == "__main__":
    raise SystemExit(main())
