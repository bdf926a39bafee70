"""Ensembles (k-means, NMF, combined), the single measure and evaluation."""

import warnings

import numpy as np
import pytest

import sca


def test_plan_expands_ks_and_runs_with_reproducible_seeds():
    spec = [
        {"algorithm": "nmf", "k": [2, 3], "runs": 2},
        {"algorithm": "kmeans", "k": 3, "runs": 1},
    ]
    plan = sca.ensemble_plan(spec, seed=1)
    assert [(r["algorithm"], r["k"]) for r in plan] == [
        ("nmf", 2),
        ("nmf", 2),
        ("nmf", 3),
        ("nmf", 3),
        ("kmeans", 3),
    ]
    assert plan == sca.ensemble_plan(spec, seed=1)
    assert len({r["seed"] for r in plan}) == 5
    assert plan != sca.ensemble_plan(spec, seed=2)


@pytest.mark.slow
def test_iris_combined_ensemble_clusters_setosa_apart(iris):
    X, species = iris
    spec = [{"algorithm": "kmeans", "k": 3, "runs": 20}, {"algorithm": "nmf", "k": 3, "runs": 20}]
    labels = sca.ensemble_labels(X, spec, seed=0)
    assert labels.shape == (150, 40)
    out = sca.cluster(data=X, ensemble=spec, options={"seed": 0})
    assert out["k"] >= 2
    setosa = {i for i in range(50)}
    assert any(set(c) == setosa for c in out["clusters"])


def test_nmf_labels_are_argmax_of_coefficients(iris):
    from sklearn.decomposition import NMF
    from sklearn.exceptions import ConvergenceWarning

    X, _ = iris
    labels = sca.ensemble_run(X, {"algorithm": "nmf", "k": 3, "seed": 4})
    assert labels.shape == (150,) and set(labels) <= {0, 1, 2}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        W = NMF(
            3, solver="mu", init="random", random_state=4, max_iter=sca.ensemble.NMF_MAX_ITER
        ).fit_transform(X)
    np.testing.assert_array_equal(labels, W.argmax(1))


def test_snn_counts_shared_neighbours():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.1, (20, 2)), rng.normal(5, 0.1, (20, 2))])
    op = sca.snn_operator(X, 5)
    S = op.to_dense()
    assert np.array_equal(S, S.T) and np.all(np.diag(S) == 6)
    assert S[:20, 20:].max() == 0  # no shared neighbours across the far blobs
    out = sca.cluster(data=X, snn={"kappa": 5}, options={"k": 2})
    assert sorted(map(sorted, out["clusters"])) == [list(range(20)), list(range(20, 40))]
    with pytest.raises(sca.SCAError) as info:
        sca.snn_operator(X, 40)
    assert info.value.field == "snn.kappa"


def test_errors_use_the_best_one_to_one_matching():
    truth = [0, 0, 0, 1, 1, 2]
    assert sca.clustering_errors([1, 1, 1, 0, 0, 2], truth) == 0
    assert sca.clustering_errors([1, 1, 0, 0, 0, 2], truth) == 1
    assert sca.clustering_errors([0, 0, 0, 0, 0, 0], truth) == 3
    assert sca.evaluate([1, 1, 1, 0, 0, 2], truth)["ari"] == 1.0


def test_uncoupling_measure(baseball):
    labels = np.array([0, 0, 0, 1, 1, 1])
    sigma_s = sca.uncoupling_measure(baseball, labels)
    S = baseball.to_dense()
    assert sigma_s == pytest.approx(2 * S[:3, 3:].sum() / S.sum())
    P = sca.balance(baseball).P
    sigma_p = sca.uncoupling_measure(P, labels)
    assert sigma_p == pytest.approx(2 * P.to_dense()[:3, 3:].sum() / 6)
    # Theorem 2.8: σ(P) <= Σ/(n r) σ(S) with r = 100
    assert sigma_p <= S.sum() / (6 * 100) * sigma_s
    assert sca.uncoupling_measure(baseball, np.array([0, 1, 0, 1, 0, 1])) > sigma_s
