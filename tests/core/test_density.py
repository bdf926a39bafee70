"""Single linkage on subsamples as ensemble members (sca.density).

k-means runs cannot hold two moons or two rings apart; single-linkage runs
can, and the reference null still gives k = 1 where there are no groups.
Small versions of ``scripts/accuracy.py --part raw --case moons --case
circles --ensemble single:2,3,4,5x8``.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_circles, make_moons
from sklearn.metrics import adjusted_rand_score

import sca
from sca.cli import parse_ensemble
from sca.density import density_model, density_predict, subsample_size

#: The single-linkage ensemble of docs/accuracy.md.
SINGLE = [{"algorithm": "single", "k": [2, 3, 4, 5], "runs": 8}]


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.mark.parametrize("seed", [0, 1])
def test_single_linkage_ensemble_finds_two_moons(seed):
    X, y = make_moons(300, noise=0.05, random_state=seed)
    model = sca.StochasticClustering(ensemble=SINGLE, random_state=seed).fit(X)
    assert model.n_clusters_ == 2
    assert adjusted_rand_score(y, model.labels_) == 1.0
    # the default (k-means) ensemble cuts across the moons
    default = sca.StochasticClustering(n_clusters=2, random_state=seed).fit(X)
    assert adjusted_rand_score(y, default.labels_) < 0.7


def test_single_linkage_ensemble_finds_two_rings():
    X, y = make_circles(500, factor=0.5, noise=0.05, random_state=0)
    model = sca.StochasticClustering(ensemble=SINGLE, random_state=0).fit(X)
    assert model.n_clusters_ == 2
    assert adjusted_rand_score(y, model.labels_) == 1.0


@pytest.mark.parametrize("with_kmeans", [False, True])
def test_no_groups_give_one_cluster_with_single_linkage_runs(with_kmeans):
    X = np.random.default_rng(0).standard_normal((300, 10))
    spec = SINGLE + (sca.ensemble_spec.default_ensemble(300) if with_kmeans else [])
    model = sca.StochasticClustering(ensemble=spec, random_state=0).fit(X)
    assert model.n_clusters_ == 1, model.notes_


def test_a_run_labels_rows_by_their_nearest_subsample_point():
    X, _ = make_moons(400, noise=0.05, random_state=3)
    labels, model = density_model(X, 4, seed=7)
    closing = np.isnan(model[:, 0])
    # the subsample's points, cluster by cluster, each cluster closed by a NaN row
    assert closing.sum() == np.unique(labels).size == 4 and closing[-1]
    assert (~closing).sum() == subsample_size(400) == 200
    points = model[~closing]
    assert {tuple(p) for p in points} <= {tuple(x) for x in X}
    # every row's label is its nearest point's cluster: the points their own
    nearest = np.argmin(((X[:, None, :] - points[None]) ** 2).sum(axis=2), axis=1)
    sizes = np.diff(np.r_[-1, np.flatnonzero(closing)]) - 1
    cluster = np.repeat(np.arange(4), sizes)
    assert np.array_equal(labels, cluster[nearest])
    assert np.array_equal(density_predict(model, X), labels)
    # the subsample comes from the seed
    assert np.array_equal(density_model(X, 4, seed=7)[1], model, equal_nan=True)
    assert not np.array_equal(density_model(X, 4, seed=8)[1], model, equal_nan=True)


def test_single_linkage_models_stack_with_kmeans_centres_for_new_rows():
    X, _ = make_moons(200, noise=0.05, random_state=1)
    spec = [
        {"algorithm": "kmeans", "k": 3, "runs": 2},
        {"algorithm": "single", "k": [2, 5], "runs": 2},
    ]
    fit = sca.ensemble_fit(X, spec, seed=4)
    predicted = sca.ensemble_predict(fit["models"], fit["groups"], fit["algorithms"], X)
    assert np.array_equal(predicted, fit["labels"])
    assert np.array_equal(fit["labels"], sca.ensemble_labels(X, spec, seed=4))


def test_predict_places_new_moon_rows_where_refitting_puts_them():
    X, y = make_moons(330, noise=0.05, random_state=2)
    order = np.random.default_rng(0).permutation(330)
    X, y = X[order], y[order]
    model = sca.StochasticClustering(ensemble=SINGLE, random_state=1).fit(X[:300])
    predicted = model.predict(X[300:])
    refit = sca.StochasticClustering(ensemble=SINGLE, random_state=1).fit(X)
    assert adjusted_rand_score(y[:300], model.labels_) == 1.0
    assert adjusted_rand_score(refit.labels_[300:], predicted) == 1.0
    assert adjusted_rand_score(y[300:], predicted) == 1.0


def test_single_is_an_ensemble_algorithm_everywhere():
    assert "single" in sca.options.ALGORITHMS
    assert parse_ensemble("single:2,3x8") == {"algorithm": "single", "k": [2, 3], "runs": 8}
    assert sca.ensemble_spec.ensemble_size(SINGLE) == 32
    with pytest.raises(sca.SCAError) as err:
        sca.ensemble_plan([{"algorithm": "single", "k": 0, "runs": 2}])
    assert err.value.field == "ensemble[0].k"
