"""The records of every option and the values they may take (:mod:`sca.options`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: How k follows from the eigenvalues (:mod:`sca.spectral`).
RULES = ("noise", "gap", "perron")
#: How x_t is split into clusters (:mod:`sca.iteration`).
SPLITS = ("kmeans", "gaps")
#: Beyond this many clusters ``split="kmeans"`` splits the rows by pivoted QR
#: (:class:`sca.splits.PivotSplit`), not k-means.
MANY_CENTRES = 256
#: Ensemble algorithms on raw data (:mod:`sca.ensemble`).
ALGORITHMS = ("kmeans", "nmf", "single")
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
        "`none` (as given, in its units: a column's spread is its weight, as where genes of "
        "large spread carry the groups, e.g. the paper's NMF runs on leukemia).  New "
        "elements are scaled as the job's data was.  "
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
        f"with k-means on the rows; beyond {MANY_CENTRES} clusters each row joins the "
        "row pivoted QR picks that it is most made of) or `gaps` (one vector cut at "
        "its k − 1 largest gaps, the paper's).",
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
