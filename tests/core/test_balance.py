"""Sinkhorn-Knopp balancing (Sec. 2.2)."""

import numpy as np
import pytest

import sca


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
