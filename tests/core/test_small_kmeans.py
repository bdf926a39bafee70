"""SmallKMeans is scikit-learn's k-means on few rows: the same centres, labels and
inertia from the same seed, and the iteration splits as it did with scikit-learn."""

import warnings

import numpy as np
import pytest
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

import sca
from sca.planted import planted_runs, planted_truth
from sca.small_kmeans import SmallKMeans


def inputs(count: int):
    """Rows of the kinds the iteration splits: noise, blobs, orthonormal blocks."""
    rng = np.random.default_rng(0)
    for trial in range(count):
        n, b = int(rng.integers(3, SmallKMeans.ROWS + 1)), int(rng.integers(1, 6))
        k = int(rng.integers(2, min(n, 8) + 1))
        centres = rng.normal(size=(k, b))[rng.integers(0, k, n)]
        X = [
            rng.normal(size=(n, b)),
            3 * centres + 0.3 * rng.normal(size=(n, b)),
            np.linalg.qr(2 * centres + rng.normal(size=(n, b)))[0],
        ][trial % 3]
        init = X[rng.choice(n, k, replace=False)] + 0.01 if trial % 2 else None
        yield X, k, init, int(rng.integers(1000)), int(rng.integers(1, 5))


@pytest.mark.parametrize("X, k, init, seed, n_init", list(inputs(300)))
def test_the_fit_is_scikit_learns(X, k, init, seed, n_init):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # duplicate rows, fewer clusters
        theirs = KMeans(
            k,
            init="k-means++" if init is None else init,
            n_init=n_init if init is None else 1,
            random_state=seed,
        ).fit(X)
    ours = SmallKMeans(k, init=init, n_init=n_init, random_state=seed).fit(X)
    assert np.array_equal(ours.labels_, theirs.labels_)
    assert np.array_equal(ours.predict(X), theirs.predict(X))
    assert np.allclose(ours.cluster_centers_, theirs.cluster_centers_, rtol=0, atol=1e-12)
    assert ours.inertia_ == pytest.approx(theirs.inertia_, rel=1e-12, abs=1e-15)


def test_the_iteration_splits_as_with_scikit_learn(baseball, monkeypatch):
    """Whole evolutions, several starts and seeds: every start's clustering and the
    steps taken are those of scikit-learn's KMeans (ROWS = 0 sends every fit there)."""
    rng = np.random.default_rng(3)
    truth = planted_truth(120, [1, 2, 3], rng)
    operators = [
        (sca.balance(baseball).P, (2, 3)),
        (sca.balance(sca.membership_operator(planted_runs(truth, 20, 0.5, rng))).P, (3, 4)),
    ]

    def runs():
        return [
            (r.labels.tolist(), r.iterations, [(s.tolist(), f) for s, f in r.solutions])
            for P, ks in operators
            for k in ks
            for seed in range(6)
            for r in [sca.iterate(P, k, seed=seed, starts=3)]
        ]

    small = runs()
    monkeypatch.setattr(SmallKMeans, "ROWS", 0)
    assert runs() == small


@pytest.mark.parametrize("seed", [0, 7, 31])
def test_each_runs_seeding_is_scikit_learns(seed, monkeypatch):
    """A run fitted from :func:`plusplus_rows` is that run of scikit-learn's: of
    ``n_init`` runs so fitted, scikit-learn's choice is its fit's, whether the
    seeding's distances are cut over the cores or not."""
    import sca.operators.threads
    import sca.small_kmeans
    from sca.small_kmeans import plusplus_rows, same_partition

    monkeypatch.setattr(sca.operators.threads, "THREADS", 2)
    monkeypatch.setattr(sca.small_kmeans, "CUT_ROWS", 10)
    rng = np.random.default_rng(seed)
    k, n_init = 12, 4
    X = np.linalg.qr(rng.normal(size=(k, 5))[rng.integers(0, k, 700)] + rng.normal(size=(700, 5)))[
        0
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        theirs = KMeans(k, n_init=n_init, random_state=seed).fit(X)
        runs = []
        for run in range(n_init):
            rows = plusplus_rows(X, k, seed, run)
            assert np.array_equal(rows, plusplus_rows(X, k, seed, run, cut=True))
            runs.append(KMeans(k, init=X[rows], n_init=1, random_state=seed).fit(X))
    best = runs[0]
    for model in runs[1:]:
        if model.inertia_ < best.inertia_ and not same_partition(model.labels_, best.labels_, k):
            best = model
    assert np.array_equal(best.labels_, theirs.labels_)
    assert np.allclose(best.cluster_centers_, theirs.cluster_centers_, rtol=0, atol=1e-12)
