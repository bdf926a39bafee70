"""Sinkhorn-Knopp balancing (Sec. 2.2) and the spectrum of P (Sec. 2.4)."""

import numpy as np
import pytest

import sca
from sca.planted import planted_runs, planted_truth


def test_balancing_gives_a_symmetric_doubly_stochastic_matrix():
    rng = np.random.default_rng(3)
    A = rng.random((40, 40))
    S = A + A.T + np.eye(40)
    balanced = sca.balance(sca.consensus_operator(S))
    P = balanced.P.to_dense()
    assert np.allclose(P, P.T)
    assert np.abs(P.sum(axis=0) - 1).max() <= 1e-12
    assert np.abs(P.sum(axis=1) - 1).max() <= 1e-12
    assert np.allclose(P, balanced.d[:, None] * S * balanced.d[None, :])


def test_non_convergence_is_an_error_carrying_the_partial_result(baseball):
    with pytest.raises(sca.BalancingError) as info:
        sca.balance(baseball, max_iter=3)
    partial = info.value.partial
    assert partial.iterations == 3 and not partial.converged
    assert 1e-12 < partial.residual < 1
    assert info.value.field == "options.max_iterations"


@pytest.mark.parametrize("kwargs", [{"tol": 0}, {"tol": -1.0}, {"max_iter": 0}])
def test_balancing_parameters_are_checked(baseball, kwargs):
    with pytest.raises(sca.SCAError):
        sca.balance(baseball, **kwargs)


def test_perron_cluster_is_the_largest_gap_with_ties_to_smallest_k():
    assert sca.perron_cluster([1.0, 0.9, 0.2, 0.1]) == 2
    assert sca.perron_cluster([1.0, 0.5, 0.0]) == 1  # tie: 0.5 and 0.5
    assert sca.perron_cluster([1.0, 0.2, 0.19, 0.0]) == 1  # gap after λ1 largest
    assert sca.largest_gap_k([1.0, 0.2, 0.19, 0.05]) == 3  # the gap rule skips λ1
    assert sca.largest_gap_k([1.0, 0.2, 0.19, 0.0]) == 2  # ... and never reads a gap into 0
    assert sca.largest_gap_k([1.0, 0.9, 0.5, 0.45, 0.0], min_k=2, max_k=3) == 2
    assert sca.largest_gap_k([1.0, 0.9, 0.5, 0.45, 0.0], min_k=3) == 3
    assert sca.largest_gap_k([1.0, 0.9, 0.5, 0.45, 0.1], min_k=3) == 4


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


def test_residual_stalled_at_rounding_level_counts_as_converged(baseball, monkeypatch):
    """Where rounding keeps the residual above tol, balancing stops once the
    residual stops falling below n * eps instead of spinning to the cap."""
    import sys

    module = sys.modules["sca.balance"]  # the package exports the function by that name
    tol = 1e-300  # unreachable in float64
    result = sca.balance(baseball, tol=tol, max_iter=500)
    assert result.converged and result.iterations < 100
    assert result.residual <= 6 * np.finfo(float).eps
    with pytest.raises(sca.BalancingError):
        monkeypatch.setattr(module, "_STALL_STEPS", 10**6)
        sca.balance(baseball, tol=tol, max_iter=200)


def test_over_relaxation_falls_back_when_it_overshoots(baseball, monkeypatch):
    import sys

    module = sys.modules["sca.balance"]
    plain = None
    for omega in (1.0, 1.4, 1.99):
        monkeypatch.setattr(module, "OVERRELAXATION", omega)
        result = sca.balance(baseball)
        assert result.converged and result.residual <= 1e-12
        assert np.allclose(result.P.to_dense().sum(axis=1), 1, atol=1e-12)
        if plain is None:
            plain = result
        assert np.allclose(result.d, plain.d, rtol=1e-9)  # the same unique scaling
    monkeypatch.setattr(module, "OVERRELAXATION", 1.4)
    assert sca.balance(baseball).iterations < plain.iterations
