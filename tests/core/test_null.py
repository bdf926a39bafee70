"""The null reference of the k rule: null draws and the noise floor (sca.null)."""

import numpy as np
import pytest
import scipy.sparse as sp

import sca
import sca.operators.gram
import sca.operators.labels
from sca.null import ZERO, noise_floor, tracy_widom
from sca.planted import planted_runs, planted_truth
from tests.core.conftest import planted_similarity


def test_few_clusters_over_many_elements_have_the_margin_of_their_rank():
    """Random labels with K << n (20 runs of 5 labels: S has rank 100 at most)
    and a single null draw: the margin is the fluctuation of a rank-100 top
    eigenvalue, not of a full-rank one (with which this input gave k = 2)."""
    runs = np.random.default_rng(0).integers(0, 5, (70_000, 20))
    S = sca.membership_operator(runs)
    assert S.rank_bound == 100 and tracy_widom(S, draws=1) > 2 * S.n ** (-2 / 3)
    dense = sca.consensus_operator(np.eye(400) + 0.01)
    for draws in (1, 8):  # full rank: as before
        assert dense.rank_bound == 400
        assert tracy_widom(dense, draws) == pytest.approx(400 ** (-2 / 3))
    P = sca.balance(S).P
    spec = sca.spectrum(P)
    assert spec.k == 1 and spec.floor > spec.eigenvalues[1] > noise_floor(S).draws[0, 0]


def test_null_draws_keep_what_they_promise():
    rng = np.random.default_rng(0)
    runs = planted_runs(planted_truth(200, [1, 2], rng), 6, 0.2, rng)
    runs[::7, 2] = -1  # some elements left out of run 2
    S = sca.membership_operator(runs)
    null = S.null_draw(rng)
    # every run keeps its cluster sizes, every element its number of runs
    assert np.array_equal(
        np.sort(np.asarray(S.H.sum(axis=0))), np.sort(np.asarray(null.H.sum(axis=0)))
    )
    assert np.array_equal(np.diff(S.H.indptr), np.diff(null.H.indptr))
    dense, _ = planted_similarity(50, 2, 0)
    shuffled = sca.consensus_operator(dense).null_draw(rng).S
    assert np.allclose(shuffled, shuffled.T) and np.array_equal(np.diag(shuffled), np.diag(dense))
    iu = np.triu_indices(50, 1)
    assert np.array_equal(np.sort(shuffled[iu]), np.sort(dense[iu]))
    assert not np.array_equal(shuffled, dense)


def test_a_shuffled_null_moves_only_the_off_diagonal_entries():
    """The diagonal is kept and not moved as well: the identity's null is the
    identity (its diagonal used to be scattered over random pairs, a null with
    a structure of its own and a floor above 1)."""
    rng = np.random.default_rng(0)
    identity = sca.SparseOperator(sp.identity(2000, format="csr"))
    null = identity.null_draw(rng).S
    assert (null != sp.identity(2000, format="csr")).nnz == 0
    assert noise_floor(identity).floor == pytest.approx(ZERO)
    dense, _ = planted_similarity(200, 2, 0)
    S = sp.csr_array(dense * (dense > 0.45))
    shuffled = sca.SparseOperator(S).null_draw(rng).S
    assert np.array_equal(shuffled.diagonal(), S.diagonal())
    assert abs((shuffled.nnz - 200) / (S.nnz - 200) - 1) < 0.05  # a pair lost per collision


def test_a_rough_floor_brackets_the_exact_one_and_settles_only_a_sure_count(monkeypatch):
    """With the null's products dear (G's limits lowered), its bounds give floors at
    most the exact ones and a ceiling at least them, λ2's floor resolved; a count of
    eigenvalues the same at both ends is settled, one between them is not."""
    monkeypatch.setattr(sca.operators.gram, "GRAM_MAX_K", 64)
    monkeypatch.setattr(sca.operators.labels, "GRAM_MAX_K", 64)
    monkeypatch.setattr(sca.operators.labels, "GRAM_COUNTS_MAX_K", 64)
    rng = np.random.default_rng(5)
    S = sca.membership_operator(planted_runs(planted_truth(6000, [1] * 4, rng), 80, 0.6, rng))
    exact, rough = noise_floor(S), noise_floor(S, rough=True)
    assert exact.ceiling is None and rough.ceiling is not None
    assert np.all(rough.floors <= exact.floors + 1e-12)
    assert np.all(exact.floors <= rough.ceiling + 1e-12)
    assert rough.floor == pytest.approx(exact.floor, rel=1e-2)
    low, high = rough.floors[3], rough.ceiling[3]
    assert high > low
    sure = np.r_[1.0, 0.5, 0.4, 0.3, rough.floors[3:] / 2]
    assert rough.settles(sure) and rough.signal(sure) == exact.signal(sure) == 4
    doubtful = np.r_[1.0, 0.5, 0.4, 0.3, (low + high) / 2, rough.floors[4:] / 2]
    assert not rough.settles(doubtful)
    spec = sca.spectrum(sca.balance(S).P)
    assert spec.k == exact.signal(spec.eigenvalues) == 4
