"""The spectrum of P and the rules that read k off it (Sec. 2.4)."""

import time

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import adjusted_rand_score

import sca
from sca import components
from sca.components import DENSE_BLOCK_MAX
from sca.null import ZERO
from sca.planted import planted_runs, planted_truth
from sca.spectral import MAX_K_HAT


def test_perron_cluster_is_the_largest_gap_with_ties_to_smallest_k():
    assert sca.perron_cluster([1.0, 0.9, 0.2, 0.1]) == 2
    assert sca.perron_cluster([1.0, 0.5, 0.0]) == 1  # tie: 0.5 and 0.5
    assert sca.perron_cluster([1.0, 0.2, 0.19, 0.0]) == 1  # gap after λ1 largest
    assert sca.largest_gap_k([1.0, 0.2, 0.19, 0.05]) == 3  # the gap rule skips λ1
    assert sca.largest_gap_k([1.0, 0.2, 0.19, 0.0]) == 2  # ... and never reads a gap into 0
    assert sca.largest_gap_k([1.0, 0.9, 0.5, 0.45, 0.0], min_k=2, max_k=3) == 2
    assert sca.largest_gap_k([1.0, 0.9, 0.5, 0.45, 0.0], min_k=3) == 3
    assert sca.largest_gap_k([1.0, 0.9, 0.5, 0.45, 0.1], min_k=3) == 4


@pytest.mark.slow
def test_default_rule_finds_unequal_blocks_where_perron_says_one():
    rng = np.random.default_rng(0)
    truth = planted_truth(1500, [1, 2, 3, 4, 5, 6], rng)
    P = sca.balance(sca.membership_operator(planted_runs(truth, 60, 0.5, rng))).P
    values = sca.spectrum(P).eigenvalues
    assert sca.perron_cluster(values) == 1
    assert sca.spectrum(P).k == 6
    assert sca.spectrum(P, rule="perron").k == 1
    assert sca.spectrum(P, k=4).k == 4


def test_k_hat_limits_the_eigenvalues(baseball):
    P = sca.balance(baseball).P
    spec = sca.spectrum(P, k_hat=3)
    assert spec.eigenvalues.size == 3 and spec.k == 2
    for rule, least in (("gap", 3), ("perron", 2)):
        with pytest.raises(sca.SCAError) as info:
            sca.spectrum(P, k_hat=least - 1, rule=rule)
        assert info.value.field == "options.k_hat" and f"[{least}, n]" in str(info.value)
        assert sca.spectrum(P, k_hat=least, rule=rule).eigenvalues.size == least
    assert sca.spectrum(P, k_hat=1).k == 1  # the noise rule counts: one eigenvalue, one cluster
    with pytest.raises(sca.SCAError):
        sca.spectrum(P, rule="elbow")


def blocks_beside_singletons(singletons, sizes):
    """Sparse S: ``singletons`` elements alone, then an all-ones block of each size."""
    blocks = [sp.identity(singletons, format="csr")]
    blocks += [sp.csr_array(np.ones((size, size))) for size in sizes]
    return sca.SparseOperator(sp.block_diag(blocks, format="csr"))


@pytest.mark.parametrize("n", [2000, 100_000])
def test_the_identity_answers_from_its_components_in_seconds(n):
    """No eigenvalue is computed: each element is a component, an eigenvalue 1
    counted, not asked of ARPACK (which stalled at n = 2000 and wanted 74.5 GiB
    at n = 10^5); its null is the identity too, with no nontrivial eigenvalue."""
    start = time.perf_counter()
    spec = sca.spectrum(sca.balance(sca.SparseOperator(sp.identity(n, format="csr"))).P)
    assert time.perf_counter() - start < 10
    assert spec.k == spec.k_signal == n and not spec.capped and not spec.candidates
    assert spec.floor == pytest.approx(ZERO)
    assert spec.k_hat == MAX_K_HAT + 1 and np.all(spec.eigenvalues == 1.0)
    assert f"S has {n} connected components, {n} of them single elements" in spec.notes[0]


def test_blocks_beside_singletons_are_one_cluster_each():
    """1,900 elements alone and four blocks: k is the number of components
    (Theorem 2.8), and past their 1s the spectrum is the blocks' own."""
    S = blocks_beside_singletons(1900, [60, 25, 25, 25])
    P = sca.balance(S).P
    spec = sca.spectrum(P)
    assert spec.k == spec.k_signal == 1904 and not spec.capped
    assert "1904 connected components, 1900 of them single elements" in spec.notes[0]
    assert sca.iterate(P, spec.k).labels.max() == 1903


@pytest.mark.parametrize("dense_max", [DENSE_BLOCK_MAX, 50])
def test_the_deflated_spectrum_is_the_dense_one_past_the_components(monkeypatch, dense_max):
    """Past its components' 1s, P's spectrum is (I - Π) P (I - Π)'s on the larger
    components, formed densely or by ARPACK (forced with a small dense limit)."""
    monkeypatch.setattr(components, "DENSE_BLOCK_MAX", dense_max)
    rng = np.random.default_rng(0)
    S = blocks_beside_singletons(900, [80, 60, 40]).S.toarray()
    S[900:, 900:] *= rng.uniform(0.2, 1.0, (180, 180))
    S = (S + S.T) / 2
    P = sca.balance(sca.SparseOperator(sp.csr_array(S))).P
    parts = components.Components.of(P)
    assert parts.count == 903 and parts.singletons == 900 and parts.nontrivial == 177
    dense = np.sort(np.linalg.eigvalsh(P.to_dense()))[::-1]
    assert dense[:903] == pytest.approx(1.0) and dense[903] < 0.99
    found = components.nontrivial_eigenvalues(P, parts, 10)
    assert found == pytest.approx(dense[903:913], abs=1e-8)


def test_no_request_asks_for_more_eigenvalues_than_the_budget(monkeypatch):
    """A connected S past the dense size, with a budget of 30 eigenvalues at its
    order: k_hat = 100 computes 30 and says so."""
    n = 1500
    monkeypatch.setattr(components, "BASIS_BUDGET", 2 * n * 30)
    ring = sp.diags_array([1.0, 1.0, 1.0], offsets=[-1, 0, 1], shape=(n, n)).tolil()
    ring[0, n - 1] = ring[n - 1, 0] = 1.0
    P = sca.balance(sca.SparseOperator(sp.csr_array(ring))).P
    spec = sca.spectrum(P, k_hat=100, rule="perron")
    assert spec.k_hat == 30
    assert any("k_hat = 100 eigenvalues asked for, 30 computed" in note for note in spec.notes)


@pytest.mark.slow
def test_two_hundred_clusters_from_label_runs_match_the_dense_spectrum():
    """K = 2,200 clusters over 2,600 elements: G is neither small nor cheap to
    count, so Lanczos runs on G = (DH)^T (DH) applied (K-vectors) while k̂ is
    small beside K, and G's whole spectrum once Lanczos's basis would be a
    sizeable share of it; k̂ grows with a look past its last eigenvalue; the
    eigenvalues are P's, densely."""
    rng = np.random.default_rng(0)
    truth = planted_truth(2600, [1] * 200, rng)
    P = sca.balance(sca.membership_operator(planted_runs(truth, 11, 0.2, rng))).P
    assert P.n_clusters == 2200 and not P.gram_cheap and not P.full_spectrum_cheap
    spec = sca.spectrum(P)
    dense = np.sort(np.linalg.eigvalsh(P.to_dense()))[::-1]
    assert spec.k == 200 and not spec.capped
    assert spec.eigenvalues == pytest.approx(dense[: spec.k_hat], abs=1e-9)
    assert dense[199] > spec.floor > dense[200]
    found = sca.iterate(P, spec.k)
    assert adjusted_rand_score(truth, found.labels) > 0.99
