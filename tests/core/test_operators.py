"""Every stage on the dense, sparse, factored, label-matrix and Dask forms of one
consensus agrees."""

import numpy as np
import pytest
import scipy.sparse as sp

import sca
import sca.kernels
import sca.labels
from sca.inputs import membership_factors
from sca.labels import LabelOperator
from sca.planted import planted_runs, planted_truth


@pytest.fixture(scope="module")
def forms():
    rng = np.random.default_rng(7)
    truth = planted_truth(300, [1, 2, 3], rng)
    labels = planted_runs(truth, 40, 0.3, rng)
    H, groups = membership_factors(labels)
    factored = sca.FactoredOperator(H, groups=groups)
    S = factored.to_dense()
    return truth, {
        "dense": sca.consensus_operator(S),
        "sparse": sca.consensus_operator(sp.csr_array(S)),
        "factored": factored,
        "labels": sca.membership_operator(labels),
    }


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
        balanced.d,
        spec.eigenvalues,
        spec.k,
        it.labels,
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


def test_every_stage_agrees_across_forms(forms):
    truth, ops = forms
    assert type(ops["labels"]) is LabelOperator and ops["labels"].codes.dtype == np.uint8
    results = {name: stage_results(op) for name, op in ops.items()}
    ref = results["dense"]
    assert ref[2] == 3
    assert sca.evaluate(ref[3], truth)["ari"] == 1.0
    for name in ("sparse", "factored", "labels"):
        assert_same(results[name], ref)


@pytest.mark.parametrize(
    "compiled, wide",
    [(False, False), (True, False), (True, True)],
    ids=["numpy", "compiled byte codes", "compiled wide codes"],
)
def test_label_operator_matches_sparse_h(forms, monkeypatch, compiled, wide):
    """Products, Gram matrix, entries, components and the null draw of the
    label matrix are those of the sparse H built from the same runs: through
    numpy (small inputs), the compiled kernels on the byte codes, and on the
    wide codes (from tens of thousands of elements on)."""
    monkeypatch.setattr(sca.labels, "JOINT_MIN_N", 0)  # the Gram by counts at any n
    monkeypatch.setattr(sca.kernels, "COMPILED_MIN_ROWS", 0 if compiled else 10**9)
    monkeypatch.setattr(sca.labels, "WIDE_MIN_RATIO", 0 if wide else 10**9)
    _, ops = forms
    factored = ops["factored"]
    labels = LabelOperator(ops["labels"].codes, ops["labels"].spans)  # its own packings
    assert (labels.wide is not None) == wide
    rng = np.random.default_rng(4)
    d = rng.random(300) + 0.5
    X = rng.random((300, 7))
    for F, L in ((factored, labels), (factored.scaled(d), labels.scaled(d))):
        for columns in (1, 2, 3, 4, 5, 7):  # wide gathers: four columns a pass, and the rest
            assert np.allclose(L.matmat(X[:, :columns]), F.matmat(X[:, :columns]), rtol=1e-12)
        assert np.allclose(L.matmat(X[:, 0]), F.matmat(X[:, 0]), rtol=1e-12)
        for narrow_max_n in (10**9, 0):  # the Gram from narrow groups, and from byte codes
            monkeypatch.setattr(sca.labels, "NARROW_MAX_N", narrow_max_n)
            assert np.allclose(L.gram(), F.gram(), rtol=1e-12)
            assert np.allclose(L.gram(np.float32), F.gram(), rtol=1e-5)  # a null draw's counts
    narrow, byte = (labels._packed(limit)[0] for limit in (sca.labels.NARROW_CODES, 256))
    assert len(narrow) > len(byte) > 1  # two different groupings of the runs were counted
    rows, cols = rng.integers(0, 300, 50), rng.integers(0, 300, 50)
    assert np.array_equal(labels.entries(rows, cols), factored.entries(rows, cols))
    nulls = [op.null_draw(np.random.default_rng(9)) for op in (factored, labels)]
    assert np.allclose(nulls[0].to_dense(), nulls[1].to_dense())
    uncoupled = np.repeat(np.array([[0], [0], [2], [1], [1]], dtype=np.uint8), 4, axis=1)
    op = sca.membership_operator(uncoupled)
    assert type(op) is LabelOperator
    H, groups = membership_factors(uncoupled)
    assert op.components()[0] == 3 and op.components()[1].tolist() == [0, 0, 2, 1, 1]
    assert (
        op.components()[1].tolist()
        == sca.FactoredOperator(H, groups=groups).components()[1].tolist()
    )
    assert len(op.packing[0]) == 1  # one group of runs: no pairs of groups to count
    assert np.allclose(op.gram(), sca.FactoredOperator(H, groups=groups).gram(), rtol=1e-12)


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
        assert type(op) is LabelOperator and op.packing[4].numblocks == (1, 5)
        assert_same(stage_results(op), stage_results(ops["labels"]))


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


def test_stages_on_threaded_kernels_hold_blas_to_one_thread(monkeypatch):
    """While the kernels run on every core, BLAS runs on one (its spinning
    threads would take the kernels' cores); other operators keep their BLAS."""
    from threadpoolctl import threadpool_info

    from sca.kernels import one_blas_thread

    monkeypatch.setattr(sca.kernels, "THREADS", 2)
    monkeypatch.setattr(sca.kernels, "COMPILED_MIN_ROWS", 100)
    blas = lambda P: {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}  # noqa: E731
    before = blas(None)
    labels = np.random.default_rng(0).integers(0, 3, (300, 4))
    threaded, small = sca.membership_operator(labels), sca.membership_operator(labels[:50])
    assert threaded.threaded_kernels and not small.threaded_kernels
    assert one_blas_thread(blas)(threaded) == {1}
    assert one_blas_thread(blas)(small) == before == blas(None)
    for stage in (sca.balance, sca.spectrum, sca.iterate, sca.custom_cluster):
        assert stage.__wrapped__ is not None  # each stage is held to one BLAS thread


@pytest.mark.parametrize("dense_max", [1000, 50], ids=["eigvalsh", "eigsh"])
def test_many_clusters_read_the_spectrum_off_the_counted_gram(monkeypatch, dense_max):
    """Beyond GRAM_MAX_K clusters (runs of many labels) the label matrix still
    counts G and reads P's largest eigenvalues off it, where the sparse H
    computes them from products with P: the same eigenvalues."""
    import sca.factored

    monkeypatch.setattr(sca.factored, "GRAM_MAX_K", 50)
    monkeypatch.setattr(sca.labels, "GRAM_MAX_K", 50)
    monkeypatch.setattr(sca.factored, "DENSE_SPECTRUM_MAX_N", dense_max)
    monkeypatch.setattr(sca.labels, "JOINT_MIN_N", 0)
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
