"""The raw-data cases of ``scripts/accuracy.py``, importable by the tests.

:func:`raw_cases` yields ``(kind, name, seed, X, truth)``; every kind is one
of :data:`KINDS`.  The synthetic cases come from scikit-learn's generators
with ``random_state=seed`` (seeds 0 ... seeds - 1); the real sets come once,
at seed 0.  Generation is pure (nothing but the seed decides X) and fast.
"""

from __future__ import annotations

import numpy as np
from shared import DATA, load_labels, load_matrix
from sklearn import datasets

STRUCTURELESS, WEAK, PLANTED, UNEQUAL, SHAPES, REAL = (
    "structureless",
    "weak",
    "planted",
    "unequal",
    "shapes",
    "real",
)
#: Every kind of case, in the order the table lists them.
KINDS = (STRUCTURELESS, WEAK, PLANTED, UNEQUAL, SHAPES, REAL)

#: Planted numbers of equal blobs.
PLANTED_KS = (2, 3, 5, 8, 12, 20)
#: Sizes of the very unequal blobs, largest first.
UNEQUAL_SIZES = (500, 150, 40, 15)
#: Largest n of a planted case.
MAX_PLANTED_N = 3000


def separated_centers(k: int, d: int, seed: int, min_distance: float = 10.0) -> np.ndarray:
    """k centres in the box [-10 k^(1/d), 10 k^(1/d)]^d, each pair at least ``min_distance``
    apart (drawn one by one, a candidate too close to an accepted centre is redrawn).

    With unit-variance blobs, ten standard deviations between centres leave
    k-means and HDBSCAN nothing to get wrong at the true k.
    """
    rng = np.random.default_rng(seed)
    half = 10.0 * k ** (1.0 / d)
    centers = np.empty((0, d))
    while len(centers) < k:
        c = rng.uniform(-half, half, d)
        if not len(centers) or np.min(np.linalg.norm(centers - c, axis=1)) >= min_distance:
            centers = np.vstack([centers, c])
    return centers


def structureless(seed: int):
    """Rows without clusters: uniform in a square, Gaussian, and Gaussian of the
    shape of expression data (few rows, many columns); a small square and a
    small Gaussian, as few rows as a clinic's cohort; and lognormal expression
    whose genes move together in modules (:func:`gene_modules`)."""
    rng = np.random.default_rng(seed)
    yield "uniform 2-D n=500", rng.uniform(size=(500, 2))
    yield "Gaussian 10-D n=500", rng.standard_normal((500, 10))
    yield "Gaussian 200 x 1000", rng.standard_normal((200, 1000))
    yield "uniform 2-D n=60", rng.uniform(size=(60, 2))
    yield "Gaussian 2-D n=100", rng.standard_normal((100, 2))
    yield "gene modules 60 x 2000", gene_modules(seed)


def weak(seed: int):
    """Three blobs whose centres are 2.2 standard deviations apart: k-means at k = 3
    recovers them with an ARI of about 0.4."""
    side = 2.2
    centers = side * np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])
    return datasets.make_blobs(300, centers=centers, cluster_std=1.0, random_state=seed)


def planted(k: int, seed: int):
    """k equal, well separated unit-variance blobs: 150 rows each (3,000 at most),
    in 2-D up to k = 5, 10-D up to k = 12, 20-D above."""
    n = min(150 * k, MAX_PLANTED_N)
    d = 2 if k <= 5 else 10 if k <= 12 else 20
    centers = separated_centers(k, d, seed)
    return datasets.make_blobs(n, centers=centers, cluster_std=1.0, random_state=seed)


#: Groups, rows a group, columns and marker columns a group of the expression-shaped case.
EXPRESSION_SHAPE = (3, 20, 2000, 60)


def log_expression(rng: np.random.Generator, n: int, genes: int) -> np.ndarray:
    """Log-expression without groups: each gene at its own level and noise."""
    level = rng.normal(5.0, 2.0, genes)
    noise = rng.gamma(2.0, 0.25, genes)
    return level + rng.standard_normal((n, genes)) * noise


def gene_modules(seed: int, n: int = 60, genes: int = 2000, modules: int = 5) -> np.ndarray:
    """Expression without groups of rows but with correlated genes: each of
    ``modules`` sets of 100 genes follows a Gaussian factor of the rows (one
    standard deviation on the log scale), so the columns are far from
    independent while the rows form one Gaussian cloud."""
    rng = np.random.default_rng([seed, 0x6E])
    L = log_expression(rng, n, genes)
    factors = rng.standard_normal((n, modules))
    for m in range(modules):
        L[:, m * 100 : (m + 1) * 100] += factors[:, [m]]
    return np.exp(L)


def expression(seed: int):
    """Planted groups of the shape of expression data: 60 rows (patients) and
    2,000 lognormal columns (genes), each gene at its own level and noise, and
    in each of 3 groups of 20 rows 60 marker genes raised by e (1 on the log
    scale, about two of the genes' median standard deviations)."""
    groups, per, genes, markers = EXPRESSION_SHAPE
    rng = np.random.default_rng([seed, 0xE5])
    y = np.repeat(np.arange(groups), per)
    L = log_expression(rng, y.size, genes)
    for g in range(groups):
        L[np.ix_(y == g, rng.choice(genes, markers, replace=False))] += 1.0
    return np.exp(L), y


#: (k, n) of the small planted cases: groups of 15 and 20 rows, as Ruspini's.
SMALL_PLANTED = ((4, 60), (5, 100))


def small_planted(k: int, n: int, seed: int):
    """k equal, well separated unit-variance 2-D blobs of n rows in all: few rows."""
    centers = separated_centers(k, 2, seed + 1000)
    return datasets.make_blobs(n, centers=centers, cluster_std=1.0, random_state=seed)


def unequal(seed: int):
    """Well separated 2-D blobs of :data:`UNEQUAL_SIZES` rows."""
    centers = separated_centers(len(UNEQUAL_SIZES), 2, seed)
    return datasets.make_blobs(list(UNEQUAL_SIZES), centers=centers, random_state=seed)


def shapes(seed: int):
    """scikit-learn's k-means examples: stretched blobs, blobs of unequal spread,
    two moons, two circles."""
    X, y = datasets.make_blobs(500, random_state=seed)
    yield "anisotropic blobs", X @ np.array([[0.6, -0.6], [-0.4, 0.8]]), y
    X, y = datasets.make_blobs(500, cluster_std=[1.0, 2.5, 0.5], random_state=seed)
    yield "blobs std 1, 2.5, 0.5", X, y
    yield ("moons", *datasets.make_moons(500, noise=0.05, random_state=seed))
    yield ("circles", *datasets.make_circles(500, factor=0.5, noise=0.05, random_state=seed))


#: The real sets of data/, by folder name (X.csv and labels.csv in each).
DATA_FOLDERS = ("leukemia", "medulloblastoma", "ruspini")


def real_sets():
    """The real sets of scikit-learn (shipped with it) and of data/ (:data:`DATA_FOLDERS`)."""
    for name, load in (
        ("iris", datasets.load_iris),
        ("wine", datasets.load_wine),
        ("breast cancer", datasets.load_breast_cancer),
        ("digits", datasets.load_digits),
    ):
        X, y = load(return_X_y=True)
        yield name, X.astype(float), y
    for name in DATA_FOLDERS:
        yield name, load_matrix(DATA / name / "X.csv"), load_labels(DATA / name / "labels.csv")


def raw_cases(quick: bool = True, seeds: int = 3):
    """Every raw-data case as ``(kind, name, seed, X, truth)``.

    Parameters
    ----------
    quick : bool, default=True
        Seed 0 only (``seeds`` is then ignored).
    seeds : int, default=3
        The synthetic cases are drawn at seeds 0 ... seeds - 1.

    Yields
    ------
    kind : str
        One of :data:`KINDS`.
    name : str
    seed : int
    X : ndarray of shape (n_samples, n_features)
    truth : ndarray of shape (n_samples,)
    """
    for seed in range(1 if quick else seeds):
        for name, X in structureless(seed):
            yield STRUCTURELESS, name, seed, X, np.zeros(X.shape[0], dtype=int)
        yield (WEAK, "3 overlapping blobs n=300", seed, *weak(seed))
        for k in PLANTED_KS:
            X, y = planted(k, seed)
            yield PLANTED, f"{k} blobs n={X.shape[0]} d={X.shape[1]}", seed, X, y
        for k, n in SMALL_PLANTED:
            yield (PLANTED, f"{k} blobs n={n} d=2", seed, *small_planted(k, n, seed))
        yield (PLANTED, "3 groups 60 x 2000 lognormal", seed, *expression(seed))
        sizes = ",".join(map(str, UNEQUAL_SIZES))
        yield (UNEQUAL, f"blobs {sizes}", seed, *unequal(seed))
        for name, X, y in shapes(seed):
            yield SHAPES, name, seed, X, y
    for name, X, y in real_sets():
        yield REAL, name, 0, X, y
