"""sca.StochasticClustering: scikit-learn's estimator checks and its behaviour."""

import functools
import inspect
import json
import re
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.exceptions import NotFittedError
from sklearn.metrics import adjusted_rand_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks
from threadpoolctl import threadpool_limits

import sca
from sca.options import OPTIONS
from sca.planted import planted_runs, planted_truth
from tests.conftest import ROOT

from .conftest import BASEBALL_CSV, BASEBALL_PAPER, BASEBALL_S

SMALL_ENSEMBLE = [{"algorithm": "kmeans", "k": [2, 3, 4], "runs": 4}]
#: Three blobs far apart (centres 8 apart, unit spread): every method agrees on them.
SEPARATED = [[0, 0], [8, 0], [0, 8]]
#: Each raw-data affinity, with a small ensemble for "ensemble".
RAW = [{"ensemble": SMALL_ENSEMBLE}, {"affinity": "snn", "n_neighbors": 10}]


@pytest.fixture(autouse=True)
def one_thread():
    """The checks fit on a few dozen rows, where BLAS/OpenMP threads only cost time."""
    with threadpool_limits(limits=1):
        yield


def expected_failed_checks(estimator):
    """The checks that do not apply to an affinity, and why (each one must fail:
    ``xfail_strict``, so a check that starts passing is taken off the list)."""
    zero_row = (
        "a similarity matrix needs a positive diagonal (every element is similar "
        "to itself, Sec. 2.2); the check's kernel of random sparse or one-feature "
        "data has all-zero rows, which the core refuses"
    )
    if estimator.affinity == "precomputed":
        return {
            # Fits the raw 50 x 2 blobs as they are: the pairwise tag's kernel is not
            # applied in this check, and a 50 x 2 X is no n x n similarity matrix.
            "check_clustering": "fits raw 50 x 2 data, not a square similarity matrix",
            # The core refuses S < 0 naming the input ("consensus has negative entries
            # (min ...)"), not with scikit-learn's "Negative values in data" wording.
            "check_positive_only_tag_during_fit": "the core's message, not scikit-learn's",
            "check_estimator_sparse_tag": zero_row,
            "check_estimator_sparse_array": zero_row,
            "check_estimator_sparse_matrix": zero_row,
            "check_estimator_sparse_data": zero_row,  # the three above before scikit-learn 1.6
            "check_fit2d_1feature": zero_row,
        }
    if estimator.affinity == "labels":
        # Label runs are integers (the categorical tag, which most checks honour); this
        # check fits standardised real-valued blobs as they are.
        return {"check_clustering": "fits real-valued data; label runs must hold integers"}
    return {}


# One instance per affinity; a small ensemble keeps the checks fast.
CHECKED = [
    sca.StochasticClustering(ensemble=SMALL_ENSEMBLE),
    sca.StochasticClustering(affinity="snn", n_neighbors=5),
    sca.StochasticClustering(affinity="labels"),
    sca.StochasticClustering(affinity="precomputed"),
]


_SIGNATURE = inspect.signature(parametrize_with_checks).parameters
if "expected_failed_checks" in _SIGNATURE:  # scikit-learn >= 1.6
    _STRICT = {"xfail_strict": True} if "xfail_strict" in _SIGNATURE else {}  # >= 1.8

    @parametrize_with_checks(CHECKED, expected_failed_checks=expected_failed_checks, **_STRICT)
    def test_scikit_learn_checks(estimator, check):
        check(estimator)
else:  # scikit-learn < 1.6: the same list, applied here, strictly

    @parametrize_with_checks(CHECKED)
    def test_scikit_learn_checks(estimator, check):
        name = check
        while isinstance(name, functools.partial):
            name = name.func
        reason = expected_failed_checks(estimator).get(name.__name__)
        if reason is None:
            check(estimator)
            return
        with pytest.raises(Exception):  # noqa: B017  # an excused check may fail any way
            check(estimator)
        pytest.xfail(reason)


# -- behaviour -------------------------------------------------------------------------------


def test_baseball_precomputed_gives_the_papers_teams_and_spectrum():
    model = sca.StochasticClustering(affinity="precomputed", split="gaps", rule="perron")
    assert model.fit_predict(BASEBALL_S).tolist() == [0, 0, 0, 1, 1, 1]
    assert model.n_clusters_ == 2
    assert np.round(model.eigenvalues_, 4).tolist() == BASEBALL_PAPER["eigenvalues"]
    assert model.n_features_in_ == 6
    np.testing.assert_array_equal(model.membership_, np.eye(2)[model.labels_])
    assert model.confidence_.shape == (6,) and np.all(
        (0 < model.confidence_) & (model.confidence_ <= 1)
    )
    assert model.cluster_confidence_.shape == (2,)


@pytest.mark.parametrize("options", [{}, {"split": "gaps", "rule": "perron"}, {"starts": 4}])
def test_precomputed_agrees_with_cluster(options):
    params = {"n_clusters" if name == "k" else name: value for name, value in options.items()}
    model = sca.StochasticClustering(affinity="precomputed", random_state=5, **params)
    model.fit(BASEBALL_S)
    expected = sca.cluster(consensus=BASEBALL_S, options={**options, "seed": 5})
    assert_same_clustering(model, expected)


def test_sparse_precomputed_equals_dense():
    dense = sca.StochasticClustering(affinity="precomputed", random_state=0).fit(BASEBALL_S)
    sparse = sca.StochasticClustering(affinity="precomputed", random_state=0).fit(
        sp.csr_array(BASEBALL_S)
    )
    np.testing.assert_array_equal(sparse.labels_, dense.labels_)
    np.testing.assert_allclose(sparse.eigenvalues_, dense.eigenvalues_, atol=1e-10)


def test_labels_recover_planted_blocks_and_agree_with_cluster():
    rng = np.random.default_rng(0)
    truth = planted_truth(300, [1, 2, 3], rng)
    runs = planted_runs(truth, 30, 0.3, rng)
    model = sca.StochasticClustering(affinity="labels", starts=3, random_state=2).fit(runs)
    assert model.n_clusters_ == 3
    assert adjusted_rand_score(truth, model.labels_) == 1.0
    assert model.n_features_in_ == 30
    expected = sca.cluster(labels=runs, options={"starts": 3, "seed": 2})
    assert_same_clustering(model, expected)
    np.testing.assert_allclose(model.membership_, expected["membership"], atol=1e-6)
    np.testing.assert_allclose(model.membership_.sum(axis=1), 1)


def test_ensemble_agrees_with_cluster_on_raw_data():
    # the estimator standardises X itself (scale="standard"); the core is given it standardised
    X, _ = make_blobs(n_samples=120, centers=3, cluster_std=0.6, random_state=1)
    model = sca.StochasticClustering(ensemble=SMALL_ENSEMBLE, random_state=9).fit(X)
    expected = sca.cluster(
        data=StandardScaler().fit_transform(X),
        ensemble=SMALL_ENSEMBLE,
        options={"seed": 9, "scale": "none"},
    )
    assert_same_clustering(model, expected)


def test_snn_agrees_with_cluster():
    X, _ = make_blobs(n_samples=60, centers=2, cluster_std=0.5, random_state=3)
    model = sca.StochasticClustering(
        affinity="snn", n_neighbors=6, metric="manhattan", random_state=1
    ).fit(X)
    expected = sca.cluster(
        data=StandardScaler().fit_transform(X),
        snn={"kappa": 6, "metric": "manhattan"},
        options={"seed": 1, "scale": "none"},
    )
    assert_same_clustering(model, expected)


def test_scale_none_agrees_with_cluster_on_x_as_given():
    X, _ = make_blobs(n_samples=120, centers=3, cluster_std=0.6, random_state=1)
    model = sca.StochasticClustering(ensemble=SMALL_ENSEMBLE, scale="none", random_state=9).fit(X)
    expected = sca.cluster(data=X, ensemble=SMALL_ENSEMBLE, options={"seed": 9, "scale": "none"})
    assert_same_clustering(model, expected)


def test_scale_default_is_the_options_registrys():
    assert sca.StochasticClustering().scale == OPTIONS["scale"].default == "standard"


@pytest.mark.parametrize("params", RAW)
def test_standard_scale_makes_a_columns_unit_irrelevant(params):
    X, y = make_blobs(n_samples=300, centers=SEPARATED, random_state=0)
    in_thousandths = X * [1000, 1]
    fit = lambda data, **more: sca.StochasticClustering(  # noqa: E731
        3, random_state=0, **params, **more
    ).fit(data)
    model = fit(X)
    assert adjusted_rand_score(y, model.labels_) == 1.0
    np.testing.assert_array_equal(fit(in_thousandths).labels_, model.labels_)
    np.testing.assert_allclose(model.scaler_.centre, X.mean(axis=0))
    # as given, the column in thousandths alone decides the distances
    assert adjusted_rand_score(y, fit(in_thousandths, scale="none").labels_) < 0.6


def test_nmf_ensemble_scales_without_centring():
    X, _ = make_blobs(n_samples=60, centers=[[2, 2], [8, 3]], cluster_std=0.5, random_state=0)
    nmf = [{"algorithm": "nmf", "k": 2, "runs": 3}]
    model = sca.StochasticClustering(2, ensemble=nmf, random_state=0).fit(X)
    np.testing.assert_array_equal(model.scaler_.centre, 0.0)
    np.testing.assert_allclose(model.scaler_.transform(X), X / X.std(axis=0))


def test_default_ensemble_finds_planted_blobs_without_being_told_k():
    X, y = make_blobs(n_samples=200, centers=4, cluster_std=0.5, random_state=0)
    labels = sca.StochasticClustering(random_state=0).fit_predict(X)
    assert adjusted_rand_score(y, labels) == 1.0


def test_constant_data_is_one_cluster():
    for n in (2, 10, 40):
        model = sca.StochasticClustering().fit(np.ones((n, 3)))
        assert model.n_clusters_ == 1 and model.labels_.tolist() == [0] * n


@pytest.mark.slow
def test_random_state_reproduces_and_seeds_the_ensemble():
    X, _ = make_blobs(n_samples=80, centers=3, random_state=4)
    fit = lambda state: sca.StochasticClustering(  # noqa: E731
        ensemble=SMALL_ENSEMBLE, n_clusters=3, starts=3, random_state=state
    ).fit(X)
    np.testing.assert_array_equal(fit(3).membership_, fit(3).membership_)
    np.testing.assert_array_equal(
        fit(np.random.RandomState(1)).labels_, fit(np.random.RandomState(1)).labels_
    )
    # the seed reaches the ensemble: another one gives other runs, so another spectrum
    assert not np.allclose(fit(3).eigenvalues_[:6], fit(4).eigenvalues_[:6])


def test_params_clone_and_set_params():
    model = sca.StochasticClustering(3, affinity="labels", rule="gap", starts=2)
    assert model.get_params()["n_clusters"] == 3 and model.get_params()["rule"] == "gap"
    twin = clone(model)
    assert twin is not model and twin.get_params() == model.get_params()
    assert not hasattr(twin, "labels_")
    rng = np.random.default_rng(1)
    runs = planted_runs(planted_truth(60, [1, 1, 1], rng), 10, 0.1, rng)
    assert twin.set_params(n_clusters=2).fit(runs).n_clusters_ == 2


def test_in_a_pipeline():
    X, y = make_blobs(n_samples=90, centers=3, cluster_std=0.3, random_state=2)
    pipe = make_pipeline(
        StandardScaler(),
        sca.StochasticClustering(n_clusters=3, ensemble=SMALL_ENSEMBLE, random_state=0),
    )
    assert adjusted_rand_score(y, pipe.fit_predict(X * 100)) == 1.0
    assert pipe[-1].n_features_in_ == 2


@pytest.mark.parametrize(
    "params, parameter",
    [
        ({"n_clusters": 7}, "n_clusters"),
        ({"rule": "largest"}, "rule"),
        ({"split": "halves"}, "split"),
        ({"starts": 0}, "starts"),
        ({"k_hat": 0}, "k_hat"),
        ({"affinity": "rbf"}, "affinity"),
        ({"scale": "bogus"}, "scale"),
    ],
)
def test_bad_parameters_are_named(params, parameter):
    with pytest.raises(sca.SCAError) as info:
        sca.StochasticClustering(affinity="precomputed").set_params(**params).fit(BASEBALL_S)
    assert info.value.field == parameter and parameter in str(info.value)


def test_bad_options_are_refused_before_the_ensemble_runs():
    # the spec asks for a million runs: it must never start
    huge = [{"algorithm": "kmeans", "k": 2, "runs": 10**6}]
    X = np.random.default_rng(0).normal(size=(20, 2))
    for params in (
        {"rule": "largest"},
        {"n_clusters": 21},
        {"max_iterations": 0},
        {"scale": "bogus"},
    ):
        with pytest.raises(sca.SCAError):
            sca.StochasticClustering(ensemble=huge, **params).fit(X)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="symmetric"):
        sca.StochasticClustering(affinity="precomputed").fit([[1, 2], [3, 1]])
    with pytest.raises(ValueError, match="integers"):
        sca.StochasticClustering(affinity="labels").fit([[0.5, 1], [1, 0]])
    with pytest.raises(ValueError, match="NMF needs nonnegative data"):
        sca.StochasticClustering(ensemble=[{"algorithm": "nmf", "k": 2, "runs": 2}]).fit(
            [[-1.0, 0], [0, 1], [1, 1]]
        )


# -- predict: new rows of raw data ---------------------------------------------------------


@pytest.mark.parametrize("params", RAW)
def test_predict_places_new_rows_where_refitting_puts_them(params):
    X, y = make_blobs(n_samples=330, centers=SEPARATED, random_state=1)
    old, new = X[:300], X[300:]
    # SNN splits these blobs into three exactly uncoupled blocks (λ1 = λ2 = λ3 = 1), where
    # a start at some seeds stops on a wrong split; the comparison needs both fits right
    model = sca.StochasticClustering(3, random_state=1, **params).fit(old)
    predicted = model.predict(new)
    refit = sca.StochasticClustering(3, random_state=1, **params).fit(X)
    assert predicted.shape == (30,) and predicted.dtype.kind == "i"
    assert set(predicted) <= set(model.labels_)
    assert adjusted_rand_score(refit.labels_[300:], predicted) == 1.0
    # in labels_'s numbering: the old rows' clusters match across the two fits
    assert adjusted_rand_score(refit.labels_[:300], model.labels_) == 1.0
    assert adjusted_rand_score(y[300:], predicted) == 1.0
    for c in range(3):
        truth = y[:300][model.labels_ == c][0]
        assert np.all(y[300:][predicted == c] == truth)


@pytest.mark.parametrize("params", RAW)
def test_predict_on_the_training_rows_gives_labels(params):
    # a training row placed anew is its own element doubled, its consensus row its own row of
    # S; on separated blobs every element goes back to its cluster (near a boundary one may
    # not: the placement reads P's row, the iteration the whole walk)
    X, _ = make_blobs(n_samples=300, centers=SEPARATED, random_state=2)
    model = sca.StochasticClustering(3, random_state=0, **params).fit(X)
    np.testing.assert_array_equal(model.predict(X), model.labels_)


def test_predict_scales_new_rows_with_the_fitted_scaler():
    X, _ = make_blobs(n_samples=200, centers=SEPARATED, random_state=3)
    X = X * [1000, 1]
    model = sca.StochasticClustering(3, ensemble=SMALL_ENSEMBLE, random_state=0).fit(X)
    batch = model.predict(X[:20])
    # one row at a time: a scaler refitted on it would map every row to 0
    one_by_one = np.concatenate([model.predict(row[None]) for row in X[:20]])
    np.testing.assert_array_equal(one_by_one, batch)
    np.testing.assert_array_equal(batch, model.labels_[:20])


def test_predict_before_fit_is_refused():
    with pytest.raises(NotFittedError):
        sca.StochasticClustering().predict(np.zeros((2, 2)))


@pytest.mark.parametrize("params", RAW)
def test_predict_needs_the_fitted_features(params):
    X, _ = make_blobs(n_samples=60, centers=2, random_state=0)
    model = sca.StochasticClustering(2, random_state=0, **params).fit(X)
    with pytest.raises(ValueError, match="features"):
        model.predict(np.zeros((3, 3)))


@pytest.mark.parametrize("affinity", ["labels", "precomputed"])
def test_predict_is_for_raw_data_only(affinity):
    model = sca.StochasticClustering(affinity=affinity)
    assert not hasattr(model, "predict")
    with pytest.raises(AttributeError) as info:
        model.predict(BASEBALL_S)
    assert "raw data" in str(info.value.__cause__)


# -- the core without the web stack ---------------------------------------------------------

BLOCKED = (
    "flask",
    "celery",
    "marshmallow",
    "redis",
    "requests",
    "matplotlib",
    "waitress",
    "gunicorn",
    "kombu",
    "yaml",
    "sca_service",
    "sca_worker",
)

WITHOUT_WEB_STACK = """
import importlib.abc, json, sys

BLOCKED = set(sys.argv[2].split(","))

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ImportError(f"{name} is not installed")
        return None

sys.meta_path.insert(0, Blocker())
import numpy as np
import sca

S = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1)
labels = sca.StochasticClustering(affinity="precomputed").fit_predict(S)
rows = sca.StochasticClustering(random_state=0).fit_predict(S)  # S's rows as raw data
print(json.dumps({"labels": labels.tolist(), "rows": rows.tolist(),
                  "loaded": sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)}))
"""


@pytest.mark.slow
def test_core_runs_without_the_web_stack():
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_WEB_STACK, str(BASEBALL_CSV), ",".join(BLOCKED)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out == {"labels": [0, 0, 0, 1, 1, 1], "rows": [0, 0, 0, 1, 1, 1], "loaded": []}


def test_blocker_blocks():
    """The blocker of the test above refuses what it lists (so that test can fail)."""
    code = WITHOUT_WEB_STACK.replace("import sca\n", "import sca\nimport matplotlib\n")
    done = subprocess.run(
        [sys.executable, "-c", code, str(BASEBALL_CSV), ",".join(BLOCKED)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "matplotlib is not installed" in done.stderr


def test_core_dependencies_are_numpy_scipy_scikit_learn_numba():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {
        re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower()
        for requirement in project["dependencies"]
    }
    assert names == {"numpy", "scipy", "scikit-learn", "numba"}
    assert len(project["dependencies"]) == 4


def assert_same_clustering(model, expected: dict):
    """The estimator's fitted attributes against :func:`sca.cluster`'s result."""
    assert model.n_clusters_ == expected["k"]
    assert model.labels_.tolist() == expected["labels"]
    np.testing.assert_allclose(model.eigenvalues_, expected["eigenvalues"], atol=1e-12)
    np.testing.assert_allclose(model.confidence_, expected["confidence"], atol=1e-6)
    np.testing.assert_allclose(model.cluster_confidence_, expected["cluster_confidence"], atol=1e-6)
    assert model.n_iter_ == expected["iterations"]
    assert model.noise_floor_ == expected["noise_floor"]
