"""The consensus operator's forms (sca.operators): every stage on the dense,
sparse, factored, label-matrix and Dask forms of one consensus agrees."""

import numpy as np
import pytest
import scipy.sparse as sp

import sca
import sca.operators.gram
import sca.operators.labels
import sca.operators.pairs
from sca.inputs import membership_factors
from sca.operators import ChunkedLabelOperator, LabelOperator
from sca.planted import planted_runs, planted_truth


def test_factored_is_h_h_transpose(forms):
    _, ops = forms
    S = ops["dense"].S
    assert np.all(np.diag(S) == 40)  # S_ii = r
    assert np.array_equal(S, S.T) and np.all(S == np.round(S))
    x = np.random.default_rng(0).random((300, 3))
    for op in ops.values():
        assert np.allclose(op.matmat(x), S @ x)
        assert np.allclose(op.diagonal(), 40)


def stage_results(op):
    balanced = sca.balance(op)
    spec = sca.spectrum(balanced.P)
    it = sca.iterate(balanced.P, spec.k, seed=3, starts=3)
    gaps = sca.iterate(balanced.P, spec.k, seed=3, split="gaps", starts=4)
    custom = sca.custom_cluster(balanced.P, 5, spec.k, 2, 200)
    return (
        np.asarray(balanced.d),  # a chunked operator's are Dask arrays
        spec.eigenvalues,
        spec.k,
        np.asarray(it.labels),
        gaps.solutions,
        custom.cluster,
        sca.uncoupling_measure(balanced.P, it.labels),
        op.components()[0],
    )


def assert_same(got, ref):
    assert np.allclose(got[0], ref[0], rtol=1e-10)
    assert np.allclose(got[1], ref[1], atol=1e-10)
    assert got[2] == ref[2]
    assert np.array_equal(got[3], ref[3])
    assert [(s.tolist(), f) for s, f in got[4]] == [(s.tolist(), f) for s, f in ref[4]]
    assert got[5] == ref[5]
    assert got[6] == pytest.approx(ref[6])
    assert got[7] == ref[7] == 1


@pytest.mark.slow
def test_every_stage_agrees_across_forms(forms):
    truth, ops = forms
    assert type(ops["labels"]) is LabelOperator and ops["labels"].codes.dtype == np.uint8
    results = {name: stage_results(op) for name, op in ops.items()}
    ref = results["dense"]
    assert ref[2] == 3
    assert sca.evaluate(ref[3], truth)["ari"] == 1.0
    for name in ("sparse", "factored", "labels"):
        assert_same(results[name], ref)


def test_label_matrix_memory_mapped(tmp_path):
    """A .npy of labels is mapped, not read; the operator holds the map itself."""
    from sca.io import read_matrix_file

    rng = np.random.default_rng(5)
    labels = planted_runs(planted_truth(500, [1, 1], rng), 10, 0.2, rng, dtype=np.uint8)
    np.save(tmp_path / "runs.npy", labels)
    mapped, _ = read_matrix_file(str(tmp_path / "runs.npy"), "labels")
    assert isinstance(mapped, np.memmap)
    op = sca.membership_operator(mapped)
    assert np.shares_memory(op.codes, mapped)  # the map itself, not a copy
    assert np.allclose(
        op.matmat(np.ones(500)), sca.membership_operator(labels).matmat(np.ones(500))
    )


@pytest.mark.slow
def test_dask_label_matrix_on_a_local_cluster(forms):
    """The label matrix as a chunked Dask array, on a dask.distributed cluster:
    every stage gives the in-memory answer."""
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("dask.distributed")
    truth, ops = forms
    labels = np.asarray(ops["labels"].codes)
    # dashboard_address=None would still bind the scheduler's HTTP routes to 8787,
    # which two test runs at once (make test-pythons) would share.
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster),
    ):
        op = sca.membership_operator(da.from_array(labels, chunks=(70, -1)))
        assert type(op) is ChunkedLabelOperator and op.packing.codes.numblocks == (1, 5)
        assert_same(stage_results(op), stage_results(ops["labels"]))


@pytest.mark.slow
def test_large_spectrum_paths_agree_with_dense_reference():
    """eigsh (dense/sparse, n > 1000) and the K x K Gram matrix (factored)
    give the same leading eigenvalues as numpy's eigvalsh."""
    rng = np.random.default_rng(1)
    truth = planted_truth(1200, [1, 1, 2, 3], rng)
    factored = sca.membership_operator(planted_runs(truth, 25, 0.4, rng))
    P = sca.balance(factored).P
    reference = np.sort(np.linalg.eigvalsh(P.to_dense()))[::-1][:10]
    assert np.allclose(P.eigenvalues(10), reference, atol=1e-9)
    sparse = sca.balance(sca.consensus_operator(sp.csr_array(factored.to_dense()))).P
    assert np.allclose(sparse.eigenvalues(10), reference, atol=1e-8)
    dense = sca.balance(sca.consensus_operator(factored.to_dense())).P
    assert np.allclose(dense.eigenvalues(10), reference, atol=1e-8)


def test_state_round_trip(forms):
    _, ops = forms
    for op in ops.values():
        P = sca.balance(op).P
        again = sca.operator_from_state(sca.operator_state(P))
        assert type(again) is type(P)
        x = np.arange(P.n, dtype=float)
        assert np.allclose(again.matmat(x), P.matmat(x))


def test_uncoupled_consensus_is_reported_and_balanced():
    # Every run agrees: S is exactly block diagonal (uncoupled, Sec. 2.1).
    labels = np.repeat(np.array([[0], [0], [0], [1], [1]]), 5, axis=1)
    for op in (
        sca.membership_operator(labels),
        sca.consensus_operator(sca.membership_operator(labels).to_dense()),
    ):
        balanced = sca.balance(op)
        assert balanced.n_components == 2
        assert balanced.components.tolist() == [0, 0, 0, 1, 1]
        P = balanced.P.to_dense()
        assert np.all(np.isfinite(P)) and np.allclose(P.sum(axis=1), 1)
        spec = sca.spectrum(balanced.P)
        assert spec.k == 2
        assert sca.iterate(balanced.P, 2, split="gaps").labels.tolist() == [0, 0, 0, 1, 1]


def test_entries_and_block_sums_agree_across_forms(forms):
    truth, ops = forms
    rng = np.random.default_rng(2)
    rows, cols = rng.integers(0, 300, 50), rng.integers(0, 300, 50)
    for op in ops.values():
        P = sca.balance(op).P
        dense = P.to_dense()
        assert np.allclose(P.entries(rows, cols), dense[rows, cols])
        E = np.eye(3)[truth]
        assert np.allclose(P.block_sums(truth), E.T @ dense @ E)


@pytest.mark.slow
@pytest.mark.parametrize("dense_max", [1000, 50], ids=["eigvalsh", "eigsh"])
def test_many_clusters_read_the_spectrum_off_the_counted_gram(monkeypatch, dense_max):
    """Beyond GRAM_MAX_K clusters (runs of many labels) the label matrix still
    counts G and reads P's largest eigenvalues off it, where the sparse H
    computes them from products with P: the same eigenvalues."""
    monkeypatch.setattr(sca.operators.gram, "GRAM_MAX_K", 50)
    monkeypatch.setattr(sca.operators.labels, "GRAM_MAX_K", 50)
    monkeypatch.setattr(sca.operators.gram, "DENSE_SPECTRUM_MAX_N", dense_max)
    monkeypatch.setattr(sca.operators.labels, "JOINT_MIN_N", 0)
    rng = np.random.default_rng(3)
    labels = planted_runs(planted_truth(600, [1] * 12, rng), 10, 0.3, rng)
    H, groups = membership_factors(labels)
    PL = sca.balance(sca.membership_operator(labels)).P
    PF = sca.balance(sca.FactoredOperator(H, groups=groups)).P
    assert PL.n_clusters == PF.n_clusters > 50
    assert PL.gram_cheap and not PF.gram_cheap
    assert np.allclose(PL.eigenvalues(15), PF.eigenvalues(15), atol=1e-8)
    assert PL.factor_gram() is not None and PF.factor_gram() is None
    assert sca.spectrum(PL).k == sca.spectrum(PF).k == 12


@pytest.mark.parametrize("table", [True, False])
def test_components_of_runs_of_many_labels_are_the_sparse_h_ones(monkeypatch, table):
    """Runs of 300 labels (more than a packed group holds): the components come run
    by run from the label pairs that occur (a table of pairs, or their distinct
    codes) and are those of the sparse H's cluster graph: three groups that share
    no label in any run, a singleton among them, and labels no element has."""
    if not table:
        monkeypatch.setattr(sca.operators.pairs, "TABLE_CELLS_PER_ELEMENT", 0)
        monkeypatch.setattr(sca.operators.pairs, "TABLE_MIN_CELLS", 0)
    rng = np.random.default_rng(21)
    group = np.repeat([0, 1, 2], [1500, 1499, 1])
    rng.shuffle(group)
    # each run labels group g within its own band of labels (270 and up unused)
    codes = group[:, None] * 90 + rng.integers(0, 90 - 89 * (group[:, None] == 2), (3000, 12))
    codes = codes.astype(np.uint16)
    L = LabelOperator(codes, np.full(12, 300))
    assert not L._small
    H, groups = membership_factors(codes)
    count, labels = L.components()
    ref_count, ref_labels = sca.FactoredOperator(H, groups=groups).components()
    assert count == ref_count == 3
    assert np.array_equal(
        np.unique(labels, return_inverse=True)[1], np.unique(ref_labels, return_inverse=True)[1]
    )
    assert sorted(np.bincount(labels).tolist()) == [1, 1499, 1500]
