"""From a job's input arrays to the core's similarity operator, and the checks before that.

The API calls :func:`validate` before it accepts a job, so that bad values
are a 422 at once; the balancing stage calls :func:`build_operator`.  Both
rely on the core's own validation and its :class:`sca.SCAError` ``field``.

Input arrays by kind:

* ``consensus``: ``{"S"}`` dense, or ``{"n", "rows", "cols", "values"}`` sparse;
* ``labels``: ``{"labels"}``, ``n x r`` (elements x runs);
* ``data``: ``{"X"}``, ``n x m`` (elements x features), with ``source``
  holding ``ensemble`` (spec) and ``ensemble_seed``, or ``snn`` (kappa, metric).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

import sca
from sca.ensemble import check_ensemble_data
from sca.inputs import check_data


def _error(message: str, field: str) -> sca.SCAError:
    return sca.SCAError(message, field)


def sparse_consensus(arrays: Mapping[str, np.ndarray]) -> sp.csr_array:
    n = int(arrays["n"])
    rows, cols, values = (np.asarray(arrays[k]) for k in ("rows", "cols", "values"))
    if not (rows.shape == cols.shape == values.shape and rows.ndim == 1):
        raise _error("rows, cols and values must be lists of equal length", "consensus")
    for name, index in (("rows", rows), ("cols", cols)):
        if index.size and (index.min() < 0 or index.max() >= n):
            raise _error(f"{name} must hold indices in [0, n-1] = [0, {n - 1}]",
                         f"consensus.{name}")
    return sp.coo_array((values.astype(float), (rows, cols)), shape=(n, n)).tocsr()


def element_count(kind: str, arrays: Mapping[str, np.ndarray]) -> int:
    if kind == "consensus":
        return int(arrays["n"]) if "n" in arrays else int(np.shape(arrays["S"])[0])
    return int(np.shape(arrays["labels" if kind == "labels" else "X"])[0])


def validate(kind: str, arrays: Mapping[str, np.ndarray], source: Mapping) -> int:
    """Check an input as far as it can be checked cheaply; returns n.

    Raises :class:`sca.SCAError` naming the field at fault.
    """
    if kind == "consensus":
        if "S" in arrays:
            return sca.consensus_operator(arrays["S"]).n
        return sca.consensus_operator(sparse_consensus(arrays)).n
    if kind == "labels":
        return _check_labels(arrays["labels"])
    X = check_data(arrays["X"])
    if source.get("snn") is not None:
        kappa = source["snn"]["kappa"]
        if not 1 <= kappa < X.shape[0]:
            raise _error(f"snn kappa must be in [1, n-1] = [1, {X.shape[0] - 1}], got {kappa}",
                         "snn.kappa")
        return X.shape[0]
    plan = sca.ensemble_plan(source["ensemble"], source.get("ensemble_seed", 0))
    return check_ensemble_data(X, plan).shape[0]


def _check_labels(labels: np.ndarray) -> int:
    """The core's checks on label runs without building the membership matrix."""
    L = np.asarray(labels)
    if L.ndim == 1:
        L = L[:, None]
    if L.ndim != 2 or L.shape[0] < 2 or L.shape[1] < 1:
        raise _error(f"labels must be n x r (elements x runs) with n >= 2, got {L.shape}",
                     "labels")
    if L.dtype.kind == "f":
        if not np.all(np.isfinite(L)) or np.any(L != np.round(L)):
            raise _error("labels must hold integers", "labels")
    elif L.dtype.kind not in "iu":
        raise _error(f"labels must hold integers, got dtype {L.dtype}", "labels")
    missing = ~(L >= 0).any(axis=1)
    if missing.any():
        raise _error(f"labels: element {int(np.flatnonzero(missing)[0])} is in no run", "labels")
    return L.shape[0]


def build_operator(kind: str, arrays: Mapping[str, np.ndarray], source: Mapping):
    """The similarity operator S of a consensus, labels or SNN input."""
    if kind == "consensus":
        S = arrays["S"] if "S" in arrays else sparse_consensus(arrays)
        return sca.consensus_operator(S)
    if kind == "labels":
        return sca.membership_operator(arrays["labels"])
    if kind == "data" and source.get("snn") is not None:
        snn = source["snn"]
        return sca.snn_operator(arrays["X"], int(snn["kappa"]), snn.get("metric", "euclidean"))
    raise ValueError(f"no direct operator for a {kind} input with an ensemble")
