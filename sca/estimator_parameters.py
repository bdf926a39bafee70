"""The estimator's parameters as the core's options, and the core's errors under their names.

:class:`sca.StochasticClustering` passes its parameters to the core as the
options of :func:`sca.cluster` (Meyer & Wessell, Sec. 2.4 for the spectrum's,
Sec. 3 for the iteration's); :func:`check_options` refuses bad ones before
the ensemble runs, :func:`seed_of` turns ``random_state`` into the core's
``seed``, and :func:`as_parameters` re-raises the core's input errors under
the estimator's parameter names (:data:`PARAMETERS`).
"""

from __future__ import annotations

from contextlib import contextmanager
from numbers import Integral
from types import SimpleNamespace

import numpy as np
from sklearn.utils import check_random_state

from .errors import SCAError
from .iteration import check_iteration_options
from .spectral import check_spectrum_options

#: The core's name of a faulty input or option -> the estimator's parameter.
PARAMETERS = {
    "options.k": "n_clusters",
    "options.k_hat": "k_hat",
    "options.min_k": "min_k",
    "options.max_k": "max_k",
    "options.rule": "rule",
    "options.split": "split",
    "options.starts": "starts",
    "options.stable": "stable",
    "options.max_iterations": "max_iterations",
    "options.seed": "random_state",
    "options.scale": "scale",
    "snn.kappa": "n_neighbors",
    "snn.metric": "metric",
    "ensemble": "ensemble",
}


def seed_of(random_state) -> int:
    """The core's ``seed`` of ``random_state``: an int as it is, else one drawn from it."""
    rng = check_random_state(random_state)  # refuses what numpy cannot seed with
    if isinstance(random_state, Integral) and not isinstance(random_state, bool):
        return int(random_state)
    return int(rng.randint(np.iinfo(np.int32).max))


def check_options(n: int, options: dict) -> None:
    """Refuse bad options before the ensemble runs, with the core's own checks.

    The core's options registry (``sca.options``) replaces these two calls
    when it lands.
    """
    check_spectrum_options(
        n, options["k"], options["k_hat"], options["min_k"], options["max_k"], options["rule"]
    )
    check_iteration_options(
        SimpleNamespace(n=n),
        options["k"] or 1,
        options["starts"],
        options["stable"],
        options["max_iterations"],
        options["split"],
    )


@contextmanager
def as_parameters():
    """Re-raise the core's input errors under the estimator's parameter names."""
    try:
        yield
    except SCAError as error:
        field = error.field or ""
        name = PARAMETERS.get(field) or ("ensemble" if field.startswith("ensemble") else None)
        if type(error) is not SCAError or name is None:
            raise
        raise SCAError(f"{error} (parameter {name!r})", name) from error
