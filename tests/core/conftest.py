import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import sca
from sca.inputs import membership_factors
from sca.planted import planted_runs, planted_truth

# Re-exported for the core tests.
from tests.conftest import (  # noqa: F401
    BASEBALL_CSV,
    BASEBALL_IDS,
    BASEBALL_PAPER,
    BASEBALL_TEAMS,
    DATA,
    LEUKEMIA_PAPER,
    ROOT,
    load_csv,
)
from tests.conftest import BASEBALL_S as _BASEBALL_S

BASEBALL_S = np.array(_BASEBALL_S, dtype=float)


@pytest.fixture
def accuracy_cases(monkeypatch):
    """scripts/accuracy_cases.py as a module (it imports its folder's ``shared``)."""
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    import accuracy_cases

    yield accuracy_cases
    sys.modules.pop("accuracy_cases", None)


def pytest_collection_modifyitems(config, items):
    """Mark every test of this folder ``core`` (pyproject.toml registers the markers)."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.core)


@pytest.fixture
def baseball():
    return sca.consensus_operator(BASEBALL_S)


@pytest.fixture(scope="session")
def leukemia_X():
    return load_csv(DATA / "leukemia" / "X.csv")


def planted_similarity(n, blocks, seed):
    """A dense similarity with planted blocks (within 0.6 +- noise, between 0.2 +- noise)."""
    rng = np.random.default_rng(seed)
    truth = planted_truth(n, [1] * blocks, rng)
    S = np.where(truth[:, None] == truth[None, :], 0.6, 0.2) + 0.3 * rng.random((n, n))
    S = (S + S.T) / 2
    np.fill_diagonal(S, 1.0)
    return S, truth


@pytest.fixture(scope="module")
def forms():
    """One consensus of 40 planted label runs in every form: its truth and ``{form: operator}``."""
    rng = np.random.default_rng(7)
    truth = planted_truth(300, [1, 2, 3], rng)
    labels = planted_runs(truth, 40, 0.3, rng)
    H, groups = membership_factors(labels)
    factored = sca.FactoredOperator(H, groups=groups)
    S = factored.to_dense()
    return truth, {
        "dense": sca.consensus_operator(S),
        "sparse": sca.consensus_operator(sp.csr_array(S)),
        "factored": factored,
        "labels": sca.membership_operator(labels),
    }
