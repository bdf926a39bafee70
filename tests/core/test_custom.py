"""Custom clustering (Sec. 5.3) and raw-data neighbours (the paper's table "Custom
Cluster for leukemia Patient 2")."""

import time

import numpy as np
import pytest

import sca

from .conftest import BASEBALL_IDS, BASEBALL_S, BASEBALL_TEAMS, LEUKEMIA_PAPER

# The paper's table "Custom Cluster for leukemia Patient 2": the six nearest patients
# to Patient 2 (1-based) on raw values, and the custom cluster (data/leukemia/paper.json).
PAPER_NEIGHBOURS = LEUKEMIA_PAPER["neighbours"]
PAPER_CUSTOM = set(LEUKEMIA_PAPER["custom_cluster"])


def test_leukemia_neighbours_of_patient_2_match_paper(leukemia_X):
    euclid = sca.neighbours(leukemia_X, 1, "euclidean", limit=6)
    cosine = sca.neighbours(leukemia_X, 1, "cosine", limit=6)
    assert [i + 1 for i, *_ in euclid] == PAPER_NEIGHBOURS["euclidean"]
    assert [i + 1 for i, *_ in cosine] == PAPER_NEIGHBOURS["cosine"]
    # distances grow down the list, scores (similarities in [0, 1]) fall, for both methods
    for ranked in (euclid, cosine):
        assert [d for *_, d in ranked] == sorted(d for *_, d in ranked)
        assert [s for _, s, _ in ranked] == sorted((s for _, s, _ in ranked), reverse=True)
        assert all(0 <= s <= 1 for _, s, _ in ranked)


def test_every_neighbour_score_is_a_similarity_in_0_1(leukemia_X):
    X = leukemia_X
    far = sca.neighbours(X, 1, "euclidean")
    assert far[-1][1] == 0.0 and 0 < far[0][1] <= 1  # the farthest element scores 0
    d = np.linalg.norm(X - X[1], axis=1)
    assert far[0][2] == pytest.approx(np.sort(d)[1])
    cos = sca.neighbours(X, 1, "cosine", limit=3)
    assert all(s == pytest.approx(1 - d / 2) for _, s, d in cos)


def test_custom_cluster_within_bounds(baseball):
    P = sca.balance(baseball).P
    found = sca.custom_cluster(P, 0, 2, min_size=2, max_size=3)
    assert found.cluster == [0, 1, 2]
    assert [i for i, _ in found.ranked][:2] == [1, 2]
    scores = [s for _, s in found.ranked]
    assert scores == sorted(scores, reverse=True) and 0 <= min(scores) <= max(scores) <= 1
    assert found.iterations >= 1


def test_custom_cluster_by_id():
    P = sca.balance(sca.consensus_operator(BASEBALL_S)).P
    out = sca.custom_result(P, "Ruth", BASEBALL_IDS, k=2, min_size=2, max_size=3)
    assert out["element"] == "Ruth"
    assert sorted(out["cluster"]) == BASEBALL_TEAMS[1]
    assert out["ranked"][0]["id"] in ("Ott", "Mays")
    with pytest.raises(sca.SCAError) as info:
        sca.custom_result(P, "Bob", BASEBALL_IDS, k=2)
    assert info.value.field == "element"


def test_unreachable_size_is_a_clear_error(baseball):
    P = sca.balance(baseball).P
    with pytest.raises(sca.IterationError, match=r"size in \[5, 5\]"):
        sca.custom_cluster(P, 0, 2, min_size=5, max_size=5, max_iterations=50)


def test_deadline_stops_the_iteration_with_the_partial_result(baseball):
    """An unreachable size with a huge cap would iterate for seconds; the deadline
    ends it at once, saying how many steps fit and what the last cluster was."""
    P = sca.balance(baseball).P
    start = time.monotonic()
    with pytest.raises(
        sca.DeadlineExceeded,
        match=r"size in \[5, 5\] in the \d+ of "
        r"1000000 iterations",
    ) as info:
        sca.custom_cluster(
            P, 0, 2, min_size=5, max_size=5, max_iterations=1_000_000, deadline=start + 0.2
        )
    assert time.monotonic() - start < 0.5
    error = info.value
    assert isinstance(error, sca.IterationError) and error.field == "max_iterations"
    assert 0 < error.iterations < 1_000_000 and error.partial.shape == (6,)
    # An answer found before the deadline is unaffected by it.
    found = sca.custom_cluster(P, 0, 2, min_size=2, max_size=3, deadline=start + 60)
    assert found.cluster == [0, 1, 2]


def test_cap_before_deadline_is_the_plain_iteration_error(baseball):
    P = sca.balance(baseball).P
    with pytest.raises(sca.IterationError) as info:
        sca.custom_cluster(
            P, 0, 2, min_size=5, max_size=5, max_iterations=50, deadline=time.monotonic() + 60
        )
    assert not isinstance(info.value, sca.DeadlineExceeded)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"element": 6}, "element"),
        ({"element": -1}, "element"),
        ({"min_size": 4, "max_size": 3}, "max_size"),
        ({"min_size": 0}, "min_size"),
        ({"k": 7}, "k"),
    ],
)
def test_custom_parameters_are_checked(baseball, kwargs, field):
    P = sca.balance(baseball).P
    args = {"element": 0, "k": 2, "min_size": 1, "max_size": 3, **kwargs}
    with pytest.raises(sca.SCAError) as info:
        sca.custom_cluster(P, **args)
    assert info.value.field == field


@pytest.mark.slow
def test_custom_cluster_of_patient_2_on_an_nmf_k6_ensemble(leukemia_X):
    """Sec. 5.3: from Patient 2 on a k = 6 NMF consensus the paper finds
    {2, 4, 6, 15, 19, 29, 36}; ensembles are random, so check the cluster
    found on a seeded ensemble lies within the paper's and has the size asked."""
    labels = sca.ensemble_labels(leukemia_X, [{"algorithm": "nmf", "k": 6, "runs": 20}], seed=0)
    P = sca.balance(sca.membership_operator(labels)).P
    found = sca.custom_cluster(P, 1, sca.spectrum(P).k, min_size=5, max_size=8, max_iterations=200)
    patients = {i + 1 for i in found.cluster}
    assert 5 <= len(patients) <= 8 and found.cluster[0] == 1
    assert patients <= PAPER_CUSTOM
    # the ranking lists the cluster's members first, each part closest first
    size = len(found.cluster)
    assert [i for i, _ in found.ranked[: size - 1]] == found.cluster[1:]
    inside = [s for _, s in found.ranked[: size - 1]]
    outside = [s for _, s in found.ranked[size - 1 :]]
    assert inside == sorted(inside, reverse=True) and outside == sorted(outside, reverse=True)


def test_unmet_bounds_name_the_bound_and_the_sizes_reached(baseball):
    """The size bounds, not the step count, are what a caller should change: the
    error names the bound and the sizes the target's cluster took."""
    P = sca.balance(baseball).P
    with pytest.raises(sca.IterationError, match=r"never had more than 3 elements") as info:
        sca.custom_cluster(P, 0, 2, min_size=5, max_size=5, max_iterations=50)
    assert info.value.field == "min_size" and "element 0" not in str(info.value)
    with pytest.raises(sca.IterationError, match=r"never had fewer than 3 elements") as info:
        sca.custom_cluster(P, 0, 2, min_size=1, max_size=2, max_iterations=50)
    assert info.value.field == "max_size"


def test_a_min_size_above_n_is_named_even_with_max_size_left_at_n():
    P = sca.balance(sca.consensus_operator(BASEBALL_S)).P
    with pytest.raises(sca.SCAError) as raised:
        sca.custom_cluster(P, 0, k=2, min_size=7)
    assert raised.value.field == "min_size"
    assert "at most n = 6" in str(raised.value)
