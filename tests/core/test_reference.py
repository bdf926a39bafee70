"""Raw data's k against reference data run through the same ensemble (sca.reference).

Small versions of the accuracy script's raw-data cases (scripts/accuracy.py
--part raw): data without clusters must give k = 1, many groups must all
show, very unequal groups must not be cut into pieces.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

import sca
from sca.reference import (
    DRAWS,
    FIRST_DRAWS,
    MARGIN_Z,
    MAX_DRAWS,
    in_doubt,
    reference_data,
    reference_k,
    reference_spectra,
    settled,
)


def _blobs(sizes, d, seed, spread=12.0):
    """Gaussian groups of the given sizes, their centres far apart (unit variance)."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-spread, spread, (len(sizes), d))
    while (
        min(np.linalg.norm(a - b) for i, a in enumerate(centres) for b in centres[i + 1 :]) < 8
    ):  # redraw until every pair is clearly apart
        centres = rng.uniform(-spread, spread, (len(sizes), d))
    X = np.vstack([rng.standard_normal((s, d)) + c for s, c in zip(sizes, centres)])
    return X, np.repeat(np.arange(len(sizes)), sizes)


NO_STRUCTURE = {
    "uniform 2-D": lambda rng: rng.uniform(size=(300, 2)),
    # k-means cuts a uniform cube's 2^5 corners alike in every run: no groups all the same
    "uniform 5-D cube": lambda rng: rng.uniform(size=(10_000, 5)),
    "Gaussian 10-D": lambda rng: rng.standard_normal((300, 10)),
    "Gaussian 100 x 500": lambda rng: rng.standard_normal((100, 500)),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(NO_STRUCTURE))
def test_data_without_clusters_is_one_cluster(name):
    X = NO_STRUCTURE[name](np.random.default_rng(0))
    result = sca.cluster(data=X)
    assert result["k"] == 1
    assert result["structure"] is False
    assert "no cluster structure" in " ".join(result["notes"])


@pytest.mark.slow
def test_expression_with_gene_modules_but_no_groups_is_one_cluster(accuracy_cases):
    """Genes that move together are not groups of patients: the references keep
    the columns' correlations, so k = 1 (a null that permutes each column
    alone would see structure here)."""
    result = sca.cluster(data=accuracy_cases.gene_modules(seed=0))
    assert result["k"] == 1
    assert result["structure"] is False


@pytest.mark.slow
def test_groups_of_patients_show_in_expression_shaped_data(accuracy_cases):
    """Three groups of 20 rows over 2,000 lognormal genes, 60 marker genes each."""
    X, truth = accuracy_cases.expression(seed=0)
    result = sca.cluster(data=X)
    assert result["k"] == 3
    assert adjusted_rand_score(truth, result["labels"]) == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("groups", [2, 5, 12])
def test_planted_groups_are_all_found(groups):
    X, truth = _blobs([60] * groups, d=10, seed=groups)
    result = sca.cluster(data=X)
    assert result["k"] == groups
    assert adjusted_rand_score(truth, result["labels"]) == 1.0


@pytest.mark.slow
def test_twenty_groups_show_through_the_coarse_runs():
    X, truth = make_blobs(1000, 20, centers=20, random_state=0)
    result = sca.cluster(data=X)
    assert result["k"] == 20
    assert adjusted_rand_score(truth, result["labels"]) > 0.99


@pytest.mark.slow
def test_very_unequal_groups_are_not_cut_into_pieces():
    """Small groups may be merged (the ensemble's cells are spent on the large
    one), but no group is ever cut into pieces."""
    X, truth = _blobs([400, 120, 40, 15], d=2, seed=3)
    labels = np.array(sca.cluster(data=X)["labels"])
    for group in range(4):
        assert np.unique(labels[truth == group]).size == 1


def test_reference_data_keep_the_spread_and_lose_the_groups():
    X, _ = _blobs([200, 200], d=3, seed=1)
    R = reference_data(X, np.random.default_rng(0))
    assert R.shape == X.shape
    np.testing.assert_allclose(np.cov(R.T), np.cov(X.T), rtol=0.25, atol=0.5)
    # two far-apart groups along one axis are bimodal; the reference is not
    along = (X - X.mean(0)) @ np.linalg.svd(X - X.mean(0), full_matrices=False)[2][0]
    ref_along = (R - R.mean(0)) @ np.linalg.svd(R - R.mean(0), full_matrices=False)[2][0]
    share_near_centre = lambda v: np.mean(np.abs(v) < 0.5 * v.std())  # noqa: E731
    assert share_near_centre(along) < 0.05 < 0.2 < share_near_centre(ref_along)


def test_the_rule_counts_a_clear_cliff_and_nothing_in_a_smooth_spectrum():
    smooth = np.array([1.0, 0.85, 0.7, 0.58, 0.48, 0.4, 0.33, 0.27, 0.22, 0.18])
    references = np.array([smooth * (1 + 0.01 * i) for i in (-1, 0, 1, 2)]).clip(max=1)
    assert reference_k(smooth, references).k == 1
    three = np.array([1.0, 0.99, 0.98, 0.3, 0.25, 0.2, 0.16, 0.13, 0.1, 0.08])
    choice = reference_k(three, references)
    assert (choice.k, choice.k_signal) == (3, 3) and choice.z > 3


def test_a_clear_cut_past_the_margin_counts_when_the_eigenvalues_before_it_stand_above():
    smooth = np.array([1.0, 0.85, 0.7, 0.58, 0.48, 0.4, 0.33, 0.27, 0.22, 0.18])
    references = np.array([smooth * (1 + 0.01 * i) for i in (-1, 0, 1, 2)]).clip(max=1)
    # λ4 above the references' mean, short of the margin; λ5 above the mean; a cliff after λ5
    five = smooth * np.array([1, 1.2, 1.2, 1.01, 1.012, 0.5, 0.5, 0.5, 0.5, 0.5])
    choice = reference_k(five, references)
    assert (choice.k, choice.k_signal) == (5, 3) and choice.z >= 5
    # the same eigenvalues with λ4 below the references' mean: the cut stays within reach
    four_low = five * np.array([1, 1, 1, 0.97, 1, 1, 1, 1, 1, 1])
    assert reference_k(four_low, references).k <= 3


def test_an_explicit_k_or_another_rule_skips_the_reference():
    X = np.random.default_rng(0).uniform(size=(120, 2))
    assert sca.cluster(data=X, options={"k": 3})["k"] == 3
    assert sca.cluster(data=X, options={"rule": "gap"})["rule"] == "gap"


def test_the_estimator_and_cluster_agree_on_raw_data():
    X, _ = _blobs([50, 50, 50], d=4, seed=7)
    model = sca.StochasticClustering(random_state=3).fit(X)
    result = sca.cluster(data=X, options={"seed": 3})
    assert model.n_clusters_ == result["k"] == 3
    np.testing.assert_array_equal(model.labels_, result["labels"])
    assert model.notes_ == result["notes"]


def test_the_first_references_settle_only_a_clear_structure():
    three = np.array([1.0, 0.99, 0.98, 0.3, 0.25, 0.2, 0.16, 0.13, 0.1, 0.08])
    smooth = np.array([1.0, 0.85, 0.7, 0.58, 0.48, 0.4, 0.33, 0.27, 0.22, 0.18])
    first = np.array([smooth * (1 + 0.01 * i) for i in (0, 1)]).clip(max=1)
    assert settled(three, first)
    assert not settled(smooth, first)  # k = 1: decided against every reference
    # λ3 hardly above the references: the cut at 3 is in doubt
    assert not settled(np.array([1.0, 0.99, 0.72, *three[3:]]), first)


@pytest.mark.parametrize(("groups", "early"), [(0, False), (5, True)])
def test_references_stop_early_only_when_k_is_settled(groups, early):
    X = (
        _blobs([100] * groups, d=6, seed=3)[0]
        if groups
        else NO_STRUCTURE["Gaussian 10-D"](np.random.default_rng(3))
    )
    ensemble = sca.ensemble_spec.default_ensemble(X.shape[0])
    P = sca.balance(sca.membership_operator(sca.ensemble_labels(X, ensemble))).P
    every = reference_spectra(X, ensemble, seed=2).spectra
    spectra = reference_spectra(
        X, ensemble, seed=2, eigenvalues=lambda count: P.eigenvalues(count, few=True)
    ).spectra
    assert spectra.shape[0] == (FIRST_DRAWS if early else DRAWS)
    # the first references are the first of all of them, and give the same k
    np.testing.assert_array_equal(spectra, every[: spectra.shape[0]])
    values = P.eigenvalues(every.shape[1], few=True)
    assert reference_k(values, spectra).k == reference_k(values, every).k


def _at_margin(references, z):
    """A spectrum whose λ2 stands ``z`` of the references' standard deviations above
    their mean (log scale) and whose later eigenvalues are the references' least."""
    logs = np.log(references)
    values = np.exp(logs.mean(axis=0) + z * logs.std(axis=0, ddof=1))
    values[0], values[2:] = 1.0, references[:, 2:].min(axis=0)
    return values


def test_structure_is_in_doubt_only_with_lambda2_near_the_margin():
    rng = np.random.default_rng(0)
    many = np.sort(rng.uniform(0.05, 0.9, (MAX_DRAWS, 12)), axis=1)[:, ::-1]
    many[:, 0] = 1.0
    references = many[:DRAWS]
    assert in_doubt(_at_margin(references, MARGIN_Z + 0.1), references)
    assert in_doubt(_at_margin(references, MARGIN_Z - 0.1), references)
    assert not in_doubt(_at_margin(references, MARGIN_Z + 3), references)
    assert not in_doubt(_at_margin(references, 0.0), references)
    # λ2 clear of the margin, λ3 on it: the cut is read from the drops, not in doubt
    clear = _at_margin(references, MARGIN_Z + 3)
    clear[2] = _at_margin(references[:, [0, 2]], MARGIN_Z)[1]
    assert not in_doubt(clear, references)
    # the more references, the better the margin is known: the band narrows
    assert in_doubt(_at_margin(many[:2], MARGIN_Z + 0.8), many[:2])
    assert not in_doubt(_at_margin(many, MARGIN_Z + 0.8), many)


def test_references_are_drawn_again_when_the_first_leave_k_in_doubt():
    X = NO_STRUCTURE["Gaussian 10-D"](np.random.default_rng(4))
    ensemble = sca.ensemble_spec.default_ensemble(X.shape[0])
    first = reference_spectra(X, ensemble, seed=1).spectra
    doubtful = _at_margin(first, MARGIN_Z)
    spectra = reference_spectra(
        X, ensemble, seed=1, eigenvalues=lambda count: doubtful[:count]
    ).spectra
    assert spectra.shape[0] == MAX_DRAWS
    np.testing.assert_array_equal(spectra[:DRAWS], first)  # the first as when alone
    assert not np.array_equal(spectra[DRAWS:], first)
    clear = _at_margin(first, 0.0)
    spectra = reference_spectra(X, ensemble, seed=1, eigenvalues=lambda count: clear[:count])
    np.testing.assert_array_equal(spectra.spectra, first)
