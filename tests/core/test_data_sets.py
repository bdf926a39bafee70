"""The real sets of data/ as their SOURCE.md describe them, and as the accuracy
script's raw-data cases read them (scripts/accuracy_cases.py)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.cluster import AgglomerativeClustering
from sklearn.metrics import adjusted_rand_score

from ..conftest import DATA, load_csv

#: Folder: (rows, columns, elements per label).
SHAPES = {
    "iris": (150, 4, [50, 50, 50]),
    "leukemia": (38, 5000, [19, 8, 11]),
    "medulloblastoma": (34, 5893, [25, 9]),
    "ruspini": (75, 2, [20, 23, 17, 15]),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_real_set_has_its_rows_columns_and_labels(name):
    X, labels = load_csv(DATA / name / "X.csv"), load_csv(DATA / name / "labels.csv").ravel()
    rows, columns, counts = SHAPES[name]
    assert X.shape == (rows, columns) and np.all(np.isfinite(X))
    assert labels.shape == (rows,)
    assert np.bincount(labels.astype(int)).tolist() == counts


def test_medulloblastoma_is_the_thresholded_expression_matrix_of_its_source():
    X = load_csv(DATA / "medulloblastoma" / "X.csv")
    assert (X.min(), X.max()) == (20, 16000)  # the source's floor and ceiling
    assert np.array_equal(X, np.round(X))
    header = (DATA / "medulloblastoma" / "X.csv").read_text().split("\n", 1)[0].split(",")
    assert len(set(header)) == X.shape[1]


def test_ruspini_labels_are_the_four_groups_every_linkage_finds():
    X = load_csv(DATA / "ruspini" / "X.csv")
    labels = load_csv(DATA / "ruspini" / "labels.csv").ravel()
    for linkage in ("single", "average", "ward"):
        found = AgglomerativeClustering(4, linkage=linkage).fit_predict(X)
        assert adjusted_rand_score(labels, found) == 1.0


def test_the_accuracy_cases_read_every_real_set_of_data(accuracy_cases):
    sets = {name: (X, y) for name, X, y in accuracy_cases.real_sets()}
    for name in accuracy_cases.DATA_FOLDERS:
        X, y = sets[name]
        assert (X.shape[0], np.unique(y).size) == (SHAPES[name][0], len(SHAPES[name][2]))
