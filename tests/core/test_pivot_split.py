"""The split of many clusters by pivoted QR (sca.splits.PivotSplit) and the
iteration's memory with a block of many columns."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

import sca
from sca.iteration import _normalise, evolve
from sca.planted import planted_runs, planted_truth
from sca.splits import MANY_CENTRES, KMeansSplit, PivotSplit, row_split


def indicator_rows(sizes, noise, rng):
    """An orthonormal block of ``k - 1`` columns spanning (with the constant) the
    indicators of clusters of ``sizes``, in a random basis, plus ``noise``."""
    truth = np.repeat(np.arange(len(sizes)), sizes)
    rng.shuffle(truth)
    E = np.eye(len(sizes))[truth] / np.sqrt(np.asarray(sizes, dtype=float))[truth, None]
    Y = E @ np.linalg.qr(rng.standard_normal((len(sizes), len(sizes))))[0][:, 1:]
    Y += noise * rng.standard_normal(Y.shape) / np.sqrt(truth.size)
    _normalise(Y, Y.shape[1])
    return Y, truth


def test_many_clusters_take_the_pivot_split():
    assert isinstance(row_split(MANY_CENTRES, 0, 10**4), KMeansSplit)
    assert isinstance(row_split(MANY_CENTRES + 1, 0, 10**4), PivotSplit)


def test_pivots_find_each_of_many_unequal_clusters():
    """300 clusters of 5 to 60 rows: one pivot in each, every row with its own."""
    rng = np.random.default_rng(0)
    sizes = rng.integers(5, 61, 300)
    Y, truth = indicator_rows(sizes, 0.05, rng)
    labels = PivotSplit(300, 0, truth.size)(Y)
    assert labels is not None and adjusted_rand_score(truth, labels) == 1.0


def test_kept_pivots_read_the_rows_in_any_basis():
    """After an orthonormal block the next may come in another basis; once the
    clustering repeats the pivots are kept, and the coefficients, and so the
    clusters, are the same in any basis; where that basis has drawn the columns
    too close together the rows are not read and the next block must be
    orthonormal."""
    rng = np.random.default_rng(1)
    Y, truth = indicator_rows([20] * 260, 0.3, rng)
    split = PivotSplit(260, 0, truth.size)
    first = split(Y)
    assert first is not None and split.basis_free and not split.repeated
    assert np.array_equal(split(Y), first) and split.repeated
    skewed = Y @ (np.eye(259) + 0.3 * rng.standard_normal((259, 259)) / np.sqrt(259))
    assert np.array_equal(split(skewed), first) and split.basis_free
    U, _, Vt = np.linalg.svd(rng.standard_normal((259, 259)))
    collapsed = Y @ (U * np.logspace(0, -7, 259)) @ Vt
    assert split(collapsed) is None and not split.basis_free


@pytest.fixture(scope="module")
def many_blocks():
    """P of 40 noisy runs over 300 planted blocks of 20 elements."""
    rng = np.random.default_rng(3)
    truth = planted_truth(6000, [1] * 300, rng)
    runs = planted_runs(truth, 40, 0.5, rng, dtype=np.uint16)
    return sca.balance(sca.membership_operator(runs)).P, truth


def test_the_iteration_settles_on_many_planted_blocks(many_blocks, monkeypatch):
    """300 blocks through the iteration: each found, the clustering settled, and
    the block orthonormalised only until the pivots hold."""
    import sca.iteration

    P, truth = many_blocks
    calls = []
    orthonormal = sca.iteration.orthonormal
    monkeypatch.setattr(sca.iteration, "orthonormal", lambda Y: calls.append(1) or orthonormal(Y))
    result = sca.iterate(P, 300, seed=0)
    assert adjusted_rand_score(truth, result.labels) == 1.0
    assert result.iterations >= 6 and 1 <= len(calls) <= result.iterations - 5


def test_a_block_is_multiplied_in_place_by_slices(many_blocks, monkeypatch):
    """A block larger than PRODUCT_BYTES is multiplied a slice of at least
    PRODUCT_MIN_COLUMNS columns at a time into its own memory, the same
    products bit for bit; a narrower block into a new array; and the random
    start's block is the iterates' memory only when the caller gives it up."""
    import sca.iteration

    P, _ = many_blocks
    Y = np.random.default_rng(4).random((P.n, 299))
    whole = P.matmat(Y, single=True)
    monkeypatch.setattr(sca.iteration, "PRODUCT_BYTES", P.n * 8 * 50)
    sliced = Y.copy()
    assert sca.iteration._product(P, sliced, single=True) is sliced
    assert np.array_equal(sliced, whole)
    narrow = Y[:, :60].copy()
    product = sca.iteration._product(P, narrow, single=True)
    assert product is not narrow and np.array_equal(product, whole[:, :60])
    X0 = Y[:, :30].copy()
    kept = X0.copy()
    *_, iterates = evolve(P, 31, X0, 30, "kmeans", 1, 1)
    assert np.array_equal(X0, kept) and not np.shares_memory(iterates, X0)
    monkeypatch.setattr(sca.iteration, "PRODUCT_BYTES", P.n * 8 * 10)
    monkeypatch.setattr(sca.iteration, "PRODUCT_MIN_COLUMNS", 8)
    *_, iterates = evolve(P, 31, X0, 30, "kmeans", 1, 1, overwrite_x0=True)
    assert np.shares_memory(iterates, X0)


def test_moved_counts_elements_not_names():
    from sca.splits import moved

    before = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    assert moved(before, np.array([2, 2, 2, 0, 0, 1, 1, 1])) == 0
    assert moved(before, np.array([0, 0, 1, 1, 1, 2, 2, 2])) == 1
    assert moved(before, np.zeros(8, dtype=np.int64)) == 5
