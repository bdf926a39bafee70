"""Each bad input gives a clear SCAError naming the field."""

import numpy as np
import pytest
import scipy.sparse as sp

import sca
from sca.inputs import SIMILARITIES
from sca.io import read_matrix
from sca.options import INPUT_NAMES
from sca.pipeline import build_operator

from .conftest import BASEBALL_S

GOOD = BASEBALL_S


@pytest.mark.parametrize(
    "S, words",
    [
        (np.ones((2, 3)), "square"),
        (np.ones((1, 1)), "at least 2"),
        (np.zeros((0, 0)), "at least 2"),
        (np.array([[1.0, np.nan], [np.nan, 1.0]]), "NaN or infinite"),
        (np.array([[1.0, np.inf], [np.inf, 1.0]]), "NaN or infinite"),
        (np.array([[1.0, -np.inf], [-np.inf, 1.0]]), "NaN or infinite"),
        (np.array([[1.0, -1.0], [-1.0, 1.0]]), "negative"),
        (np.array([[1.0, 0.5], [0.4, 1.0]]), "not symmetric"),
        (np.array([[1.0, 0.5], [0.5, 0.0]]), "positive diagonal"),
        (np.array([["a", "b"], ["c", "d"]]), "numeric"),
        (np.ones(4), "square"),
    ],
)
def test_bad_consensus(S, words):
    with pytest.raises(sca.SCAError, match=words) as info:
        sca.consensus_operator(S)
    assert info.value.field == "consensus"


def test_bad_sparse_consensus():
    with pytest.raises(sca.SCAError, match="not symmetric"):
        sca.consensus_operator(sp.csr_array(np.array([[1.0, 2.0], [0.0, 1.0]])))
    with pytest.raises(sca.SCAError, match="positive diagonal"):
        sca.consensus_operator(sp.csr_array(np.array([[1.0, 1.0], [1.0, 0.0]])))


def test_symmetry_within_tolerance_is_accepted():
    S = GOOD.copy()
    S[0, 1] += 1e-12
    op = sca.consensus_operator(S)
    assert np.array_equal(op.S, op.S.T)


@pytest.mark.parametrize(
    "labels, words",
    [
        (np.array([[0.5, 1], [1, 0]]), "integers"),
        (np.array([["a"], ["b"]]), "integers"),
        (np.array([[0]]), "n >= 2"),
        (np.array([[0, -1], [-1, -1], [1, 0]]), "element 1 is in no run"),
    ],
)
def test_bad_labels(labels, words):
    with pytest.raises(sca.SCAError, match=words) as info:
        sca.membership_operator(labels)
    assert info.value.field == "labels"


def test_labels_need_not_be_contiguous_and_may_skip_elements():
    H = sca.membership_matrix(np.array([[10, 7], [10, -1], [42, 7]]))
    assert H.shape == (3, 3)
    assert H.toarray().tolist() == [[1, 0, 1], [1, 0, 0], [0, 1, 1]]


@pytest.mark.parametrize(
    "spec, field",
    [
        ([], "ensemble"),
        ([{"algorithm": "dbscan", "k": 2, "runs": 3}], "ensemble[0].algorithm"),
        ([{"algorithm": "kmeans", "k": 0, "runs": 3}], "ensemble[0].k"),
        ([{"algorithm": "kmeans", "k": [2, "x"], "runs": 3}], "ensemble[0].k"),
        ([{"algorithm": "kmeans", "k": 2, "runs": 0}], "ensemble[0].runs"),
        ([{"algorithm": "kmeans", "k": 2, "runs": 1, "extra": 1}], "ensemble[0]"),
    ],
)
def test_bad_ensemble_spec(spec, field):
    with pytest.raises(sca.SCAError) as info:
        sca.ensemble_plan(spec)
    assert info.value.field == field


def test_nmf_on_negative_data_is_refused():
    X = np.array([[1.0, 2.0], [-1.0, 0.5], [3.0, 1.0]])
    with pytest.raises(sca.SCAError, match="NMF needs nonnegative") as info:
        sca.cluster(data=X, ensemble=[{"algorithm": "nmf", "k": 2, "runs": 2}])
    assert info.value.field == "data"


def test_k_above_n_is_refused():
    X = np.random.default_rng(0).random((5, 2))
    with pytest.raises(sca.SCAError, match="exceeds"):
        sca.cluster(data=X, ensemble=[{"algorithm": "kmeans", "k": 6, "runs": 2}])
    with pytest.raises(sca.SCAError) as info:
        sca.cluster(consensus=GOOD, options={"k": 7})
    assert info.value.field == "options.k"
    with pytest.raises(sca.SCAError) as info:
        sca.cluster(consensus=GOOD, options={"k_hat": 6000})
    assert info.value.field == "options.k_hat"


def test_data_checks():
    for X, words in (
        (np.array([1.0, 2.0]), "2-D"),
        (np.array([[np.nan, 1.0], [1.0, 1.0]]), "NaN"),
        (np.ones((1, 3)), "at least 2 rows"),
    ):
        with pytest.raises(sca.SCAError, match=words):
            sca.snn_operator(X, 1)


def test_ids_must_be_distinct_and_match_n():
    with pytest.raises(sca.SCAError, match="repeats") as info:
        sca.cluster(consensus=GOOD, ids=["a", "b", "c", "d", "e", "a"])
    assert info.value.field == "ids"
    with pytest.raises(sca.SCAError, match="6 elements"):
        sca.cluster(consensus=GOOD, ids=["a"])


def test_exactly_one_input():
    with pytest.raises(sca.SCAError, match="exactly one"):
        sca.cluster(consensus=GOOD, labels=np.zeros((6, 2), int))
    with pytest.raises(sca.SCAError, match="exactly one"):
        sca.cluster()


def test_unknown_option():
    with pytest.raises(sca.SCAError, match="unknown options"):
        sca.cluster(consensus=GOOD, options={"kk": 2})


@pytest.mark.parametrize(
    "text, words",
    [
        ("1;2\n3;4\n5;6\n", "separates its values with semicolons"),
        ("a;b\n3;4\n5;6\n", "separates its values with semicolons"),
        ("1\t2\n3\t4\n", "separates its values with tabs"),
        ("1,2\n3,x\n5,6\n", r"row 2, column 2 holds a non-numeric value: 'x'"),
        ("a,b\n1,2\n3,4\n,5\n", r"row 3, column 1 holds a non-numeric value"),
    ],
)
def test_csv_that_is_not_comma_separated_numbers_is_named(text, words):
    with pytest.raises(sca.SCAError, match=words) as info:
        read_matrix(text.encode(), "X.csv", "data")
    assert info.value.field == "data"


def test_csv_of_one_column_and_a_header_still_reads():
    values, header = read_matrix(b"height\n1.5\n2.5\n", "X.csv", "data")
    assert header == ["height"] and values.ravel().tolist() == [1.5, 2.5]


def test_every_input_kind_but_raw_data_gives_its_similarity_directly():
    """Raw data reaches S through an ensemble or the SNN; every other kind
    declared in the registry has its check and operator in one table."""
    assert set(SIMILARITIES) == set(INPUT_NAMES) - {"data"}


def test_build_operator_names_an_input_kind_it_does_not_know():
    with pytest.raises(TypeError, match="graph"):
        build_operator(graph=[[1.0]])
