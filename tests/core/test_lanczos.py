"""Block Lanczos on G (sca.operators.lanczos) and the block products it applies G with."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

import sca
import sca.bounds
import sca.components
import sca.operators.eigen
import sca.operators.gram
import sca.operators.kernels
import sca.operators.labels
import sca.operators.lanczos
from sca.operators import LabelOperator
from sca.operators.lanczos import BlockLanczos
from sca.planted import planted_runs, planted_truth


def _gram_of_runs(n=600, runs=12, blocks=6, seed=3):
    rng = np.random.default_rng(seed)
    labels = planted_runs(planted_truth(n, [1] * blocks, rng), runs, 0.4, rng)
    H = np.zeros((n, runs * blocks))
    H[np.arange(n)[:, None], labels + blocks * np.arange(runs)] = 1.0
    d = rng.random(n) + 0.5
    F = d[:, None] * H
    return F.T @ F


def test_block_lanczos_matches_the_dense_spectrum():
    """The largest eigenvalues of a Gram matrix of label runs (rank K - r + 1: a null
    space the Krylov space must not fill with spurious values) as eigvalsh gives them,
    and a larger count continues the same space rather than restarting it."""
    G = _gram_of_runs()
    exact = np.sort(np.linalg.eigvalsh(G))[::-1]
    start = np.random.default_rng(0).standard_normal((G.shape[0], 4))
    solver = BlockLanczos(lambda Z: G @ Z, G.shape[0], start)
    few = solver.eigenvalues(5, 1e-9)
    assert np.allclose(few, exact[:5], atol=1e-8 * exact[0])
    dim = solver.dim
    more = solver.eigenvalues(20, 1e-9)
    assert solver.dim >= dim
    assert np.allclose(more, exact[:20], atol=1e-8 * exact[0])


def test_block_lanczos_rough_below_the_floor():
    """Ritz values below the floor stop at the rough residual: no more work than
    converging the values above it, and still below the floor where the exact are."""
    G = _gram_of_runs(seed=5)
    exact = np.sort(np.linalg.eigvalsh(G))[::-1]
    floor = 0.5 * (exact[5] + exact[6])  # six above
    start = np.random.default_rng(1).standard_normal((G.shape[0], 4))
    values = BlockLanczos(lambda Z: G @ Z, G.shape[0], start).eigenvalues(8, 1e-12, floor)
    assert np.allclose(values[:6], exact[:6], atol=1e-10 * exact[0])
    assert np.all(values[6:] < floor) and np.all(exact[6:8] < floor)


def test_block_lanczos_at_its_budget_says_so():
    """A basis too small to resolve the values asked for returns them as they are,
    lower bounds that may undercount the eigenvalues above a floor, and says it fell
    short; the whole space does not."""
    G = _gram_of_runs(seed=5)
    exact = np.sort(np.linalg.eigvalsh(G))[::-1]
    floor = 0.5 * (exact[5] + exact[6])  # six above
    start = np.random.default_rng(1).standard_normal((G.shape[0], 4))
    small = BlockLanczos(lambda Z: G @ Z, G.shape[0], start, max_dim=12)
    values = small.eigenvalues(8, 1e-12, floor)
    assert small.short and np.sum(values > floor) < 6
    whole = BlockLanczos(lambda Z: G @ Z, G.shape[0], start)
    values = whole.eigenvalues(8, 1e-12, floor)
    assert not whole.short and np.sum(values > floor) == 6


def test_block_lanczos_whole_space():
    """A space as large as G itself (K = 20, blocks of 8) returns G's eigenvalues exactly,
    its last block cut short and its rank-deficient blocks refilled."""
    rng = np.random.default_rng(2)
    A = rng.standard_normal((20, 5))
    G = A @ A.T  # rank 5: the Krylov blocks lose rank at once
    exact = np.sort(np.linalg.eigvalsh(G))[::-1]
    solver = BlockLanczos(lambda Z: G @ Z, 20, rng.standard_normal((20, 8)))
    assert np.allclose(solver.eigenvalues(10, 1e-12), exact[:10], atol=1e-9)


def test_block_products_match_column_products(forms, monkeypatch):
    """Products of eight or more columns pass over the labels once for all of them
    (the compiled block kernels) and equal the sparse H's."""
    monkeypatch.setattr(sca.operators.kernels, "COMPILED_MIN_ROWS", 0)
    monkeypatch.setattr(sca.operators.labels, "BLOCK_MAX_READS", 100)  # runs of 3 labels
    _, ops = forms
    labels = LabelOperator(ops["labels"].codes, ops["labels"].spans)
    rng = np.random.default_rng(6)
    d = rng.random(300) + 0.5
    X = rng.random((300, 20))  # two blocks of columns, the second short
    for F, L in ((ops["factored"], labels), (ops["factored"].scaled(d), labels.scaled(d))):
        assert L._by_block(X)
        assert np.allclose(L.matmat(X), F.matmat(X), rtol=1e-12)
        Z = rng.random((L.n_clusters, 19))
        assert np.allclose(L.gram_product(Z), F.gram_product(Z), rtol=1e-12)


def test_many_clusters_through_the_krylov_space(monkeypatch):
    """Many planted clusters with G too large to form (its limits lowered so that
    K = 1,200 counts as large): the automatic k, the eigenvalues above the floor
    and the clustering are those of the dense path."""
    rng = np.random.default_rng(11)
    truth = planted_truth(4000, [1] * 60, rng)
    labels = planted_runs(truth, 20, 0.3, rng, dtype=np.uint8)
    dense_k, dense_result = _stages(labels)
    monkeypatch.setattr(sca.operators.gram, "GRAM_MAX_K", 64)
    monkeypatch.setattr(sca.operators.labels, "GRAM_MAX_K", 64)
    monkeypatch.setattr(sca.operators.labels, "GRAM_COUNTS_MAX_K", 64)
    monkeypatch.setattr(sca.operators.gram, "DENSE_GRAM_TIMES", 0)
    monkeypatch.setattr(sca.operators.kernels, "COMPILED_MIN_ROWS", 0)
    products = []
    original = LabelOperator._right
    monkeypatch.setattr(
        LabelOperator, "_right", lambda self, Z: products.append(Z.shape) or original(self, Z)
    )
    spec, result = _stages(labels)
    assert spec.k == dense_k.k == 60
    assert np.allclose(spec.eigenvalues[:60], dense_k.eigenvalues[:60], atol=1e-6)
    assert adjusted_rand_score(truth, result.labels) >= 0.99
    assert adjusted_rand_score(dense_result.labels, result.labels) >= 0.99
    assert products  # the Krylov space's blocks went through the labels


def _stages(labels):
    _, spec, result, _ = sca.run_stages(sca.membership_operator(labels), {"seed": 0})
    return spec, result


def test_ritz_pairs_resolve_the_largest_and_bound_the_rest():
    """Asked to resolve only the two largest, the same Krylov space stops sooner; its
    other Ritz values are lower bounds, at most those of the full request, and the two
    resolved lie within their residuals of their eigenvalues."""
    G = _gram_of_runs(n=3000, runs=40, blocks=6, seed=7)
    exact = np.sort(np.linalg.eigvalsh(G))[::-1]
    start = np.random.default_rng(3).standard_normal((G.shape[0], 1))
    rough = BlockLanczos(lambda Z: G @ Z, G.shape[0], start)
    theta, residual = rough.ritz_pairs(9, 1e-8, resolved=2)
    full = BlockLanczos(lambda Z: G @ Z, G.shape[0], start)
    values = full.eigenvalues(9, 1e-8)
    assert rough.dim < full.dim
    assert np.all(theta <= values + 1e-12 * exact[0])
    assert np.all(theta <= exact[:9] + 1e-12 * exact[0])
    assert np.all(residual[:2] <= 1e-8 * theta[0])
    assert np.all(np.abs(theta[:2] - exact[:2]) <= residual[:2] + 1e-12 * exact[0])


def test_eigenvalue_bounds_bracket_the_spectrum(monkeypatch):
    """Through the Krylov space (G's limits lowered), the bounds of P's largest
    eigenvalues bracket the dense ones; the largest two are resolved."""
    monkeypatch.setattr(sca.operators.gram, "GRAM_MAX_K", 64)
    monkeypatch.setattr(sca.operators.labels, "GRAM_MAX_K", 64)
    monkeypatch.setattr(sca.operators.labels, "GRAM_COUNTS_MAX_K", 64)
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 5, (1500, 60)).astype(np.uint8)  # K = 300
    P = sca.balance(sca.membership_operator(labels)).P
    exact = np.sort(np.linalg.eigvalsh(P.to_dense()))[::-1][:9]
    lower, upper = P.eigenvalue_bounds(9)
    assert P._lanczos is not None  # the Krylov space, not a dense solve
    slack = 1e-10
    assert np.all(lower <= exact + slack) and np.all(exact <= upper + slack)
    assert np.all(upper[:2] - lower[:2] <= 1e-5)
    assert np.any(upper[2:] - lower[2:] > 1e-5)  # the rest only bounded


def test_as_many_labels_as_elements_through_the_krylov_space_of_p(monkeypatch):
    """K = r k = n (100 runs of 12 labels, n = 1,200): no Gram matrix is smaller than P,
    so block Lanczos runs on P itself and keeps its space as k̂ grows (no ARPACK
    restart), with the eigenvalues, k and clustering of the dense spectrum; the
    stages drop the space once k is chosen."""
    rng = np.random.default_rng(12)
    truth = planted_truth(1200, [1] * 12, rng)
    labels = planted_runs(truth, 100, 0.3, rng, dtype=np.uint8)
    S = sca.membership_operator(labels)
    assert S.n_clusters >= S.n - 1
    dense_k, dense_result = _stages(labels)
    _as_if_large(monkeypatch)
    arpack = sca.operators.eigen.Eigenvalues._top_eigenvalues

    def rough_only(self, k_hat, tol=1e-10, few=False, floor=None):
        if not few:  # the null's edge is read roughly by ARPACK, as before
            pytest.fail("ARPACK on P where its Krylov space fits")
        return arpack(self, k_hat, tol, few, floor)

    monkeypatch.setattr(sca.operators.eigen.Eigenvalues, "_top_eigenvalues", rough_only)
    P = sca.balance(sca.membership_operator(labels)).P
    exact = np.sort(np.linalg.eigvalsh(P.to_dense()))[::-1]
    few = P.eigenvalues(5)
    dim = P._p_lanczos.dim
    more = P.eigenvalues(30)
    assert P._p_lanczos.dim >= dim  # the same space, continued
    assert np.allclose(few, exact[:5], atol=1e-6)
    assert np.allclose(more, exact[:30], atol=1e-6)
    balanced, spec, result, _ = sca.run_stages(sca.membership_operator(labels), {"seed": 0})
    assert balanced.P._p_lanczos is None  # its basis released once k was chosen
    assert spec.k == dense_k.k == 12
    assert np.allclose(spec.eigenvalues[:12], dense_k.eigenvalues[:12], atol=1e-6)
    assert adjusted_rand_score(dense_result.labels, result.labels) >= 0.99


def test_krylov_space_of_p_beyond_its_budget_falls_back_to_arpack(monkeypatch):
    """Where k̂ eigenvalues would outgrow the basis budget, P's spectrum comes from
    ARPACK as before, with the same values."""
    rng = np.random.default_rng(13)
    labels = planted_runs(planted_truth(1200, [1] * 12, rng), 100, 0.3, rng, dtype=np.uint8)
    _as_if_large(monkeypatch)
    P = sca.balance(sca.membership_operator(labels)).P
    exact = np.sort(np.linalg.eigvalsh(P.to_dense()))[::-1]
    monkeypatch.setattr(sca.operators.lanczos, "BASIS_BYTES", 8 * 1200 * 30)
    assert np.allclose(P.eigenvalues(20), exact[:20], atol=1e-8)
    assert P._p_lanczos.dim == 0  # made, found too small, never extended


def test_a_spectrum_its_basis_budget_cut_short_says_so_or_counts_by_bounds(monkeypatch):
    """40 blocks with as many labels as elements: where P's Krylov basis holds 60
    vectors, the values past the first fifty-odd come back unresolved, lower bounds
    that count too few eigenvalues above the floor.  The count is then settled by
    bounds (:mod:`sca.bounds`): all 40, said so; where the bounds are not tried, the
    spectrum says there may be more clusters (``capped``) rather than give its k as
    found.  Within the default budget: all 40, and neither note."""
    rng = np.random.default_rng(12)
    truth = planted_truth(1200, [1] * 40, rng)
    labels = planted_runs(truth, 100, 0.5, rng, dtype=np.uint8)
    _as_if_large(monkeypatch)
    spec, _ = _stages(labels)
    assert spec.k == 40 and not spec.capped
    assert not any("memory budget" in note or "bounds" in note for note in spec.notes)
    monkeypatch.setattr(sca.operators.lanczos, "BASIS_BYTES", 8 * 1200 * 60)
    spec, result = _stages(labels)
    assert spec.k == 40 and not spec.capped
    assert any("counted by bounds" in note for note in spec.notes), spec.notes
    assert adjusted_rand_score(truth, result.labels) > 0.99
    monkeypatch.setattr(sca.bounds, "MAX_PAIR_WORK", 0)
    spec, _ = _stages(labels)
    assert spec.k < 40 and spec.capped
    assert any("memory budget ran out" in note for note in spec.notes), spec.notes


def _as_if_large(monkeypatch):
    """The limits lowered so that n = 1,200 and K = 1,200 count as large: neither P
    nor G solved densely, G not formed."""
    monkeypatch.setattr(sca.operators.eigen, "DENSE_SPECTRUM_MAX_N", 100)
    monkeypatch.setattr(sca.operators.gram, "DENSE_SPECTRUM_MAX_N", 100)
    monkeypatch.setattr(sca.operators.gram, "GRAM_MAX_K", 64)
    monkeypatch.setattr(sca.operators.labels, "GRAM_MAX_K", 64)
    monkeypatch.setattr(sca.operators.labels, "GRAM_COUNTS_MAX_K", 64)
    monkeypatch.setattr(sca.operators.gram, "DENSE_GRAM_TIMES", 0)


def test_k_hat_grows_as_far_as_the_krylov_space_of_g_holds(monkeypatch):
    """With ``eigsh``'s budget at P's order too small for the 60 planted clusters (30
    eigenvalues), k̂ still grows to them where G's kept Krylov space holds them: the
    cap is the solver's that runs."""
    rng = np.random.default_rng(11)
    truth = planted_truth(4000, [1] * 60, rng)
    labels = planted_runs(truth, 20, 0.3, rng, dtype=np.uint8)
    monkeypatch.setattr(sca.components, "BASIS_BUDGET", 2 * 4000 * 30)
    _as_if_large(monkeypatch)
    monkeypatch.setattr(sca.operators.kernels, "COMPILED_MIN_ROWS", 0)
    P = sca.balance(sca.membership_operator(labels)).P
    assert sca.components.affordable(P.n) == 30 < P.eigenvalue_budget
    spec, result = _stages(labels)
    assert spec.k == 60 and not spec.capped
    assert adjusted_rand_score(truth, result.labels) >= 0.99
