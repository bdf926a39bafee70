"""A storage root of label runs for the by-reference tests (sca.storage, the API)."""

from __future__ import annotations

import os
from pathlib import Path

import dask.array as da
import numpy as np


def storage_root(tmp_path: Path, labels: np.ndarray, chunk_rows: int) -> Path:
    """``tmp_path/cohorts`` holding ``labels`` as ``labels.npy``, as the npy stack
    ``stack`` (blocks of ``chunk_rows``) and as floats (``floats.npy``), and
    ``escape.npy``: a symbolic link to a copy outside the root."""
    base = tmp_path / "cohorts"
    base.mkdir()
    np.save(base / "labels.npy", labels)
    da.to_npy_stack(base / "stack", da.from_array(labels, chunks=(chunk_rows, -1)))
    np.save(base / "floats.npy", labels.astype(float))
    np.save(tmp_path / "outside.npy", labels)
    os.symlink(tmp_path / "outside.npy", base / "escape.npy")
    return base
