import numpy as np
import pytest

import sca

# Re-exported for the core tests.
from tests.conftest import (  # noqa: F401
    BASEBALL_CSV,
    BASEBALL_IDS,
    BASEBALL_PAPER,
    BASEBALL_TEAMS,
    DATA,
    LEUKEMIA_PAPER,
    load_csv,
)
from tests.conftest import BASEBALL_S as _BASEBALL_S

BASEBALL_S = np.array(_BASEBALL_S, dtype=float)


@pytest.fixture
def baseball():
    return sca.consensus_operator(BASEBALL_S)


@pytest.fixture(scope="session")
def leukemia_X():
    return load_csv(DATA / "leukemia" / "X.csv")
