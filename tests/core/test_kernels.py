"""The label operator's row-block kernels (sca.operators.kernels): numpy, the
compiled loops on byte and wide codes, and the thread pools they run on."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import sca
import sca.operators.kernels
import sca.operators.labels
import sca.operators.threads
from sca.inputs import membership_factors
from sca.operators import LabelOperator
from sca.operators.threads import one_blas_thread


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
    monkeypatch.setattr(sca.operators.labels, "JOINT_MIN_N", 0)  # the Gram by counts at any n
    monkeypatch.setattr(sca.operators.kernels, "COMPILED_MIN_ROWS", 0 if compiled else 10**9)
    monkeypatch.setattr(sca.operators.labels, "WIDE_MIN_RATIO", 0 if wide else 10**9)
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
            monkeypatch.setattr(sca.operators.labels, "NARROW_MAX_N", narrow_max_n)
            assert np.allclose(L.gram(), F.gram(), rtol=1e-12)
            assert np.allclose(L.gram(np.float32), F.gram(), rtol=1e-5)  # a null draw's counts
    narrow, byte = (
        labels._packed(limit).groups for limit in (sca.operators.labels.NARROW_CODES, 256)
    )
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
    assert len(op.packing.groups) == 1  # one group of runs: no pairs of groups to count
    assert np.allclose(op.gram(), sca.FactoredOperator(H, groups=groups).gram(), rtol=1e-12)


def test_stages_on_threaded_kernels_hold_blas_to_one_thread(monkeypatch):
    """While the kernels run on every core, BLAS runs on one (its spinning
    threads would take the kernels' cores); other operators keep their BLAS."""
    monkeypatch.setattr(sca.operators.threads, "THREADS", 2)
    monkeypatch.setattr(sca.operators.kernels, "COMPILED_MIN_ROWS", 100)
    blas = lambda P: {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}  # noqa: E731
    before = blas(None)
    labels = np.random.default_rng(0).integers(0, 3, (300, 4))
    threaded, small = sca.membership_operator(labels), sca.membership_operator(labels[:50])
    assert threaded.threaded_kernels and not small.threaded_kernels
    assert one_blas_thread(blas)(threaded) == {1}
    assert one_blas_thread(blas)(small) == before == blas(None)
    for stage in (sca.balance, sca.spectrum, sca.iterate, sca.custom_cluster):
        assert stage.__wrapped__ is not None  # each stage is held to one BLAS thread


def test_dense_products_and_gram_blocks_cut_over_the_cores(monkeypatch):
    """While BLAS is held to one thread, a large dense product is cut over the
    cores, each share written in its place (to rounding: BLAS may sum a share
    in another order than the whole, as OpenBLAS's small-matrix kernels for
    AVX-512 do); the Gram matrix's blocks, put in place and mirrored on
    several cores, are those of the sparse H."""
    monkeypatch.setattr(sca.operators.threads, "THREADS", 2)
    monkeypatch.setattr(sca.operators.threads, "MIN_MATMUL_WORK", 1)
    monkeypatch.setattr(sca.operators.threads, "MIN_ROWS_PER_THREAD", 1)
    monkeypatch.setattr(sca.operators.kernels, "COMPILED_MIN_ROWS", 100)
    monkeypatch.setattr(sca.operators.labels, "JOINT_MIN_N", 0)
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 3, (300, 12)).astype(np.uint8)  # four groups: six pairs
    op = sca.membership_operator(labels)
    shapes = ((300, 50, 7), (7, 50, 300), (130, 65, 129))  # by rows, by columns, uneven shares

    def products(P):
        assert sca.operators.threads._held == 1
        for m, k, n in shapes:
            A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
            whole = A @ B
            cut = sca.operators.threads.matmul(A, B)
            assert np.allclose(cut, whole, rtol=0, atol=1e-13 * np.abs(whole).max())
        return P.gram()

    G = one_blas_thread(products)(op)
    assert sca.operators.threads._held == 0
    H, groups = membership_factors(labels)
    assert np.allclose(G, sca.FactoredOperator(H, groups=groups).gram(), rtol=1e-12)
    assert np.array_equal(G, G.T)


@pytest.mark.parametrize("groups", [1, 3, 4, 7, 9])
def test_packed_loops_four_groups_a_pass_match_numpy(monkeypatch, groups):
    """The compiled counts and gathers on byte codes, four groups a pass and the rest
    one at a time, are numpy's bincount and take: the counts exactly (each table's
    updates in the order of the rows), the gathers to rounding."""
    monkeypatch.setattr(sca.operators.kernels, "COMPILED_MIN_ROWS", 0)
    rng = np.random.default_rng(groups)
    m = 9000  # two blocks of rows for each loop, the second short
    sizes = rng.integers(2, 257, groups)
    binoff = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    packed = np.stack([rng.integers(0, s, m) for s in sizes]).astype(np.uint8)
    X, table = rng.standard_normal((m, 3)), rng.standard_normal((int(binoff[-1]), 3))
    counts = np.stack(
        [
            np.concatenate([np.bincount(c, x, minlength=s) for c, s in zip(packed, sizes)])
            for x in X.T
        ],
        axis=1,
    )
    gathers = sum(table[binoff[a] + packed[a].astype(np.intp)] for a in range(groups))
    assert np.array_equal(sca.operators.kernels.rmat(packed, binoff, X), counts)
    assert np.allclose(sca.operators.kernels.mat(packed, binoff, table), gathers, rtol=1e-12)


def test_block_passes_are_even_and_at_most_the_width():
    """``s`` columns go in the fewest passes of at most ``width`` columns, each as
    wide as the others, the last no narrower than the rest need it to be."""
    even = sca.operators.kernels._even_width
    for s in range(1, 300):
        for width in (1, 16, 40):
            step = even(s, width)
            passes = -(-s // step)
            assert step <= width and passes == -(-s // width)
            assert s - (passes - 1) * step >= step - passes + 1


def test_block_products_weigh_rows_inside_their_passes(monkeypatch):
    """A block of columns passes over the labels once for every PASS_COLUMNS columns
    or fewer (the passes even), reading X's columns in place and writing each
    pass's columns into one result, with D applied inside the passes: ``(D S D)
    X``, ``(DH)^T X`` and ``(DH) Z`` are the sparse H's, for blocks of one pass
    and of several."""
    monkeypatch.setattr(sca.operators.threads, "THREADS", 2)
    monkeypatch.setattr(sca.operators.threads, "MIN_ROWS_PER_THREAD", 1)
    monkeypatch.setattr(sca.operators.kernels, "COMPILED_MIN_ROWS", 100)
    rng = np.random.default_rng(8)
    labels = rng.integers(0, 20, (500, 9)).astype(np.uint8)  # a run to a byte group
    H, groups = membership_factors(labels)
    d = rng.random(500) + 0.5
    for L, F in (
        (sca.membership_operator(labels), sca.FactoredOperator(H, groups=groups)),
        (
            sca.membership_operator(labels).scaled(d),
            sca.FactoredOperator(H, groups=groups).scaled(d),
        ),
    ):
        for columns in (8, 16, 37, 83):
            X, Z = rng.standard_normal((500, columns)), rng.standard_normal((180, columns))
            assert L._by_block(X) and L._by_block(Z)
            assert np.allclose(L.matmat(X), F.matmat(X), rtol=1e-12)
            assert np.allclose(L.factor_transpose(X), F.factor_transpose(X), rtol=1e-12)
            assert np.allclose(L.factor(Z), F.factor(Z), rtol=1e-12)
            assert np.allclose(L._left(X), H.T @ X) and np.allclose(L._right(Z), H @ Z)
            # summed in single precision on request: double's product to single's
            # rounding, returned in double; the factored form stays in double
            single, double = L.matmat(X, single=True), F.matmat(X)
            assert single.dtype == np.float64 and not np.array_equal(single, L.matmat(X))
            assert np.allclose(single, double, rtol=1e-5, atol=1e-6 * np.abs(double).max())
            assert np.array_equal(F.matmat(X, single=True), double)


def test_gram_and_products_into_place_cut_over_the_cores(monkeypatch):
    """While BLAS is held to one thread, a tall block's ``A^T A`` is summed from
    each core's rows, and a product written into a given array (the
    iteration's orthonormalisation, on arrays it keeps) is the whole product."""
    monkeypatch.setattr(sca.operators.threads, "THREADS", 2)
    monkeypatch.setattr(sca.operators.threads, "MIN_MATMUL_WORK", 1)
    monkeypatch.setattr(sca.operators.kernels, "COMPILED_MIN_ROWS", 100)
    rng = np.random.default_rng(6)
    op = sca.membership_operator(rng.integers(0, 3, (300, 4)))

    def products(P):
        for m in (300, 301, 1):  # shares at BLAS's register blocks, uneven, and one row
            A, B = rng.standard_normal((m, 20)), rng.standard_normal((20, 20))
            G = sca.operators.threads.gram(A)
            assert np.allclose(G, A.T @ A, rtol=1e-12) and np.array_equal(G, G.T)
            out = np.empty((m, 20))
            assert sca.operators.threads.matmul(A, B, out=out) is out
            assert np.array_equal(out, A @ B)
        return True

    assert one_blas_thread(products)(op)


def test_triangular_products_in_place_cut_over_the_cores(monkeypatch):
    """``Y <- Y M`` for an upper triangular M, in place, each core its rows: the
    product with the whole M, for a C-ordered Y and for a block of a wider one."""
    monkeypatch.setattr(sca.operators.threads, "THREADS", 2)
    monkeypatch.setattr(sca.operators.threads, "MIN_MATMUL_WORK", 1)
    monkeypatch.setattr(sca.operators.kernels, "COMPILED_MIN_ROWS", 100)
    rng = np.random.default_rng(7)
    op = sca.membership_operator(rng.integers(0, 3, (300, 4)))
    M = np.triu(rng.standard_normal((12, 12)))

    def products(P):
        for Y in (rng.standard_normal((301, 12)), rng.standard_normal((300, 30))[:, 5:17]):
            expected = Y @ M
            sca.operators.threads.times_triangular(Y, M)
            assert np.allclose(Y, expected, rtol=1e-12, atol=1e-12)
        return True

    assert one_blas_thread(products)(op)
