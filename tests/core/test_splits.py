"""The k-means split at k = 2: its cut at the largest gap between the centres (sca.splits)."""

from __future__ import annotations

import numpy as np

from sca.splits import GapCut, KMeansSplit


def _one_vector(rng):
    """Two large groups at 0 and 1, and a small one spread over 0.15 ... 0.6 between them."""
    return np.concatenate(
        [
            rng.normal(0.0, 0.005, 400),
            rng.normal(1.0, 0.005, 120),
            np.linspace(0.15, 0.6, 15),
        ]
    )


def test_the_small_group_between_two_large_ones_is_not_cut():
    rng = np.random.default_rng(0)
    y = _one_vector(rng)
    labels = KMeansSplit(2, 0, y.size)(y[:, None])
    assert np.unique(labels[520:]).size == 1  # k-means' midpoint, near 0.5, would cut it
    assert np.array_equal(labels[:400], np.full(400, labels[520]))
    assert np.all(labels[400:520] != labels[520])


def test_the_gaps_of_the_tails_are_not_read():
    rng = np.random.default_rng(1)
    y = np.concatenate([rng.normal(0.0, 0.1, 300), rng.normal(1.0, 0.1, 300), [3.0, -2.5]])
    labels = KMeansSplit(2, 0, y.size)(y[:, None])
    assert min(np.bincount(labels)) >= 290  # the whole vector's largest gap leaves one row alone
    centres = np.array([[y[y < 0.5].mean()], [y[y >= 0.5].mean()]])
    assert -0.5 < GapCut.between(centres, y).cut < 1.5


def test_without_a_gap_between_the_centres_the_cut_is_their_midpoint():
    cut = GapCut.between(np.array([[0.0], [1.0]]), np.array([-1.0, 2.0]))
    assert cut.cut == 0.5
    assert cut.predict(np.array([[0.2], [0.7]])).tolist() == [0, 1]
