"""Helpers shared by the scripts in this folder: the data files, a free port, and
the peer method the benchmarks compare with.

Each script runs with this folder first on ``sys.path``, so ``import shared``
finds this module.
"""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"

#: Largest n for which the peers (on the dense n x n consensus) are run.
PEER_MAX_N = 10_000


def load_matrix(path: Path) -> np.ndarray:
    """A data file of data/ (one header row) as a 2-D float array."""
    return np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


def load_labels(path: Path) -> np.ndarray:
    """A labels file of data/ (header ``label``) as integers."""
    return np.loadtxt(path, delimiter=",", skiprows=1, dtype=int, ndmin=1)


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spectral_clustering(S: np.ndarray, k: int, seed: int) -> np.ndarray:
    """scikit-learn's ``SpectralClustering(affinity="precomputed")`` with ``k`` clusters
    on the dense consensus ``S``: its labels."""
    from sklearn.cluster import SpectralClustering

    return SpectralClustering(k, affinity="precomputed", random_state=seed).fit_predict(S)
