from pathlib import Path

import numpy as np
import pytest

import sca

DATA = Path(__file__).resolve().parents[2] / "data"

# The paper's baseball consensus (Sec. 3.1): NMF, 50 runs with k=2 and 50 with k=3.
BASEBALL_IDS = ["Rose", "Cobb", "Fisk", "Ott", "Ruth", "Mays"]
BASEBALL_S = np.array([
    [100, 67, 73, 2, 0, 2],
    [67, 100, 50, 1, 2, 7],
    [73, 50, 100, 15, 9, 24],
    [2, 1, 15, 100, 92, 82],
    [0, 2, 9, 92, 100, 77],
    [2, 7, 24, 82, 77, 100],
], dtype=float)


@pytest.fixture
def baseball():
    return sca.consensus_operator(BASEBALL_S)


def load_csv(path):
    return np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


@pytest.fixture(scope="session")
def leukemia_X():
    return load_csv(DATA / "leukemia" / "X.csv")


@pytest.fixture(scope="session")
def iris():
    return load_csv(DATA / "iris" / "X.csv"), load_csv(DATA / "iris" / "labels.csv").ravel()
