"""The choice among candidate k: each pair of clusters' uncoupling (sca.clustering)."""

from __future__ import annotations

import numpy as np

from sca.balance import balance
from sca.clustering import iterate_best, pair_uncoupling
from sca.operators.dense import DenseOperator


def _sigma(P, first, second):
    """Definition 2.7 on the principal submatrix of P on two index sets, scaled
    so that both blocks weigh the same."""
    a = P[np.ix_(first, first)].sum()
    c = P[np.ix_(second, second)].sum()
    alpha, beta = (c / a) ** 0.25, (a / c) ** 0.25
    A = P[np.ix_(np.concatenate([first, second]), np.concatenate([first, second]))].copy()
    scale = np.concatenate([np.full(first.size, alpha), np.full(second.size, beta)])
    A = scale[:, None] * A * scale[None, :]
    m = first.size
    return (A[:m, m:].sum() + A[m:, :m].sum()) / A.sum()


def test_each_pair_is_the_uncoupling_measure_of_its_submatrix():
    rng = np.random.default_rng(0)
    S = rng.random((30, 30))
    P = balance(DenseOperator(S + S.T)).P
    labels = rng.integers(0, 4, 30)
    sigma = pair_uncoupling(P, labels)
    dense = P.to_dense()
    for c in range(4):
        assert sigma[c, c] == 0.0
        for d in range(c + 1, 4):
            expected = _sigma(dense, np.flatnonzero(labels == c), np.flatnonzero(labels == d))
            assert np.isclose(sigma[c, d], expected) and np.isclose(sigma[d, c], expected)


def test_small_groups_apart_from_a_large_one_are_kept_apart():
    """Blocks of 200, 10 and 10, every pair tied at the same low level: the two
    small ones merged (k = 2) look far from the large one by Definition 2.7's
    unscaled σ, whose pairs' weight is mostly the large block's; scaled, the
    merged pair of small blocks is no better apart than the three blocks."""
    truth = np.repeat([0, 1, 2], [200, 10, 10])
    S = np.where(truth[:, None] == truth[None, :], 1.0, 0.02)
    P = balance(DenseOperator(S)).P
    k, result, scores = iterate_best(P, (2, 3), seed=0)
    assert k == 3 and scores[3] > scores[2]
    assert sorted(np.bincount(result.labels)) == [10, 10, 200]
