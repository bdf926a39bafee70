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
them.  This module imports nothing heavy: ``sca --help`` reads it.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

from .errors import SCAError

#: How k follows from the eigenvalues (:mod:`sca.spectral`).
RULES = ("noise", "gap", "perron")
#: How x_t is split into clusters (:mod:`sca.iteration`).
SPLITS = ("kmeans", "gaps")
#: Ensemble algorithms on raw data (:mod:`sca.ensemble`).
ALGORITHMS = ("kmeans", "nmf")
#: How raw data's columns are scaled before the ensemble or SNN (:func:`sca.inputs.fit_scaling`).
SCALINGS = ("standard", "none")
#: scikit-learn's neighbour metrics that need no extra parameters and take rows of
#: data (its brute-force metrics less precomputed, haversine, mahalanobis and
#: seuclidean); a test checks scikit-learn still has each.
SNN_METRICS = (
    "braycurtis",
    "canberra",
    "chebyshev",
    "cityblock",
    "correlation",
    "cosine",
    "dice",
    "euclidean",
    "hamming",
    "jaccard",
    "l1",
    "l2",
    "manhattan",
    "minkowski",
    "nan_euclidean",
    "rogerstanimoto",
    "russellrao",
    "sokalsneath",
    "sqeuclidean",
    "yule",
)
#: Nearest neighbours of raw data (:func:`sca.neighbours`).
NEIGHBOUR_METHODS = ("euclidean", "cosine")
#: Ways to rank the elements most similar to one (the service's ``similar`` query).
SIMILAR_METHODS = ("sca", *NEIGHBOUR_METHODS)
#: Largest seed (numpy's legacy seeds and scikit-learn's random_state are 32-bit).
MAX_SEED = 2**32 - 1

SCOPES = ("core", "job", "cli", "custom", "similar")


@dataclass(frozen=True)
class Option:
    """One option: what it is, what it may be, where it applies.

    ``type`` is a JSON Schema type (``integer``, ``number``, ``boolean``,
    ``string``, ``array``, or ``element``: an element id or 0-based index).
    ``stage`` is the stage that reads it (``ensemble``,
    ``balancing``, ``spectral``, ``iteration`` or ``query``).
    ``default_doc`` says in words a default that is computed, ``paper`` the
    paper's value where it differs from ours.
    """

    name: str
    type: str
    doc: str
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple | None = None
    scopes: frozenset = frozenset({"core", "job", "cli"})
    stage: str = "spectral"
    default_doc: str | None = None
    paper: str | None = None
    required: bool = False
    metavar: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def describe_default(self) -> str:
        if self.default_doc is not None:
            return self.default_doc
        if self.default is None:
            return "none"
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        return str(self.default)


_ALL = frozenset({"core", "job", "cli"})

#: The clustering options: ``sca.cluster(options=...)``, the API's ``options``,
#: ``sca cluster`` / ``sca submit``.
CLUSTERING = (
    Option(
        "k",
        "integer",
        "Number of clusters (1 ≤ k ≤ n), always honoured.",
        minimum=1,
        default_doc="from the eigenvalues by `rule`",
    ),
    Option(
        "k_hat",
        "integer",
        "How many of the largest eigenvalues to compute; with `k` given, "
        "more than k (the gap after λ_k needs λ_(k+1)).",
        minimum=1,
        default_doc="all eigenvalues when cheap, else 20, doubled until one falls below the "
        "noise floor (cap 1000, said in `notes`)",
    ),
    Option(
        "rule",
        "string",
        "How k follows from the eigenvalues: `noise` (eigenvalues of P "
        "above the noise floor of the same input with its structure destroyed; k = 1, no "
        "cluster structure, is a possible answer), `gap` (the largest gap among λ_min_k … "
        "λ_max_k) or `perron` (the paper's Perron cluster, Definition 2.9, which includes "
        "the gap after λ1).",
        default="noise",
        choices=RULES,
        paper="perron",
    ),
    Option(
        "min_k",
        "integer",
        "Smallest k the rule may choose (the gap rule: default 2).",
        minimum=1,
    ),
    Option(
        "max_k",
        "integer",
        "Largest k the rule may choose (at least min_k).",
        minimum=1,
    ),
    Option(
        "seed",
        "integer",
        "Seeds the random starts and the noise floor's null draws; in "
        "Python and on the command line also the ensemble (the API has `ensemble_seed`).",
        default=0,
        minimum=0,
        maximum=MAX_SEED,
        stage="iteration",
    ),
    Option(
        "ensemble_seed",
        "integer",
        "Seeds the ensemble runs (kept apart from `seed` so "
        "that iteration options alone reuse the cached ensemble).",
        default=0,
        minimum=0,
        maximum=MAX_SEED,
        scopes=frozenset({"job"}),
        stage="ensemble",
    ),
    Option(
        "scale",
        "string",
        "How raw data's columns are scaled before the ensemble or SNN: `standard` (each "
        "column centred and divided by its standard deviation; constant columns are only "
        "centred; with NMF in the ensemble only divided, as NMF needs nonnegative data) or "
        "`none` (as given, in its units).  New elements are scaled as the job's data was.  "
        "Not used with consensus or labels.",
        default="standard",
        choices=SCALINGS,
        paper="none",
        stage="ensemble",
    ),
    Option(
        "starts",
        "integer",
        "Independent random starts; with more than one, `membership` "
        "gives each element's share of starts in each cluster.",
        default=1,
        minimum=1,
        stage="iteration",
    ),
    Option(
        "stable",
        "integer",
        "Consecutive identical clusterings, counted from x_1, that end a start.",
        default=6,
        minimum=1,
        stage="iteration",
    ),
    Option(
        "max_iterations",
        "integer",
        "Most steps x_t = x_{t-1} P per start.",
        default=1000,
        minimum=1,
        stage="iteration",
    ),
    Option(
        "split",
        "string",
        "How x_t becomes clusters: `kmeans` (block power iteration on P "
        "with k-means on the rows) or `gaps` (one vector cut at its k − 1 largest gaps, the "
        "paper's).",
        default="kmeans",
        choices=SPLITS,
        paper="gaps",
        stage="iteration",
    ),
    Option(
        "trace",
        "boolean",
        "Record the first start step by step: x_t and its clusters.",
        default=False,
        stage="iteration",
    ),
    Option(
        "reconsensus",
        "boolean",
        "While the starts disagree, cluster the consensus of their "
        "solutions again (at most 10 rounds).",
        default=False,
        stage="iteration",
    ),
    Option(
        "tol",
        "number",
        "Balancing tolerance on the row sums of P (or the rounding floor "
        "n·ε once the residual stalls).",
        default=1e-12,
        minimum=0,
        exclusive_minimum=True,
        scopes=frozenset({"core", "cli"}),
        stage="balancing",
    ),
    Option(
        "balance_max_iterations",
        "integer",
        "Most Sinkhorn-Knopp sweeps of the balancing.",
        default=10_000,
        minimum=1,
        scopes=frozenset({"core"}),
        stage="balancing",
    ),
    Option(
        "x0",
        "array",
        "Initial vector of the first start (e.g. the paper's printed x_0).",
        scopes=frozenset({"core"}),
        stage="iteration",
    ),
)

#: The custom-cluster query (Fig. 5.2): ``POST .../custom-clusters``, ``sca custom``.
CUSTOM = (
    Option(
        "element",
        "element",
        "The target element: its id (from `ids`, `--ids` or the CSV "
        "header) or its 0-based index (the first element is 0).",
        required=True,
        scopes=frozenset({"custom", "cli"}),
        stage="query",
        metavar="ID",
    ),
    Option(
        "min_size",
        "integer",
        "Smallest admissible size of the element's cluster.",
        default=1,
        minimum=1,
        scopes=frozenset({"custom", "cli"}),
        stage="query",
    ),
    Option(
        "max_size",
        "integer",
        "Largest admissible size of the element's cluster (at least min_size).",
        minimum=1,
        scopes=frozenset({"custom", "cli"}),
        stage="query",
        default_doc="n",
    ),
    Option(
        "max_iterations",
        "integer",
        "Most steps of x_t from the element's unit vector.",
        default=1000,
        minimum=1,
        scopes=frozenset({"custom", "cli"}),
        stage="query",
    ),
    Option(
        "k",
        "integer",
        "Clusters per split.",
        minimum=1,
        scopes=frozenset({"custom"}),
        stage="query",
        default_doc="the job's k",
    ),
    Option(
        "limit",
        "integer",
        "Length of `ranked`.",
        minimum=1,
        scopes=frozenset({"custom", "cli"}),
        stage="query",
        default_doc="every other element",
    ),
)

#: The similar-elements query: ``GET .../elements/{element}/similar``.
SIMILAR = (
    Option(
        "limit",
        "integer",
        "How many elements to rank.",
        default=6,
        minimum=1,
        scopes=frozenset({"similar"}),
        stage="query",
    ),
    Option(
        "method",
        "string",
        "`sca` (the element's row of P), `euclidean` or `cosine` (raw data only).",
        default="sca",
        choices=SIMILAR_METHODS,
        scopes=frozenset({"similar"}),
        stage="query",
    ),
)

GROUPS = {"clustering": CLUSTERING, "custom": CUSTOM, "similar": SIMILAR}
#: Where a group's errors are reported: ``options.k`` for a job, ``min_size`` for a query.
PREFIX = {"clustering": "options.", "custom": "", "similar": ""}
OPTIONS = {o.name: o for o in CLUSTERING}


def options_for(scope: str, group: str = "clustering", stages=None) -> tuple:
    """The options of ``group`` that apply in ``scope`` (and, when given, to ``stages``)."""
    return tuple(
        o for o in GROUPS[group] if scope in o.scopes and (stages is None or o.stage in stages)
    )


def defaults(scope: str = "core", group: str = "clustering") -> dict:
    """``{name: default}`` of the options of ``group`` in ``scope``."""
    return {o.name: o.default for o in options_for(scope, group)}


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _range_text(option: Option, low=None, high=None) -> str:
    low = option.minimum if low is None else low
    high = option.maximum if high is None else high
    if option.exclusive_minimum:
        return f"> {low:g}"
    if high is None:
        return f">= {low:g}" if low is not None else ""
    return f"in [{low:g}, {high}]"


def check(name: str, value, group: str = "clustering", n: int | None = None):
    """Check one option's value (None means the default); returns it.

    Raises :class:`SCAError` naming the field (``options.k`` for a clustering
    option) and the reason.  With ``n``, the bounds that depend on n (k,
    min_k and k_hat at most n) are checked too.
    """
    options = {o.name: o for o in GROUPS[group]}
    if name not in options:
        raise SCAError(
            f"unknown option {name!r}; known: {sorted(options)}", PREFIX[group].rstrip(".") or name
        )
    option = options[name]
    if value is None:
        if option.required:
            raise SCAError(f"{name} is required", PREFIX[group] + name)
        return None
    field_name = PREFIX[group] + name
    high = option.maximum
    if n is not None and group == "clustering" and name in ("k", "min_k", "k_hat"):
        high = n
    kind = option.type
    if kind == "integer":
        ok = (
            _is_int(value)
            and (option.minimum is None or value >= option.minimum)
            and (high is None or value <= high)
        )
        if not ok:
            bound = (
                f"[{option.minimum:g}, n] = [{option.minimum:g}, {n}]"
                if high == n and n is not None
                else None
            )
            where = f"in {bound}" if bound else _range_text(option, high=high)
            raise SCAError(f"{name} must be an integer {where}, got {value!r}", field_name)
    elif kind == "number":
        ok = (
            isinstance(value, numbers.Real)
            and not isinstance(value, bool)
            and (
                option.minimum is None
                or float(value) > option.minimum
                or (not option.exclusive_minimum and value == option.minimum)
            )
        )
        if not ok:
            raise SCAError(
                f"{name} must be a number {_range_text(option)}, got {value!r}", field_name
            )
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise SCAError(f"{name} must be true or false, got {value!r}", field_name)
    elif kind == "string":
        if value not in (option.choices or ()):
            raise SCAError(f"{name} must be one of {option.choices}, got {value!r}", field_name)
    elif kind == "element":
        if isinstance(value, bool) or not isinstance(value, (str, numbers.Integral)):
            raise SCAError(
                f"{name} must be an element id (string) or 0-based index (integer), got {value!r}",
                field_name,
            )
    return value


def validate(
    options: dict | None, group: str = "clustering", n: int | None = None, scope: str | None = None
) -> dict:
    """Check a dict of options; returns it with every default filled in.

    Unknown names (for ``scope``, when given) are refused; each value is
    checked by :func:`check`; then the rules between options: ``min_k <=
    max_k``, ``min_size <= max_size``, ``k_hat`` large enough for its rule
    and, with ``k`` given, more than k (the gap after λ_k needs λ_{k+1}).
    The first fault raises :class:`SCAError` naming its field.  Without
    ``scope`` every option of the group is known (the clustering group's
    ``ensemble_seed`` too); ``scope="core"`` is what :func:`sca.cluster` takes.
    """
    known = {o.name: o for o in (GROUPS[group] if scope is None else options_for(scope, group))}
    options = dict(options or {})
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise SCAError(
            f"unknown options {unknown}; known: {sorted(known)}",
            PREFIX[group].rstrip(".") or unknown[0],
        )
    out: dict[str, Any] = {name: o.default for name, o in known.items()}
    for name, value in options.items():
        if value is not None:
            out[name] = check(name, value, group, n)
        elif known[name].required:
            check(name, value, group, n)
    if group == "clustering":
        _check_spectral(out, n)
    elif group == "custom":
        low, high = out.get("min_size"), out.get("max_size")
        if low is not None and high is not None and high < low:
            raise SCAError(f"max_size must be at least min_size = {low}, got {high}", "max_size")
        if n is not None and low is not None and low > n:
            raise SCAError(f"min_size must be at most n = {n}, got {low}", "min_size")
    return out


def _check_spectral(opts: dict, n: int | None) -> None:
    """The rules between k, k_hat, min_k, max_k and rule."""
    k, k_hat, min_k, max_k = (opts.get(name) for name in ("k", "k_hat", "min_k", "max_k"))
    rule = opts.get("rule") or OPTIONS["rule"].default
    low = max(min_k or 1, 1)
    if max_k is not None and max_k < low:
        raise SCAError(f"max_k must be an integer >= min_k = {low}, got {max_k!r}", "options.max_k")
    if k_hat is None:
        return
    if k is not None:
        # the gap after λ_k needs λ_{k+1}; the same with or without n (the API's
        # schema checks before n is known)
        if k_hat <= k:
            raise SCAError(
                f"k_hat must exceed k = {k} (the gap after λ_k needs λ_(k+1)), got {k_hat}",
                "options.k_hat",
            )
        return
    # "gap" reads λ_j - λ_{j+1} for j >= min_k (2), "perron" needs one gap; "noise" counts.
    least = 1 if rule == "noise" else (2 if rule == "perron" else (min_k or 2) + 1)
    if k_hat < least or (n is not None and k_hat > n):
        raise SCAError(
            f"k_hat must be an integer in [{least}, n] = [{least}, "
            f"{'n' if n is None else n}] for rule {rule!r}, got {k_hat!r}",
            "options.k_hat",
        )


# -- inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputKind:
    """One kind of input: its name in a request, the name of its array in a job's
    stored input, what it is, and what its columns are (``columns``)."""

    name: str
    array: str
    doc: str
    cli_doc: str
    integer: bool = False
    columns: str = "columns"


INPUTS = (
    InputKind(
        "data",
        "X",
        "Raw data, rows = elements; clustered by `ensemble` (default: k-means at several k, "
        "`sca.ensemble.default_ensemble`) or `snn`, after the `scale` option.",
        "raw data CSV/.npy, rows = elements (a header row is skipped); clustered by "
        "--ensemble (default: k-means at several k) or --snn, after --scale",
        columns="features",
    ),
    InputKind(
        "consensus",
        "S",
        "A symmetric nonnegative similarity matrix with a positive diagonal.",
        "consensus matrix S.csv|S.npy|S.npz (a CSV header row gives the ids)",
    ),
    InputKind(
        "labels",
        "labels",
        "Ensemble label runs, rows = elements, one column per run (negative = left out).",
        "label runs RUNS.csv|RUNS.npy, one row per element, one column per run",
        integer=True,
        columns="runs",
    ),
)
INPUT_NAMES = tuple(kind.name for kind in INPUTS)
INPUT_KINDS = {kind.name: kind for kind in INPUTS}


def one_input(given) -> str:
    """The one input kind among ``given`` (names whose value is not None).

    Raises :class:`SCAError` (field ``input``) unless exactly one is given.
    """
    present = [name for name in INPUT_NAMES if name in given]
    if len(present) != 1:
        raise SCAError(
            f"give exactly one input: data (with ensemble, snn or neither), consensus or "
            f"labels; got {present or 'none'}",
            "input",
        )
    return present[0]
