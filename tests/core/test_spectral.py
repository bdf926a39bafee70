"""The spectrum of P and the rules that read k off it (Sec. 2.4)."""

import numpy as np
import pytest

import sca
from sca.planted import planted_runs, planted_truth


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
