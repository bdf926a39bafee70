"""The iteration stage (Sec. 3) and several starts (Sec. 4.2, Discussion)."""

import numpy as np
import pytest

import sca
from sca.iteration import canonical, random_start
from sca.planted import planted_runs, planted_truth


def test_gap_split_cuts_at_the_largest_gaps():
    x = np.array([0.1, 0.9, 0.12, 0.5, 0.52, 0.88])
    assert sca.gap_split(x, 3).tolist() == [0, 1, 0, 2, 2, 1]
    assert sca.gap_split(x, 1).tolist() == [0] * 6


def test_a_cut_at_a_zero_gap_is_no_clustering():
    assert sca.gap_split(np.array([0.2, 0.2, 0.2, 0.4]), 3) is None
    assert sca.gap_split(np.full(4, 0.25), 2) is None


def test_canonical_labels_follow_first_appearance():
    assert canonical(np.array([5, 5, 2, 9, 2])).tolist() == [0, 0, 1, 2, 1]


def test_random_start_is_a_probability_vector_away_from_uniform():
    x = random_start(50, np.random.default_rng(0), 1e-3)
    assert x.sum() == pytest.approx(1) and np.all(x >= 0)
    with pytest.raises(sca.SCAError, match="uniform"):
        random_start(2, np.random.default_rng(0), 10.0)


def test_iteration_cap_is_a_clear_error(baseball):
    P = sca.balance(baseball).P
    with pytest.raises(sca.IterationError, match="within 3 iterations") as info:
        sca.iterate(P, 2, split="gaps", stable=6, max_iterations=3)
    assert info.value.field == "options.max_iterations"


@pytest.mark.slow
@pytest.mark.parametrize("sizes", [[1] * 5, [1, 2, 3, 4, 5, 6]])
def test_default_configuration_recovers_planted_partitions(sizes):
    rng = np.random.default_rng(11)
    truth = planted_truth(3000, sizes, rng)
    P = sca.balance(sca.membership_operator(planted_runs(truth, 100, 0.5, rng))).P
    spec = sca.spectrum(P)
    assert spec.k == len(sizes)
    result = sca.iterate(P, spec.k, seed=1)
    assert sca.evaluate(result.labels, truth) == {"errors": 0, "ari": 1.0}


@pytest.fixture(scope="module")
def five_blocks():
    """P of 50 noisy runs over 400 elements in five planted blocks."""
    rng = np.random.default_rng(5)
    truth = planted_truth(400, [1, 1, 1, 1, 1], rng)
    return sca.balance(sca.membership_operator(planted_runs(truth, 50, 0.5, rng))).P


def test_several_starts_give_solutions_frequencies_and_membership(five_blocks):
    P = five_blocks
    result = sca.iterate(P, 5, seed=2, starts=8, split="gaps")
    freqs = [f for _, f in result.solutions]
    assert sum(freqs) == pytest.approx(1) and freqs == sorted(freqs, reverse=True)
    assert np.array_equal(result.labels, result.solutions[0][0])
    assert result.membership.shape == (400, 5)
    assert np.allclose(result.membership.sum(axis=1), 1)
    assert np.all(result.membership[np.arange(400), result.labels] >= freqs[0] - 1e-12)


def test_reconsensus_ends_with_one_solution(five_blocks):
    P = five_blocks
    single = sca.iterate(P, 5, seed=2, starts=8, split="gaps")
    assert len(single.solutions) > 1  # the gap split disagrees across starts here
    result = sca.iterate(P, 5, seed=2, starts=8, split="gaps", reconsensus=True)
    assert result.rounds >= 2 and len(result.solutions) == 1
    assert len(result.history) == result.rounds


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"k": 0}, "options.k"),
        ({"k": 7}, "options.k"),
        ({"starts": 0}, "options.starts"),
        ({"stable": 0}, "options.stable"),
        ({"max_iterations": 0}, "options.max_iterations"),
        ({"split": "median"}, "options.split"),
        ({"x0": [1, 2]}, "options.x0"),
    ],
)
def test_iteration_parameters_are_checked(baseball, kwargs, field):
    P = sca.balance(baseball).P
    args = {"k": 2, **kwargs}
    k = args.pop("k")
    with pytest.raises(sca.SCAError) as info:
        sca.iterate(P, k, **args)
    assert info.value.field == field


def test_same_seed_same_answer(baseball):
    P = sca.balance(baseball).P
    a = sca.iterate(P, 2, seed=4, starts=5, split="gaps")
    b = sca.iterate(P, 2, seed=4, starts=5, split="gaps")
    assert a.iterations == b.iterations and np.array_equal(a.labels, b.labels)


@pytest.mark.slow
@pytest.mark.parametrize("split", ["kmeans", "gaps"])
def test_iterates_on_k_vectors_are_those_on_n_vectors(split):
    """Once the Gram matrix of a factored P is at hand (the spectrum computed
    it), the iteration holds its iterates as K-vectors (Y = DH Z): the same
    iterates, clusters and steps as the products on n-vectors."""
    from sca.iteration import evolve

    rng = np.random.default_rng(5)
    truth = planted_truth(2000, [1, 2, 3, 4], rng)
    P = sca.balance(sca.membership_operator(planted_runs(truth, 20, 0.5, rng))).P
    k = sca.spectrum(P).k
    assert k == 4 and P.factor_gram() is not None  # K = 80 clusters, n = 2000
    block = 1 if split == "gaps" else k - 1
    X0 = rng.random((2000, 2 * block))
    # a long evolution: without the deflation, rounding drift along 1 would show
    on_k = evolve(P, k, X0, block, split, 40, 200, seed=1, trace=True)
    P._gram = None
    assert P.factor_gram() is None
    on_n = evolve(P, k, X0, block, split, 40, 200, seed=1, trace=True)
    assert on_k[1] == on_n[1] and on_k[1] > 1
    for a, b in zip(on_k[0], on_n[0]):
        assert np.array_equal(a, b)
    assert np.allclose(on_k[3], on_n[3], atol=1e-9)
    for a, b in zip(on_k[2], on_n[2]):
        assert np.array_equal(a["labels"], b["labels"])
        assert (a["x"] is None) == (b["x"] is None)
        assert a["x"] is None or np.allclose(a["x"], b["x"], rtol=1e-9, atol=1e-15)


def test_orthonormalisation_keeps_the_span_in_place():
    """Each block of an n-vector iterate is deflated and made an orthonormal basis
    of its span in place (Cholesky QR twice, Householder QR where a block is
    nearly rank-deficient), and the norms after deflation are returned."""
    from sca.iteration import _normalise

    rng = np.random.default_rng(3)
    for Z in (
        rng.standard_normal((400, 6)) * np.logspace(0, 5, 6),  # scaled, well within Cholesky
        np.repeat(rng.standard_normal((400, 3)), 2, axis=1),  # each block of rank 2: Householder
    ):
        deflated = Z - Z.mean(axis=0)
        Q = Z.copy()
        norms = _normalise(Q, 3)
        assert np.allclose(norms, np.linalg.norm(deflated, axis=0))
        for s in (0, 3):
            block, basis = deflated[:, s : s + 3], Q[:, s : s + 3]
            assert np.allclose(basis.T @ basis, np.eye(3), atol=1e-10)
            # the span's basis (deflated) where the block has full rank; a rank-2
            # block's third column is any direction orthogonal to the other two
            full = np.linalg.matrix_rank(block) == 3
            assert np.allclose(basis @ (basis.T @ block), block, atol=1e-8 * norms.max())
            assert not full or np.allclose(basis.mean(axis=0), 0.0, atol=1e-12)


def test_one_pass_of_cholesky_qr_only_where_it_leaves_a_basis(monkeypatch):
    """One pass of Cholesky QR where the block is well conditioned (its Gram
    matrix then computed once), two where one would leave the columns further
    than ORTHONORMAL_TOL from orthonormal: the result is a basis either way."""
    import sca.operators.threads
    from sca.cholesky_qr import ORTHONORMAL_TOL, orthonormal

    calls = []
    gram = sca.operators.threads.gram
    monkeypatch.setattr(sca.operators.threads, "gram", lambda Y: calls.append(1) or gram(Y))
    rng = np.random.default_rng(5)
    U, _ = np.linalg.qr(rng.standard_normal((3000, 8)))
    V, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    for spread, passes in ((10.0, 1), (1e6, 2)):  # the columns' condition number
        calls.clear()
        Y = U @ np.diag(np.logspace(0, -np.log10(spread), 8)) @ V
        orthonormal(Y)
        assert len(calls) == passes
        assert np.max(np.abs(Y.T @ Y - np.eye(8))) <= ORTHONORMAL_TOL


def test_kmeans_split_predicts_each_cores_rows(monkeypatch):
    """The k-means split assigns every row to the fitted model's nearest centre,
    each core predicting its own rows: scikit-learn's predict of all the rows."""
    import sca.operators.threads
    from sca.splits import KMeansSplit, canonical

    monkeypatch.setattr(sca.operators.threads, "THREADS", 2)
    monkeypatch.setattr(sca.operators.threads, "MIN_ROWS_PER_THREAD", 1)
    rng = np.random.default_rng(4)
    Y = rng.standard_normal((601, 3)) + np.repeat(np.eye(3) * 6, [200, 200, 201], axis=0)
    split, models = KMeansSplit(3, 0, 601), []
    fit = split.fit
    monkeypatch.setattr(split, "fit", lambda sample: models.append(fit(sample)) or models[-1])
    labels = split(Y)
    assert labels is not None and np.array_equal(labels, canonical(models[0].predict(Y)))
    assert len(sca.operators.threads.spans(601)) == 2


def test_the_random_start_is_clustered_only_for_a_trace(monkeypatch):
    """x_0's clustering never counts toward ``stable``: without a trace no k-means
    is fitted on the random start, and with one it is fitted by a copy of the
    split, so that the trace leaves the steps, clusters and iterates as they are."""
    from sca.iteration import evolve
    from sca.splits import KMeansSplit

    rng = np.random.default_rng(2)
    truth = planted_truth(600, [1, 1, 1], rng)
    P = sca.balance(sca.membership_operator(planted_runs(truth, 10, 0.4, rng))).P
    X0 = rng.random((600, 2))
    calls = []
    split = KMeansSplit.__call__
    monkeypatch.setattr(KMeansSplit, "__call__", lambda self, Y: calls.append(1) or split(self, Y))
    plain = evolve(P, 3, X0, 2, "kmeans", 6, 100, seed=3)
    assert len(calls) == plain[1]
    calls.clear()
    traced = evolve(P, 3, X0, 2, "kmeans", 6, 100, seed=3, trace=True)
    assert len(calls) == traced[1] + 1 and traced[2][0]["t"] == 0
    assert traced[1] == plain[1] and np.array_equal(traced[0][0], plain[0][0])
    assert np.array_equal(traced[3], plain[3])


def test_the_split_fits_its_centres_on_enough_rows_a_centre():
    """The k-means split's sample holds 4,096 rows, and at least ROWS_PER_CENTRE a
    centre beyond 204 clusters (500 planted blocks split on 4,096 rows, about eight
    a centre, scored an ARI of 0.97); all the rows where n is no more."""
    from sca.splits import KMeansSplit

    assert KMeansSplit(200, 0, 10**5).sample.size == KMeansSplit.SAMPLE == 4096
    many = KMeansSplit(500, 0, 10**5).sample
    assert many.size == 500 * KMeansSplit.ROWS_PER_CENTRE == 10_000
    assert np.unique(many).size == many.size and np.all(np.diff(many) > 0)
    assert KMeansSplit(500, 0, 9_000).sample == slice(None)
