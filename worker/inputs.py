"""From a job's input arrays to the core's similarity operator, and the checks before that.

The API calls :func:`validate` before it accepts a job, so that bad values
are a 422 at once; the balancing stage calls :func:`build_operator`.  Both
rely on the core's own validation and its :class:`sca.SCAError` ``field``;
:func:`validate` builds no operator.

Input arrays by kind:

* ``consensus``: ``{"S"}`` dense, or ``{"n", "rows", "cols", "values"}`` sparse
  (:func:`sparse_arrays`);
* ``labels``: ``{"labels"}``, ``n x r`` (elements x runs), or ``{"reference"}``
  when they were named by reference (:func:`reference_arrays`): the JSON of
  the root, the path, the location they resolved to and its fingerprint;
* ``data``: ``{"X"}``, ``n x m`` (elements x features), as given, with
  ``source`` holding ``ensemble`` (spec, the default one when the request
  gave none) and ``ensemble_seed``, or ``snn`` (kappa, metric), and ``scale``:
  the ensemble or the SNN runs on X scaled by it (:func:`scaling`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

import sca
from sca import storage
from sca.ensemble_spec import check_ensemble_data, needs_nonnegative
from sca.inputs import SIMILARITIES, Scaling, check_snn, fit_scaling
from sca.options import INPUT_KINDS

#: The scale of a record written before the option existed: data as given.
LEGACY_SCALE = "none"


def sparse_arrays(n: int, rows, cols, values) -> dict[str, np.ndarray]:
    """The input arrays of a sparse consensus given as coordinates."""
    return {
        "n": np.array(int(n)),
        "rows": _indices(rows, "rows", n),
        "cols": _indices(cols, "cols", n),
        "values": np.asarray(values, dtype=float),
    }


def _indices(values, name: str, n: int) -> np.ndarray:
    try:
        return np.asarray(values, dtype=np.int64)
    except OverflowError:  # beyond int64, so beyond n
        raise _out_of_range(name, n) from None


def _out_of_range(name: str, n: int) -> sca.SCAError:
    return sca.SCAError(
        f"{name} must hold indices in [0, n-1] = [0, {int(n) - 1}]", f"consensus.{name}"
    )


def sparse_consensus(arrays: Mapping[str, np.ndarray]) -> sp.csr_array:
    n = int(arrays["n"])
    rows, cols, values = (np.asarray(arrays[k]) for k in ("rows", "cols", "values"))
    if not (rows.shape == cols.shape == values.shape and rows.ndim == 1):
        raise sca.SCAError("rows, cols and values must be lists of equal length", "consensus")
    for name, index in (("rows", rows), ("cols", cols)):
        if index.size and (index.min() < 0 or index.max() >= n):
            raise _out_of_range(name, n)
    return sp.coo_array((values.astype(float), (rows, cols)), shape=(n, n)).tocsr()


#: The array of a stored input that holds a reference instead of the input itself.
REFERENCE = "reference"


def reference_arrays(roots: Mapping[str, str], root, path, kind: str = "labels") -> dict:
    """The stored input of a ``kind`` input named by reference (``root``, ``path``):
    where it resolved to and its fingerprint (:mod:`sca.storage`), so that the
    job's cache keys change when the array does.  Raises :class:`sca.SCAError`
    naming ``<kind>.root`` or ``<kind>.path``."""
    if INPUT_KINDS[kind].reference is None:
        raise sca.SCAError(f"{kind} cannot be named by reference", kind)
    location = storage.resolve(roots, root, path, kind)
    storage.open_labels(location, kind)  # the format and the shape, checked now
    text = json.dumps(
        {
            "root": root,
            "path": path,
            "location": location,
            "fingerprint": storage.fingerprint(location),
        },
        sort_keys=True,
    )
    return {REFERENCE: np.array(text)}


def reference(arrays: Mapping[str, np.ndarray]) -> dict | None:
    """The reference of a stored input named by reference, else None."""
    if REFERENCE not in arrays:
        return None
    return _reference(arrays)


def _reference(arrays: Mapping[str, np.ndarray]) -> dict:
    return json.loads(str(arrays[REFERENCE]))


def referenced(arrays: Mapping[str, np.ndarray], distributed: bool = False):
    """The array a stored reference names: a ``.npy`` file memory-mapped in this
    process, any other format (or any, when ``distributed``) as a lazy Dask array
    read where it is computed."""
    location = _reference(arrays)["location"]
    if distributed or not location.endswith(".npy"):
        return storage.open_labels(location)
    return storage.load_labels(location)


def _given(kind: str, arrays: Mapping[str, np.ndarray]):
    """The similarity input of ``kind`` as it was given: its stored array, a
    sparse consensus rebuilt from its coordinates, or the array a reference names."""
    if REFERENCE in arrays:
        return referenced(arrays)
    if kind == "consensus" and INPUT_KINDS[kind].array not in arrays:
        return sparse_consensus(arrays)
    return arrays[INPUT_KINDS[kind].array]


def input_array(kind: str, arrays: Mapping[str, np.ndarray]):
    """A stored input's array of ``kind`` (a referenced one memory-mapped or read)."""
    if REFERENCE in arrays:
        return storage.load_labels(_reference(arrays)["location"])
    return arrays[INPUT_KINDS[kind].array]


def validate(kind: str, arrays: Mapping[str, np.ndarray], source: Mapping) -> tuple[int, int]:
    """Check an input as far as it can be checked without building its operator.

    Returns ``(n, runs)``: the number of elements and of ensemble runs (0
    without an ensemble).  Raises :class:`sca.SCAError` naming the field at fault.
    """
    if REFERENCE in arrays:  # its shape; its values are read when its operator is built
        return storage.open_labels(_reference(arrays)["location"], kind).shape[0], 0
    if kind in SIMILARITIES:
        return SIMILARITIES[kind].check(_given(kind, arrays)).shape[0], 0
    if source.get("snn") is not None:
        snn = source["snn"]
        return check_snn(arrays["X"], snn["kappa"], snn.get("metric", "euclidean")).shape[0], 0
    plan = sca.ensemble_plan(source["ensemble"], source.get("ensemble_seed", 0))
    return check_ensemble_data(arrays["X"], plan).shape[0], len(plan)


def scaling(X: np.ndarray, source: Mapping) -> Scaling:
    """The ``scale`` of a data job's ``source`` fitted on its data X."""
    spec = source.get("ensemble")
    centre = spec is None or not needs_nonnegative(spec)
    return fit_scaling(X, source.get("scale", LEGACY_SCALE), centre)


def build_operator(
    kind: str, arrays: Mapping[str, np.ndarray], source: Mapping, fitted: Scaling | None = None
):
    """The similarity operator S of an input that gives it directly
    (:data:`sca.inputs.SIMILARITIES`) or of an SNN input (an SNN's
    data scaled by ``fitted``, else by :func:`scaling`)."""
    if kind in SIMILARITIES:
        return SIMILARITIES[kind].operator(_given(kind, arrays))
    if kind == "data" and source.get("snn") is not None:
        snn = source["snn"]
        X = arrays["X"]
        X = (fitted or scaling(X, source)).transform(X)
        return sca.snn_operator(X, int(snn["kappa"]), snn.get("metric", "euclidean"))
    raise ValueError(f"no direct operator for a {kind} input with an ensemble")


#: The ``kind`` of a stored P that names files instead of holding arrays: that of a
#: referenced job run on Dask (:func:`sca_worker.on_dask.stored_state`).
STORED = "stored"


def is_stored(state: Mapping) -> bool:
    """Whether a stored P names files (:data:`STORED`) rather than holding arrays."""
    return str(state["kind"]) == STORED


def stored_operator(state: Mapping):
    """P back from a :data:`STORED` state: the input's labels memory-mapped (or read)
    and scaled by the written balancing vector (P = D S D)."""
    S = sca.membership_operator(storage.load_labels(str(state["input"])))
    return S.scaled(storage.load_stack(str(state["scale"])))


def stacked_operator(state: Mapping):
    """P of a :data:`STORED` state for the queries that only multiply by it (custom
    clusters, similar elements): the input's files read a block at a time
    (:class:`sca.operators.StackedOperator`), never whole; an input of another
    format (a ``.zarr`` store) as :func:`stored_operator` reads it."""
    try:
        spans = state["spans"] if "spans" in state else None  # stored since the paged form
        return sca.operators.StackedOperator(str(state["input"]), str(state["scale"]), spans)
    except sca.SCAError:
        return stored_operator(state)
