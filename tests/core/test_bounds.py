"""The noise rule's count settled by Courant-Fischer bounds (sca.bounds)."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

import sca
import sca.bounds
from sca.bounds import TrialGroups, groups_of, least_shared
from sca.null import noise_floor
from sca.planted import planted_runs, planted_truth


def _balanced(labels):
    S = sca.membership_operator(labels)
    return S, sca.balance(S).P


def _exact_spectrum(P):
    dense = P.matmat(np.eye(P.n))
    return np.sort(np.linalg.eigvalsh((dense + dense.T) / 2))[::-1]


@pytest.mark.parametrize(
    "n, blocks, runs, noise, seed",
    [
        (1200, 40, 100, 0.5, 0),  # blocks of 30, half of each run relabelled
        (1500, 30, 40, 0.3, 1),
        (1200, 60, 60, 0.6, 2),  # blocks of 20, weaker
        (1500, 10, 30, 0.9, 3),  # almost nothing kept: the groups fall apart
        (1000, 1, 50, 0.5, 4),  # one block: only noise inside it
    ],
)
def test_a_count_by_bounds_is_the_count_of_the_eigenvalues(n, blocks, runs, noise, seed):
    """Wherever the bounds settle a count it is the noise rule's count on P's exact
    spectrum, and each bound lies on its side of the eigenvalue it bounds; on the
    planted blocks with half of each run kept they settle it."""
    rng = np.random.default_rng(seed)
    truth = planted_truth(n, [1] * blocks, rng)
    S, P = _balanced(planted_runs(truth, runs, noise, rng, dtype=np.uint8))
    null = noise_floor(S, seed)
    exact = _exact_spectrum(P)
    counted = TrialGroups(P).count(null)
    if noise <= 0.6 and blocks > 1:
        assert counted is not None
    if counted is None:
        return
    m = counted.count
    assert m == null.signal(exact) == blocks
    assert np.all(counted.lower <= exact[:m] + 1e-9)
    assert counted.upper >= exact[m] - 1e-6
    assert "counted by bounds" in counted.note


def test_random_labels_settle_no_count():
    """Runs of random labels share no more clusters than the null allows: no groups,
    nothing counted."""
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 50, size=(2000, 40)).astype(np.uint8)
    S, P = _balanced(labels)
    assert np.all(groups_of(P, least_shared(P)) == -1)
    assert TrialGroups(P).count(noise_floor(S, 0)) is None


def test_the_least_shared_count_is_past_the_null_tail():
    """Under the null a pair shares about Poisson(mean) clusters: the least count is
    the first whose tail over all pairs is below NULL_PAIRS, and one less is not."""
    from scipy.stats import poisson

    rng = np.random.default_rng(6)
    truth = planted_truth(3000, [1] * 100, rng)
    _, P = _balanced(planted_runs(truth, 50, 0.5, rng, dtype=np.uint8))
    least = least_shared(P)
    sizes = np.asarray(P.H.sum(axis=0)).ravel()
    mean = sizes @ (sizes - 1) / (3000 * 2999)
    pairs = 3000 * 2999 / 2
    assert pairs * poisson.sf(least - 1, mean) <= sca.bounds.NULL_PAIRS
    assert pairs * poisson.sf(least - 2, mean) > sca.bounds.NULL_PAIRS


def test_pairs_past_the_work_limit_are_not_counted(monkeypatch):
    rng = np.random.default_rng(7)
    truth = planted_truth(1200, [1] * 40, rng)
    S, P = _balanced(planted_runs(truth, 100, 0.5, rng, dtype=np.uint8))
    null = noise_floor(S, 0)
    assert TrialGroups(P).count(null) is not None
    monkeypatch.setattr(sca.bounds, "MAX_PAIR_WORK", sca.bounds.pair_work(P) - 1)
    assert TrialGroups(P).count(null) is None


def test_the_sparse_membership_form_counts_as_the_label_form():
    """The same runs as a sparse H with its runs' column offsets: the same count and
    bounds; without the offsets (a factor that is not label runs) none is tried."""
    from sca.operators import FactoredOperator

    rng = np.random.default_rng(8)
    truth = planted_truth(1200, [1] * 40, rng)
    labels = planted_runs(truth, 60, 0.5, rng, dtype=np.uint8)
    S, P = _balanced(labels)
    null = noise_floor(S, 0)
    by_labels = TrialGroups(P).count(null)
    groups = np.arange(61) * 40
    H = np.zeros((1200, 60 * 40))
    H[np.arange(1200)[:, None], labels + groups[:-1]] = 1.0
    P_sparse = sca.balance(FactoredOperator(H, groups=groups)).P
    by_sparse = TrialGroups(P_sparse).count(null)
    assert by_labels is not None and by_sparse is not None
    assert by_sparse.count == by_labels.count == 40
    assert np.allclose(by_sparse.lower, by_labels.lower) and np.isclose(
        by_sparse.upper, by_labels.upper, rtol=1e-4
    )
    assert TrialGroups(sca.balance(FactoredOperator(H)).P).count(null) is None


@pytest.mark.slow
def test_runs_of_many_labels_are_counted_by_bounds_first(monkeypatch):
    """270 blocks of 12 and runs of 270 labels: the spectrum counts k by bounds
    before any eigenvalue (``many_labels``) and says so; the eigenvalues, where the
    bounds are not tried, give the same k; the iteration finds the blocks."""
    rng = np.random.default_rng(9)
    truth = planted_truth(3240, [1] * 270, rng)
    labels = planted_runs(truth, 30, 0.2, rng, dtype=np.uint16)
    _, spec, result, _ = sca.run_stages(sca.membership_operator(labels), {"seed": 0})
    assert spec.k == 270 and not spec.capped
    assert any("counted by bounds" in note for note in spec.notes), spec.notes
    assert adjusted_rand_score(truth, result.labels) > 0.99
    monkeypatch.setattr(sca.bounds, "MAX_PAIR_WORK", 0)
    P = sca.balance(sca.membership_operator(labels)).P
    by_eigenvalues = sca.spectrum(P)
    assert by_eigenvalues.k == 270 and not any("bounds" in n for n in by_eigenvalues.notes)
    assert by_eigenvalues.eigenvalues[269] >= spec.eigenvalues[269] - 1e-9
