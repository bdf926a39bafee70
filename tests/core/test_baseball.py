"""The paper's small example (Sec. 3.1), reproduced exactly."""

import numpy as np
import pytest

import sca

from .conftest import BASEBALL_IDS, BASEBALL_S

# The paper's P to four places, with P(Ruth, Cobb) = 0.0082 by symmetry
# (the paper prints 0.01082 there, while P(Cobb, Ruth) = 0.0082).
PAPER_P = np.array([
    [0.4131, 0.2935, 0.2786, 0.0075, 0.0, 0.0075],
    [0.2935, 0.4644, 0.2023, 0.0040, 0.0082, 0.0277],
    [0.2786, 0.2023, 0.3525, 0.0517, 0.0323, 0.0826],
    [0.0075, 0.0040, 0.0517, 0.3374, 0.3233, 0.2761],
    [0.0, 0.0082, 0.0323, 0.3233, 0.3660, 0.2701],
    [0.0075, 0.0277, 0.0826, 0.2761, 0.2701, 0.3361],
])
PAPER_EIGENVALUES = [1.0000, 0.8670, 0.2078, 0.1095, 0.0598, 0.0254]
# Table 3.1: x_t for t = 0..7 from the paper's random x_0.
PAPER_TRACE = np.array([
    [0.2334, 0.2595, 0.0364, 0.2617, 0.1812, 0.0279],
    [0.1848, 0.1997, 0.1520, 0.1592, 0.1618, 0.1425],
    [0.1795, 0.1836, 0.1707, 0.1554, 0.1557, 0.1550],
    [0.1779, 0.1787, 0.1732, 0.1565, 0.1561, 0.1576],
    [0.1765, 0.1765, 0.1729, 0.1578, 0.1574, 0.1589],
    [0.1752, 0.1751, 0.1722, 0.1590, 0.1586, 0.1600],
    [0.1741, 0.1739, 0.1715, 0.1600, 0.1597, 0.1609],
    [0.1731, 0.1729, 0.1709, 0.1609, 0.1606, 0.1616],
])
PAPER_CLUSTERS = [
    [["Rose", "Cobb", "Ott", "Ruth"], ["Fisk", "Mays"]],
    [["Rose", "Cobb"], ["Fisk", "Ott", "Ruth", "Mays"]],
] + [[["Rose", "Cobb", "Fisk"], ["Ott", "Ruth", "Mays"]]] * 6


def test_balanced_matrix_matches_paper_to_four_places(baseball):
    balanced = sca.balance(baseball)
    P = balanced.P.to_dense()
    assert np.array_equal(np.round(P, 4), PAPER_P)
    assert balanced.converged and balanced.residual <= 1e-12
    assert np.allclose(P.sum(axis=0), 1, atol=1e-12) and np.allclose(P.sum(axis=1), 1, atol=1e-12)
    assert np.allclose(P, P.T)


def test_eigenvalues_and_k_match_paper(baseball):
    P = sca.balance(baseball).P
    spec = sca.spectrum(P, rule="perron")
    assert np.array_equal(np.round(spec.eigenvalues, 4), PAPER_EIGENVALUES)
    assert spec.k == 2 and sca.perron_cluster(spec.eigenvalues) == 2
    assert sca.spectrum(P).k == 2
    assert spec.lambda2 == pytest.approx(0.8670, abs=5e-5)
    assert spec.gap == pytest.approx(0.8670 - 0.2078, abs=1e-4)


def test_trace_from_papers_start_matches_table(baseball):
    P = sca.balance(baseball).P
    result = sca.iterate(P, 2, split="gaps", trace=True, x0=PAPER_TRACE[0], stable=6)
    xs = np.array([step["x"] for step in result.trace])
    # The printed x_0 is rounded to four places (it sums to 1.0001), so later
    # rows can differ by one unit in the fourth place.
    assert xs.shape == PAPER_TRACE.shape
    assert np.abs(xs - PAPER_TRACE).max() <= 1e-4
    clusters = [[[BASEBALL_IDS[i] for i in np.flatnonzero(step["labels"] == c)]
                 for c in range(step["labels"].max() + 1)] for step in result.trace]
    assert [sorted(map(sorted, c)) for c in clusters] == \
        [sorted(map(sorted, c)) for c in PAPER_CLUSTERS]
    # Identical from t = 2 on: with stable = 6 the answer is fixed at t = 7.
    assert result.iterations == 7
    assert result.labels.tolist() == [0, 0, 0, 1, 1, 1]


def test_cluster_result_speaks_in_ids():
    out = sca.cluster(consensus=BASEBALL_S, ids=BASEBALL_IDS,
                      options={"split": "gaps", "rule": "perron"})
    assert out["k"] == 2
    assert out["clusters"] == [["Rose", "Cobb", "Fisk"], ["Ott", "Ruth", "Mays"]]
    assert out["labels"] == [0, 0, 0, 1, 1, 1]
    assert out["eigenvalues"] == sorted(out["eigenvalues"], reverse=True)
    assert set(out["timings"]) >= {"balancing", "spectral", "iteration"}


def test_clustering_survives_hundreds_of_steps(baseball):
    """x_t - uniform falls below rounding after ~250 steps (0.867^t); the
    deflated iteration keeps the clustering, as the paper saw up to t = 1000."""
    P = sca.balance(baseball).P
    result = sca.iterate(P, 2, split="gaps", stable=990, max_iterations=1000, x0=PAPER_TRACE[0])
    assert result.labels.tolist() == [0, 0, 0, 1, 1, 1]
    assert result.iterations == 991  # identical at every step from t = 2
