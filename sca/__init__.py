"""Stochastic data clustering (C. D. Meyer and C. D. Wessell).

A consensus matrix S -- from an ensemble of clusterings, label runs, a
user's similarity matrix or the shared-nearest-neighbour measure -- is
balanced to a doubly stochastic P = D S D; the Perron cluster of P's
spectrum gives k; the evolution x_t^T = x_{t-1}^T P reveals the clusters.

Pure numerics (numpy, scipy, scikit-learn; numba for the label kernels): no web
framework, no queue.
"""

import sys as _sys
from types import ModuleType as _ModuleType

# Names load on first use (PEP 562), so ``import sca`` and ``sca --help`` stay
# fast: numpy, scipy and scikit-learn come with the first name that needs them.
_EXPORTS = {
    "balance": ("BalanceResult", "balance"),
    "bordered": ("BorderedOperator", "Extension", "extend_scaling"),
    "clustering": ("iterate",),
    "custom": ("CustomResult", "custom_cluster", "neighbours"),
    "diagnostics": ("clustering_errors", "evaluate", "matching", "uncoupling_measure"),
    "ensemble": ("ensemble_labels", "ensemble_run", "ensemble_fit", "ensemble_model"),
    "ensemble_models": ("ensemble_predict",),
    "ensemble_spec": ("ensemble_plan",),
    "estimator": ("StochasticClustering",),
    "errors": ("BalancingError", "DeadlineExceeded", "IterationError", "SCAError"),
    "inputs": ("consensus_operator", "membership_matrix", "membership_operator", "snn_operator"),
    "iteration": ("IterationResult", "gap_split"),
    "newrows": (
        "consensus_rows",
        "ensemble_rows",
        "ensemble_state",
        "label_rows",
        "neighbour_rows",
        "run_columns",
    ),
    "operators": (
        "ConsensusOperator",
        "DenseOperator",
        "FactoredOperator",
        "SparseOperator",
        "operator_from_state",
        "operator_state",
    ),
    "pipeline": (
        "balance_dict",
        "cluster",
        "custom_result",
        "iteration_dict",
        "result_dict",
        "run_stages",
        "spectrum_dict",
    ),
    "placement": ("Placement", "place", "predict"),
    "spectral": ("SpectrumResult", "largest_gap_k", "perron_cluster", "spectrum"),
    "warmup": ("warm",),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str):
    from importlib import import_module
    from importlib.util import find_spec

    module = _WHERE.get(name)
    if module is not None:
        value = getattr(import_module(f".{module}", __name__), name)
    elif not name.startswith("_") and find_spec(f"{__name__}.{name}") is not None:
        value = import_module(f".{name}", __name__)  # a submodule: sca.spectral, ...
    else:
        raise AttributeError(f"module 'sca' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_WHERE})


class _Package(_ModuleType):
    """Keeps ``sca.balance`` the function: importing the submodule of the same
    name would otherwise bind the module over it."""

    def __setattr__(self, name, value):
        if isinstance(value, _ModuleType) and _WHERE.get(name) == name:
            value = getattr(value, name)
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package

__all__ = [
    "BalanceResult",
    "BalancingError",
    "ConsensusOperator",
    "CustomResult",
    "DeadlineExceeded",
    "DenseOperator",
    "StochasticClustering",
    "FactoredOperator",
    "IterationError",
    "IterationResult",
    "SCAError",
    "SparseOperator",
    "SpectrumResult",
    "balance",
    "balance_dict",
    "cluster",
    "clustering_errors",
    "consensus_operator",
    "custom_cluster",
    "custom_result",
    "ensemble_labels",
    "ensemble_plan",
    "ensemble_run",
    "evaluate",
    "gap_split",
    "iterate",
    "iteration_dict",
    "largest_gap_k",
    "matching",
    "membership_matrix",
    "membership_operator",
    "neighbours",
    "operator_from_state",
    "operator_state",
    "perron_cluster",
    "result_dict",
    "run_stages",
    "snn_operator",
    "spectrum",
    "spectrum_dict",
    "uncoupling_measure",
]

# Placing new elements into a finished clustering (sca.placement, sca.newrows).
__all__ += [
    "BorderedOperator",
    "Extension",
    "Placement",
    "consensus_rows",
    "ensemble_fit",
    "ensemble_model",
    "ensemble_predict",
    "extend_scaling",
    "label_rows",
    "neighbour_rows",
    "place",
    "predict",
    "run_columns",
]
