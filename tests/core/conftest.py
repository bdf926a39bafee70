import numpy as np
import pytest

import sca

from tests.conftest import BASEBALL_IDS, BASEBALL_PAPER, DATA  # noqa: F401
from tests.conftest import BASEBALL_S as _BASEBALL_S

BASEBALL_S = np.array(_BASEBALL_S, dtype=float)


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
