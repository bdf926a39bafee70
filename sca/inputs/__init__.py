"""Inputs that reach the consensus operator (Meyer & Wessell, Sec. 1 and 4.4).

* a precomputed consensus or similarity matrix S, dense or sparse
  (:mod:`~sca.inputs.consensus`);
* ensemble label runs, giving the factored form S = H H^T
  (:mod:`~sca.inputs.labels`);
* raw data plus an ensemble spec (:mod:`sca.ensemble` runs k-means / NMF);
* raw data and the shared-nearest-neighbour measure ("Using a single measure",
  :mod:`~sca.inputs.data`).

Raw data's columns are scaled first (the ``scale`` option, :func:`fit_scaling`).

Validation happens here, once, at the boundary; the stages assume it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .consensus import MAX_CONSENSUS_SUM, SYMMETRY_RTOL, check_consensus, consensus_operator
from .data import Scaling, check_data, check_snn, column_scaler, fit_scaling, snn_operator
from .labels import check_labels, membership_factors, membership_matrix, membership_operator

__all__ = [
    "MAX_CONSENSUS_SUM",
    "SIMILARITIES",
    "SYMMETRY_RTOL",
    "Scaling",
    "Similarity",
    "check_consensus",
    "check_data",
    "check_labels",
    "check_snn",
    "column_scaler",
    "consensus_operator",
    "fit_scaling",
    "membership_factors",
    "membership_matrix",
    "membership_operator",
    "snn_operator",
]


class Similarity(NamedTuple):
    """An input kind that is a similarity in itself: how to check it without
    building its operator (returning the checked array, n rows first) and
    how to build that operator."""

    check: Callable[..., Any]
    operator: Callable[..., Any]


#: The input kinds that give S directly, by name (:data:`sca.options.INPUTS`):
#: a consensus matrix (Sec. 2.2) and label runs (S = H H^T, Sec. 3).  Raw data
#: reaches S through an ensemble or the SNN (:mod:`sca.pipeline.source`).
SIMILARITIES = {
    "consensus": Similarity(check_consensus, consensus_operator),
    "labels": Similarity(check_labels, membership_operator),
}
