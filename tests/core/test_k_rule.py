"""The default k rule against inputs with no, weak, many and very unequal clusters.

Each case is a row of the table that showed the earlier largest-gap default
confidently wrong; sizes are kept small enough for the suite to stay fast.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import adjusted_rand_score

import sca
from sca.planted import planted_runs, planted_truth
from tests.core.conftest import planted_similarity


def cluster_labels(runs, **options):
    """The whole pipeline on label runs with the default options (seed 0)."""
    return sca.cluster(labels=runs, options=options)


@pytest.mark.slow
def test_random_labels_have_no_cluster_structure():
    for seed, (n, r, k) in enumerate([(300, 50, 5), (1800, 100, 5), (500, 20, 3)]):
        runs = np.random.default_rng(seed).integers(0, k, (n, r))
        result = cluster_labels(runs)
        assert result["k"] == 1 and result["structure"] is False, (n, r, k, result["k_signal"])
        assert any("no cluster structure" in note for note in result["notes"])
        assert result["clusters"] == [list(range(n))]
        assert result["noise_floor"] > result["eigenvalues"][1]


@pytest.mark.parametrize("seed", range(4))
def test_weak_structure_never_gives_more_clusters_than_planted(seed):
    rng = np.random.default_rng(seed)
    truth = planted_truth(300, [1, 1, 1], rng)
    result = cluster_labels(planted_runs(truth, 5, 0.6, rng))
    assert result["k"] in (1, 3)
    # the zeros past rank(S) (15 clusters over 5 runs) are never read as a gap
    assert result["k"] < 11


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2))
def test_twenty_equal_blocks_are_found(seed):
    rng = np.random.default_rng(seed)
    truth = planted_truth(4000, [1] * 20, rng)
    result = cluster_labels(planted_runs(truth, 100, 0.5, rng), seed=seed)
    assert result["k"] == 20 and result["structure"] is True
    assert adjusted_rand_score(truth, result["labels"]) > 0.99


@pytest.mark.slow
def test_forty_blocks_grow_k_hat_past_its_start():
    rng = np.random.default_rng(0)
    truth = planted_truth(4000, [1] * 40, rng)
    S = sca.membership_operator(planted_runs(truth, 100, 0.5, rng))
    assert not S.full_spectrum_cheap  # 4000 clusters over the runs: no Gram shortcut
    spec = sca.spectrum(sca.balance(S).P)
    assert spec.k == 40 and spec.k_hat > sca.spectral.DEFAULT_K_HAT and not spec.capped
    assert spec.eigenvalues[-1] <= spec.floor
    capped = sca.spectrum(sca.balance(S).P, max_k_hat=20)
    assert capped.capped and capped.k == 20 and any("raise k_hat" in n for n in capped.notes)


@pytest.mark.slow
def test_small_blocks_beside_large_ones_are_found():
    rng = np.random.default_rng(0)
    truth = rng.permutation(np.repeat(np.arange(5), [2000, 500, 100, 30, 10]))
    result = cluster_labels(planted_runs(truth, 100, 0.3, rng))
    assert result["k"] == 5
    assert adjusted_rand_score(truth, result["labels"]) == 1.0
    assert sorted(map(len, result["clusters"])) == [10, 30, 100, 500, 2000]


@pytest.mark.parametrize("seed, sizes, noise", [(16, [1, 2, 4], 0.6), (7, [1, 1, 2, 4], 0.7)])
def test_noisy_runs_keep_the_finer_candidate_when_it_holds_the_planted_blocks(seed, sizes, noise):
    """Most of each run relabelled at random: the candidates are 2 and the
    planted k, and the choice among them keeps the planted blocks, not a merger
    of the smaller ones (a score of the worst-coupled pair alone chose k = 2)."""
    rng = np.random.default_rng(seed)
    truth = planted_truth(400, sizes, rng)
    result = sca.cluster(labels=planted_runs(truth, 20, noise, rng))
    assert result["k"] == len(sizes) and 2 in result["k_candidates"]
    assert adjusted_rand_score(truth, result["labels"]) > 0.6


def test_all_equal_consensus_is_one_cluster():
    result = sca.cluster(consensus=np.full((10, 10), 100.0))
    assert result["k"] == 1 and result["structure"] is False
    assert result["clusters"] == [list(range(10))]
    assert result["confidence"] == pytest.approx([1.0] * 10)


@pytest.mark.parametrize(
    "S, k",
    [
        ([[1.0, 0.5], [0.5, 1.0]], 1),
        ([[1.0, 0.0], [0.0, 1.0]], 2),
        ([[1.0, 0.9, 0.01], [0.9, 1.0, 0.01], [0.01, 0.01, 1.0]], 2),
        ([[1.0, 0.8, 0.7], [0.8, 1.0, 0.9], [0.7, 0.9, 1.0]], 1),
    ],
)
def test_two_and_three_elements_get_k_from_the_data(S, k):
    assert sca.cluster(consensus=np.array(S))["k"] == k


@pytest.mark.parametrize("n", [2, 3, 7])
def test_an_explicit_k_is_always_honoured(n):
    S = np.eye(n) + 0.5
    for k in range(1, n + 1):
        result = sca.cluster(consensus=S, options={"k": k, "split": "gaps"}) if k < n else None
        if result is not None:
            assert result["k"] == k
    # k = n: every element its own cluster, from the k-means split
    assert sca.cluster(consensus=np.eye(n) + 0.01, options={"k": n})["k"] == n


def test_float_labels_beyond_exact_integers_are_refused():
    runs = np.array([[0.0, 1e20], [1.0, 0.0], [1.0, 0.0]])
    with pytest.raises(sca.SCAError) as info:
        sca.membership_operator(runs)
    assert info.value.field == "labels" and "2^53" in str(info.value)
    with pytest.raises(sca.SCAError):
        sca.membership_operator(np.array([[0], [2**64 - 1]], dtype=np.uint64))


@pytest.mark.slow
def test_dense_and_sparse_similarities_use_a_shuffled_null():
    S, truth = planted_similarity(400, 4, 0)
    for form in (S, sp.csr_array(S * (S > 0.45))):
        result = sca.cluster(consensus=form)
        assert result["k"] == 4 and adjusted_rand_score(truth, result["labels"]) == 1.0
    noise = np.random.default_rng(1).random((400, 400))
    noise = (noise + noise.T) / 2
    np.fill_diagonal(noise, 1.0)
    assert sca.cluster(consensus=noise)["k"] == 1


def test_confidence_is_the_walk_staying_in_the_cluster(baseball):
    result = sca.cluster(consensus=baseball.S, options={"split": "gaps"})
    P = sca.balance(baseball).P.to_dense()
    labels = np.array(result["labels"])
    expected = [P[i, labels == labels[i]].sum() for i in range(6)]
    assert result["confidence"] == pytest.approx(expected, abs=1e-6)
    for c in range(result["k"]):
        members = labels == c
        mean = np.mean(np.array(expected)[members])
        assert result["cluster_confidence"][c] == pytest.approx(mean, abs=1e-6)
        inside = P[np.ix_(members, members)].sum()
        assert result["cluster_uncoupling"][c] == pytest.approx(
            2 * (members.sum() - inside) / 6, abs=1e-6
        )
    # the factored form agrees with the dense one on the same consensus
    rng = np.random.default_rng(0)
    truth = planted_truth(300, [1, 2, 3], rng)
    F = sca.balance(sca.membership_operator(planted_runs(truth, 20, 0.3, rng))).P
    D = sca.DenseOperator(F.to_dense())
    assert np.allclose(F.within_sums(truth), D.within_sums(truth), atol=1e-12)


def test_the_random_start_never_counts_toward_stable(baseball):
    P = sca.balance(baseball).P
    result = sca.iterate(P, 2, stable=1, split="gaps", trace=True)
    assert result.iterations >= 1


def test_a_coarser_level_is_kept_when_it_is_more_uncoupled(iris):
    """k-means runs at k = 3 and 4 on iris, given as label runs, leave five
    co-membership blocks above the permuted null; the species level (k = 3) is
    the most uncoupled candidate."""
    X, species = iris
    runs = sca.ensemble_labels(X, [{"algorithm": "kmeans", "k": [3, 4], "runs": 50}])
    result = sca.cluster(labels=runs)
    assert result["k_candidates"] == [3, 5] and result["k"] == 3
    assert result["k_scores"]["3"] > result["k_scores"]["5"]
    assert adjusted_rand_score(species, result["labels"]) > 0.7


def test_the_command_line_refuses_a_k_hat_its_rule_cannot_use(capsys):
    from sca.cli import main
    from tests.conftest import BASEBALL_CSV

    assert main(["cluster", "--consensus", str(BASEBALL_CSV), "--rule", "gap", "--k-hat", "2"]) != 0
    assert "options.k_hat" in capsys.readouterr().err


def test_the_identity_is_n_clusters_of_one():
    """A sparse identity of 10^5 elements end to end: every element is a
    component of its own, so n clusters, found without an n x n matrix (the
    diagnostics' block sums alone asked for 74.5 GiB)."""
    n = 100_000
    result = sca.cluster(consensus=sp.identity(n, format="csr"))
    assert result["k"] == n and result["structure"] is True
    assert np.array_equal(result["labels"], np.arange(n))
    assert result["uncoupling"] == {"S": 0.0, "P": 0.0}
