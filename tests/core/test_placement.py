"""New elements placed into a finished clustering (sca.bordered, sca.placement, sca.newrows)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sca
from sca.bordered import BorderedOperator, extend_scaling
from sca.newrows import check_new_data, consensus_rows_each, neighbour_index, neighbour_rows
from sca.planted import planted_runs, planted_truth
from tests.conftest import BASEBALL_S, DATA, load_csv


def _job(labels_runs):
    S = sca.membership_operator(labels_runs)
    balanced = sca.balance(S)
    spec = sca.spectrum(balanced.P, rule="gap")
    result = sca.iterate(balanced.P, spec.k)
    return balanced, result.labels


def _dense_extended(S: np.ndarray, s, s00, d, delta) -> np.ndarray:
    """The extended balanced matrix formed densely (tests only)."""
    n = S.shape[0]
    Sx = np.empty((n + 1, n + 1))
    Sx[:n, :n], Sx[:n, n], Sx[n, :n], Sx[n, n] = S, s, s, s00
    dx = np.append(d, delta)
    return dx[:, None] * Sx * dx[None, :]


def test_extended_scaling_rows_sum_to_one_and_deviation_is_the_worst_row():
    S = np.array(BASEBALL_S, dtype=float)
    balanced = sca.balance(sca.consensus_operator(S))
    rng = np.random.default_rng(0)
    s, s00 = rng.uniform(0, 100, 6), 100.0
    ext = extend_scaling(balanced.d, s, s00)
    Px = _dense_extended(S, s, s00, balanced.d, ext.scale)
    sums = Px.sum(axis=1)
    assert abs(sums[-1] - 1.0) < 1e-13  # the new row is exact
    assert ext.deviation == pytest.approx(np.max(np.abs(sums - 1.0)), rel=1e-9)
    assert np.allclose(Px[-1, :-1], ext.row) and Px[-1, -1] == pytest.approx(ext.corner)
    # δ solves δ (s·d + δ s00) = 1
    assert ext.scale * (s @ balanced.d + ext.scale * s00) == pytest.approx(1.0, abs=1e-14)


@pytest.mark.parametrize("form", ["dense", "sparse", "factored"])
def test_bordered_operator_equals_the_dense_extended_matrix(form):
    rng = np.random.default_rng(1)
    runs = planted_runs(planted_truth(60, [1, 1, 1], rng), 12, 0.2, rng)
    S = sca.membership_operator(runs)
    if form != "factored":
        dense = S.to_dense()
        S = (
            sca.consensus_operator(dense)
            if form == "dense"
            else sca.SparseOperator(sp.csr_array(dense))
        )
    balanced = sca.balance(S)
    s, s00 = S.to_dense()[7] * rng.uniform(0.5, 1.0, 60), 12.0
    ext = extend_scaling(balanced.d, s, s00)
    B = BorderedOperator(balanced.P, ext.row, ext.corner)
    Px = _dense_extended(S.to_dense(), s, s00, balanced.d, ext.scale)
    X = rng.random((61, 3))
    assert np.allclose(B.matmat(X), Px @ X) and np.allclose(B.matmat(X[:, 0]), Px @ X[:, 0])
    assert np.allclose(B.diagonal(), np.diag(Px))
    rows, cols = np.array([0, 60, 5, 60]), np.array([60, 3, 5, 60])
    assert np.allclose(B.entries(rows, cols), Px[rows, cols])
    # The custom clustering on the bordered operator is that on the dense matrix.
    a = sca.custom_cluster(B, 60, 3, min_size=5, max_size=30)
    b = sca.custom_cluster(sca.DenseOperator(Px), 60, 3, min_size=5, max_size=30)
    assert a.cluster == b.cluster and a.iterations == b.iterations
    assert np.allclose([s for _, s in a.ranked], [s for _, s in b.ranked])


def test_a_copy_of_an_element_lands_with_it():
    rng = np.random.default_rng(2)
    truth = planted_truth(300, [1, 1, 1], rng)
    runs = planted_runs(truth, 20, 0.25, rng)
    balanced, labels = _job(runs)
    columns, groups = sca.run_columns(runs)
    H = balanced.P.H
    for e in (0, 17, 123):
        rows, selfs = sca.label_rows(H, columns, groups, runs[e])
        S_row = balanced.P.unscaled().matmat(np.eye(300)[e])
        assert np.array_equal(rows[:, 0], S_row) and selfs[0] == 20
        placed = sca.place(balanced.P, labels, rows[:, 0], selfs[0], min_size=2, max_size=150)
        assert placed.cluster == labels[e]
        assert placed.similar[0][0] == e  # its twin is the most similar
        assert placed.custom.cluster[0] == 300 and e in placed.custom.cluster
        # Its confidence is its twin's, up to the small change of scaling.
        firm = sca.diagnostics.confidence(balanced.P, labels)["elements"][e]
        assert placed.confidence == pytest.approx(firm, abs=0.05)


def test_labels_unknown_to_a_run_share_nothing_and_bad_labels_name_the_field():
    # Small labels give the label operator (a column per label 0..max), labels
    # far apart or an element missing from a run the sparse H of labels used.
    small = np.array([[0, 5], [0, 5], [1, 7], [1, 7]])
    layouts = (
        (small, [0, 1, 0, 1, 2, 3, 4, 5, 6, 7], [0, 2, 10]),
        (small * 10**6, [0, 10**6, 5 * 10**6, 7 * 10**6], [0, 2, 4]),
        (np.vstack([small, [-1, 5]]), [0, 1, 5, 7], [0, 2, 4]),
    )
    for runs, expected_columns, expected_groups in layouts:
        columns, groups = sca.run_columns(runs)
        assert columns.tolist() == expected_columns and groups.tolist() == expected_groups
        scale = 10**6 if runs.max() > 7 else 1
        H = sca.membership_operator(runs).H
        assert H.shape == (runs.shape[0], groups[-1])
        rows, selfs = sca.label_rows(H, columns, groups, [[scale, 9], [-1, 5 * scale]])
        assert rows[:4, 0].tolist() == [0, 0, 1, 1] and rows[:4, 1].tolist() == [1, 1, 0, 0]
        assert selfs.tolist() == [2, 1]
        # a copy of element 2 gets element 2's row of S = H H^T
        copy, _ = sca.label_rows(H, columns, groups, runs[[2]])
        assert np.array_equal(copy[:, 0], (H @ H.T).toarray()[2])
    for bad in ([1], [[1, 2, 3]], [0.5, 1], ["a", "b"]):
        with pytest.raises(sca.SCAError) as err:
            sca.label_rows(H, columns, groups, bad, field="elements[0].labels")
        assert err.value.field == "elements[0].labels"


@pytest.mark.slow
def test_ensemble_models_label_their_own_rows_as_the_runs_did(iris):
    leukemia = load_csv(DATA / "leukemia" / "X.csv")
    for X, spec in (
        (iris[0], [{"algorithm": "kmeans", "k": [3, 4], "runs": 3}]),
        (leukemia, [{"algorithm": "nmf", "k": [3, 6], "runs": 2}]),
    ):
        plan = sca.ensemble_plan(spec, seed=3)
        fitted = [sca.ensemble_model(X, run) for run in plan]
        labels = np.column_stack([lab for lab, _ in fitted])
        assert np.array_equal(labels, sca.ensemble_labels(X, spec, seed=3))
        fit = sca.ensemble_fit(X, spec, seed=3)
        assert np.array_equal(fit["labels"], labels)
        models = np.concatenate([m for _, m in fitted])
        groups = np.concatenate([[0], np.cumsum([m.shape[0] for _, m in fitted])])
        predicted = sca.ensemble_predict(models, groups, [r["algorithm"] for r in plan], X)
        # k-means: the nearest centre is the run's label; NMF: the coefficients solved
        # with the components fixed give the joint fit's argmax (to its convergence).
        assert np.mean(predicted == labels) >= (1.0 if spec[0]["algorithm"] == "kmeans" else 0.97)


def test_shared_nearest_neighbours_of_a_copy_share_its_neighbourhood(iris):
    from sklearn.neighbors import NearestNeighbors

    X, _ = iris
    S = sca.snn_operator(X, 8)
    index = NearestNeighbors().fit(X)
    rows, selfs = neighbour_rows(index, S.H, X[[10]] + 1e-9, 8)
    own = S.to_dense()[10]
    assert selfs[0] == 9 and rows[:, 0].max() <= 9
    # Its 8 nearest are the element itself and 7 of its own neighbours.
    assert np.corrcoef(rows[:, 0], own)[0, 1] > 0.9


def test_predict_places_held_out_label_runs_as_well_as_the_job():
    rng = np.random.default_rng(4)
    truth = planted_truth(1200, [3, 2, 1], rng)
    runs = planted_runs(truth, 10, 0.4, rng)
    keep, held = np.arange(1000), np.arange(1000, 1200)
    balanced, labels = _job(runs[keep])
    mapping = sca.matching(labels, truth[keep])
    in_job = np.mean(mapping[labels] == truth[keep])
    columns, groups = sca.run_columns(runs[keep])
    rows, selfs = sca.label_rows(balanced.P.H, columns, groups, runs[held])
    clusters, confidence = sca.predict(balanced.P, labels, rows, selfs)
    placed = np.mean(mapping[clusters] == truth[held])
    assert in_job > 0.8 and placed >= in_job - 0.05, (in_job, placed)
    assert np.all((confidence > 0) & (confidence <= 1))


def test_a_new_element_similar_to_nothing_is_refused():
    balanced = sca.balance(sca.consensus_operator(np.array(BASEBALL_S, dtype=float)))
    with pytest.raises(sca.SCAError):
        extend_scaling(balanced.d, np.zeros(6), 1.0)
    with pytest.raises(sca.SCAError):
        extend_scaling(balanced.d, np.ones(6), 0.0)


@pytest.mark.parametrize(
    "values, nonnegative, message",
    [
        ([[1.0, 2.0], "ab"], False, "must be a list of numbers"),
        ([[1.0, 2.0], [1.0]], False, "needs the job's 2 features"),
        ([[1.0, 2.0], [1.0, np.nan]], False, "NaN or infinite"),
        ([[1.0, 2.0], [1.0, -1.0]], True, "NMF needs nonnegative data"),
    ],
)
def test_new_raw_rows_are_checked_one_by_one(values, nonnegative, message):
    with pytest.raises(sca.SCAError, match=message) as fault:
        check_new_data(values, 2, nonnegative=nonnegative, field="elements[{i}].data")
    assert fault.value.field == "elements[1].data"
    rows = check_new_data([[1, 2], [3.5, 4]], 2, nonnegative=True)
    assert rows.dtype == float and rows.tolist() == [[1.0, 2.0], [3.5, 4.0]]


def test_consensus_rows_each_names_the_faulty_element():
    rows, selfs = consensus_rows_each([[1.0, 0.0, 2.0], [0.0, 3.0, 1.0]], [None, 4.0], 3, 5.0)
    assert rows.shape == (3, 2) and rows[:, 1].tolist() == [0.0, 3.0, 1.0]
    assert selfs.tolist() == [5.0, 4.0]
    with pytest.raises(sca.SCAError) as fault:
        consensus_rows_each([[1.0, 0.0, 2.0], [0.0, -3.0, 1.0]], [None, None], 3, 5.0, "e[{i}]")
    assert fault.value.field == "e[1]"


def test_the_neighbour_index_finds_each_row_itself():
    X = np.random.default_rng(0).normal(size=(20, 3))
    _, near = neighbour_index(X, "cosine").kneighbors(X, n_neighbors=1)
    assert near.ravel().tolist() == list(range(20))
