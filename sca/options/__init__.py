"""Every option of the algorithm, declared once.

Each :class:`Option` holds a name, a type, a default, the allowed range or
values and a one-line doc, and says where it applies (``scopes``): the core's
``options`` dict (``"core"``), the API's ``options`` object and ``sca submit``
(``"job"``), the core's command line (``"cli"``), the custom-cluster query
(``"custom"``) and the similar-elements query (``"similar"``).  From these
records come the core's checks (:func:`check`, :func:`validate`), the
command lines' arguments and help (:func:`sca.cli.add_option_arguments`),
the service's marshmallow schemas (``sca_service.options``, which also names
the settings that bound some options), and the options tables of the docs
and the ``Options`` schema of ``openapi.yaml`` (``sca_service.options_docs``,
which a test compares with the committed files).  :data:`INPUTS` does the
same for the kinds of input (their names and array names).

The allowed values (rules, splits, ensemble algorithms, SNN metrics,
neighbour methods) are declared here too, and the numerical modules import
them.  This package imports nothing heavy: ``sca --help`` reads it.  The records
are in :mod:`sca.options.records`, the checks in :mod:`sca.options.checks`,
the input kinds in :mod:`sca.options.inputs`.
"""

from .checks import check, validate
from .inputs import INPUT_KINDS, INPUT_NAMES, INPUTS, InputKind, one_input
from .records import (
    ALGORITHMS,
    CLUSTERING,
    CUSTOM,
    GROUPS,
    MANY_CENTRES,
    MAX_SEED,
    NEIGHBOUR_METHODS,
    OPTIONS,
    PREFIX,
    RULES,
    SCALINGS,
    SCOPES,
    SIMILAR,
    SIMILAR_METHODS,
    SNN_METRICS,
    SPLITS,
    Option,
    defaults,
    options_for,
)

__all__ = [
    "ALGORITHMS",
    "CLUSTERING",
    "CUSTOM",
    "GROUPS",
    "INPUTS",
    "INPUT_KINDS",
    "INPUT_NAMES",
    "MAX_SEED",
    "NEIGHBOUR_METHODS",
    "OPTIONS",
    "PREFIX",
    "RULES",
    "SCALINGS",
    "SCOPES",
    "SIMILAR",
    "SIMILAR_METHODS",
    "SNN_METRICS",
    "SPLITS",
    "MANY_CENTRES",
    "InputKind",
    "Option",
    "check",
    "defaults",
    "one_input",
    "options_for",
    "validate",
]
