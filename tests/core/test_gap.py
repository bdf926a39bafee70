"""The gap statistic of the ensemble's own k-means runs (sca.reference.gap), and
what it changes of raw data's k: few rows in well separated groups are
counted, corners of uniform data are not."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

import sca
from sca.reference import (
    DECISIVE_EFFECT,
    MIN_EFFECT,
    GapStatistic,
    gap_choice,
    level_dispersions,
    levels_of,
    reference_k,
    reference_spectra,
)


def _within(X, labels):
    return sum(((X[labels == c] - X[labels == c].mean(axis=0)) ** 2).sum() for c in set(labels))


def test_level_dispersions_are_each_levels_best_run_per_row():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((90, 3))
    levels = [2, 2, 3, 3, 3, 5]
    runs = np.column_stack([rng.integers(0, k, X.shape[0]) for k in levels])
    runs[:, 1] = (X[:, 0] > 0).astype(int)  # a better run at k = 2
    got = level_dispersions(sca.membership_operator(runs), X, levels)
    np.testing.assert_array_equal(levels_of(levels), [1, 2, 3, 5])
    within = [_within(X, runs[:, j]) for j in range(len(levels))]
    expected = np.log([_within(X, np.zeros(90, int)), min(within[:2]), min(within[2:5]), within[5]])
    np.testing.assert_allclose(got, expected - np.log(X.shape[0]), rtol=1e-12)


def test_the_gap_statistic_takes_the_first_k_its_successor_does_not_beat():
    references = np.array([[0.0, -0.5, -0.8, -1.0], [0.1, -0.4, -0.7, -1.1]])
    mean = references.mean(axis=0)
    # gap 0, 0.5, 1.5, 1.52: at k = 3 the next level's gain is within its s (0.061)
    gap = GapStatistic.of([1, 2, 3, 4], mean - [0.0, 0.5, 1.5, 1.52], references)
    assert gap.k == 3 and gap.effect == pytest.approx(1.5)
    flat = GapStatistic.of([1, 2, 3, 4], mean, references)
    assert flat.k == 1 and flat.effect == 0.0


def test_the_gap_statistic_replaces_the_spectrum_only_when_both_see_the_groups():
    gap = GapStatistic(4, 1.5 * MIN_EFFECT, (1, 2, 3, 4, 5), (0.0, 0.1, 0.2, 1.4, 1.3))
    seen = []
    assert gap_choice(gap, 1, lambda j: seen.append(j) or True) == 4 and seen == [4]
    assert gap_choice(gap, 4, lambda j: True) is None  # they agree
    assert gap_choice(gap, 1, lambda j: False) is None  # the spectrum sees no 4 groups
    weak = GapStatistic(4, 0.9 * MIN_EFFECT, gap.levels, gap.gap)  # corners, not groups
    assert gap_choice(weak, 1, lambda j: True) is None
    assert gap_choice(None, 1, lambda j: True) is None


def test_groups_four_times_tighter_outweigh_a_spectrum_that_sees_no_structure():
    decisive = GapStatistic(3, DECISIVE_EFFECT, (1, 2, 3, 4), (0.0, 0.2, 1.4, 1.2))
    assert gap_choice(decisive, 1, lambda j: False) == 3
    assert gap_choice(decisive, 2, lambda j: False) is None  # the spectrum saw 2 groups
    below = GapStatistic(3, 0.99 * DECISIVE_EFFECT, decisive.levels, decisive.gap)
    assert gap_choice(below, 1, lambda j: False) is None


def test_groups_along_one_axis_are_counted():
    """Three separated blobs on a line: the references, Gaussian with the data's
    principal variances, are elongated alike and k-means cuts them as
    consistently (λ2 on the references' mean); the runs' groups are about 16
    times tighter than the references' cells."""
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(c, 0.5, (40, 2)) for c in (0.0, 6.0, 12.0)])
    truth = np.repeat([0, 1, 2], 40)
    model = sca.StochasticClustering(random_state=0).fit(X)
    assert model.n_clusters_ == 3
    assert adjusted_rand_score(truth, model.labels_) == 1.0


def test_the_spectrum_sees_groups_above_the_references_or_falling_after_them():
    rng = np.random.default_rng(0)
    smooth = np.array([1.0, 0.85, 0.7, 0.58, 0.48, 0.4, 0.33, 0.27, 0.22, 0.18])
    references = (smooth * rng.uniform(0.97, 1.03, (8, smooth.size))).clip(max=1)
    gap = GapStatistic(4, 1.5 * MIN_EFFECT, (1, 2, 3, 4, 5), (0.0, 0.5, 1.0, 1.5, 1.5))
    shelf = smooth * [1, 1.015, 1.015, 1.015, 1, 1, 1, 1, 1, 1]  # λ2 ... λ4 a little above
    assert reference_k(shelf, references).k == 1
    assert reference_k(shelf, references, gap).k == 4
    # λ3 and λ4 below the references' mean, but the spectrum falls hardest after λ4
    fall = smooth * [1, 1.15, 0.98, 0.98, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]
    assert reference_k(fall, references, gap).k == 4
    # below the references' mean and no fall after λ4: the statistic alone is not enough
    low = smooth * [1, 1.15, 0.98, 0.98, 0.97, 0.97, 0.97, 0.97, 0.97, 0.97]
    assert reference_k(low, references, gap).k == reference_k(low, references).k != 4


@pytest.mark.parametrize(("k", "size"), [(4, 15), (5, 20)])
def test_few_rows_in_separated_groups_are_counted(k, size):
    centres = np.array([[0, 0], [14, 0], [0, 14], [14, 14], [7, 24]])[:k]
    X, truth = make_blobs([size] * k, centers=centres, random_state=0)
    model = sca.StochasticClustering(random_state=0).fit(X)
    assert model.n_clusters_ == k
    assert model.confidence_.shape == (k * size,)


@pytest.mark.parametrize(
    "draw",
    [
        lambda rng: rng.uniform(size=(500, 2)),  # corners the Gaussian references lack
        lambda rng: rng.uniform(size=(60, 2)),
        lambda rng: rng.standard_normal((100, 2)),
    ],
    ids=["uniform square n=500", "uniform square n=60", "Gaussian n=100"],
)
def test_no_structure_stays_one_cluster(draw):
    X = draw(np.random.default_rng(1))
    assert sca.StochasticClustering(random_state=0).fit(X).n_clusters_ == 1


def test_only_k_means_runs_are_read_by_the_gap_statistic():
    X = np.random.default_rng(2).standard_normal((60, 2))
    for ensemble, read in (
        ([{"algorithm": "kmeans", "k": [2, 3], "runs": 2}], True),
        ([{"algorithm": "single", "k": [2, 3], "runs": 2}], False),
        (
            [
                {"algorithm": "kmeans", "k": 2, "runs": 2},
                {"algorithm": "single", "k": 3, "runs": 2},
            ],
            False,
        ),
    ):
        references = reference_spectra(X, ensemble, draws=2)
        S = sca.membership_operator(sca.ensemble_labels(X, ensemble))
        assert (references.gap(S, X) is not None) == read
