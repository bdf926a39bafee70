"""Stochastic data clustering (C. D. Meyer and C. D. Wessell).

A consensus matrix S -- from an ensemble of clusterings, label runs, a
user's similarity matrix or the shared-nearest-neighbour measure -- is
balanced to a doubly stochastic P = D S D; the Perron cluster of P's
spectrum gives k; the evolution x_t^T = x_{t-1}^T P reveals the clusters.

Pure numerics (numpy, scipy, scikit-learn): no web framework, no queue.
"""

from .balance import BalanceResult, balance
from .clustering import iterate
from .custom import CustomResult, custom_cluster, neighbours
from .diagnostics import clustering_errors, evaluate, matching, uncoupling_measure
from .ensemble import ensemble_labels, ensemble_plan, ensemble_run
from .errors import BalancingError, DeadlineExceeded, IterationError, SCAError
from .inputs import consensus_operator, membership_matrix, membership_operator, snn_operator
from .iteration import IterationResult, gap_split
from .operators import (ConsensusOperator, DenseOperator, FactoredOperator, SparseOperator,
                        operator_from_state, operator_state)
from .pipeline import (balance_dict, cluster, custom_result, iteration_dict, result_dict,
                       run_stages, spectrum_dict)
from .spectral import SpectrumResult, largest_gap_k, perron_cluster, spectrum

__all__ = [
    "BalanceResult", "BalancingError", "ConsensusOperator", "CustomResult", "DeadlineExceeded",
    "DenseOperator",
    "FactoredOperator", "IterationError", "IterationResult", "SCAError", "SparseOperator",
    "SpectrumResult", "balance", "balance_dict", "cluster", "clustering_errors",
    "consensus_operator", "custom_cluster", "custom_result", "ensemble_labels",
    "ensemble_plan", "ensemble_run", "evaluate", "gap_split", "iterate", "iteration_dict",
    "largest_gap_k",
    "matching", "membership_matrix", "membership_operator", "neighbours",
    "operator_from_state", "operator_state", "perron_cluster", "result_dict", "run_stages",
    "snn_operator", "spectrum", "spectrum_dict", "uncoupling_measure",
]
