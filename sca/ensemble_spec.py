"""The ensemble spec: which runs an ensemble asks for (Meyer & Wessell, Sec. 1 and Sec. 5).

An ensemble spec is a list of ``{"algorithm": "kmeans" | "nmf" | "single",
"k": int or list of ints, "runs": int}``; several items give the paper's
"Combined" ensembles (Sec. 5).  This module holds the default spec
(:func:`default_ensemble`), the spec's checks (:func:`ensemble_items`, and
against the data :func:`check_ensemble_data`), what it asks for
(:func:`ensemble_size`, :func:`needs_nonnegative`) and its expansion into
independent, JSON-able run descriptors, one seed each
(:func:`ensemble_plan`), which :mod:`sca.ensemble` performs.
"""

from __future__ import annotations

import numpy as np

from .errors import SCAError
from .inputs import check_data
from .options import ALGORITHMS

#: The default ensemble's k-means levels reach about sqrt(n) (Fred & Jain), within these bounds.
DEFAULT_ENSEMBLE_MAX_K = (10, 40)
#: Runs of the default ensemble per level.
DEFAULT_ENSEMBLE_RUNS = 4


def default_ensemble(n: int) -> list[dict]:
    """The ensemble used on raw data when none is given: k-means at k = 2 ... about sqrt(n).

    Four runs at each k from 2 to ``ceil(sqrt(n))``, bounded to
    [10, 40] and to n / 2 (runs into singletons say nothing): a "Combined"
    ensemble over several k (Sec. 5), whose consensus holds together what
    stays together across levels of detail.  Levels up to about sqrt(n), as
    in Fred & Jain's evidence accumulation, let many groups show (20 groups
    cannot show in runs that cut at most 10); the coarse levels let few
    groups show.  k-means, not NMF, so that data of any sign is accepted,
    and so that reference data run through the same ensemble give the null
    of :mod:`sca.reference`.

    Examples
    --------
    >>> [(spec["k"][0], spec["k"][-1], spec["runs"]) for spec in default_ensemble(400)]
    [(2, 20, 4)]
    """
    low, high = DEFAULT_ENSEMBLE_MAX_K
    top = min(int(np.clip(np.ceil(np.sqrt(n)), low, high)), max(2, n // 2))
    return [{"algorithm": "kmeans", "k": list(range(2, top + 1)), "runs": DEFAULT_ENSEMBLE_RUNS}]


def ensemble_items(spec) -> list[tuple[str, list[int], int]]:
    """The spec's items as ``(algorithm, ks, runs)``, validated."""
    if isinstance(spec, dict):
        spec = [spec]
    if not isinstance(spec, (list, tuple)) or not spec:
        raise SCAError("ensemble must be a non-empty list of {algorithm, k, runs}", "ensemble")
    items = []
    for i, item in enumerate(spec):
        field = f"ensemble[{i}]"
        if not isinstance(item, dict):
            raise SCAError(f"{field} must be an object {{algorithm, k, runs}}", field)
        unknown = set(item) - {"algorithm", "k", "runs"}
        if unknown:
            raise SCAError(f"{field} has unknown keys {sorted(unknown)}", field)
        algorithm = item.get("algorithm")
        if algorithm not in ALGORITHMS:
            raise SCAError(
                f"{field}.algorithm must be one of {ALGORITHMS}, got {algorithm!r}",
                f"{field}.algorithm",
            )
        ks = item.get("k")
        ks = [ks] if isinstance(ks, (int, np.integer)) else ks
        if (
            not isinstance(ks, (list, tuple))
            or not ks
            or not all(
                isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 1 for k in ks
            )
        ):
            raise SCAError(f"{field}.k must be a positive integer or a list of them", f"{field}.k")
        count = item.get("runs")
        if not isinstance(count, (int, np.integer)) or isinstance(count, bool) or count < 1:
            raise SCAError(
                f"{field}.runs must be a positive integer, got {count!r}", f"{field}.runs"
            )
        items.append((algorithm, [int(k) for k in ks], int(count)))
    return items


def needs_nonnegative(spec) -> bool:
    """Whether the spec has NMF runs, which need nonnegative data (so its
    columns may be divided, not centred: :func:`sca.inputs.fit_scaling`)."""
    return any(algorithm == "nmf" for algorithm, _, _ in ensemble_items(spec))


def ensemble_size(spec) -> int:
    """The number of runs ``spec`` asks for, counted without expanding it
    (a spec of a few bytes can ask for billions)."""
    return sum(len(ks) * count for _, ks, count in ensemble_items(spec))


def ensemble_plan(spec, seed: int = 0) -> list[dict]:
    """Expand an ensemble spec into run descriptors ``{"algorithm", "k", "seed"}``.

    The descriptors are independent and JSON-able (one seed each), so that a
    worker pool can fan them out.

    Parameters
    ----------
    spec : dict or list of dict
        The ensemble: items ``{"algorithm": "kmeans" | "nmf" | "single", "k":
        int or list of ints, "runs": int}``; several items give the paper's "Combined"
        ensembles (Sec. 5).
    seed : int, default 0
        Seeds the runs' seeds (``numpy.random.SeedSequence``).

    Returns
    -------
    list of dict
        One descriptor per run, item by item, each k in turn, ``runs`` times.

    Raises
    ------
    SCAError
        When ``spec`` is malformed; ``field`` is ``"ensemble"`` or names the
        item and key (e.g. ``"ensemble[0].k"``).

    See Also
    --------
    ensemble_run : Performs one descriptor.
    """
    runs = [
        {"algorithm": algorithm, "k": k}
        for algorithm, ks, count in ensemble_items(spec)
        for k in ks
        for _ in range(count)
    ]
    seeds = np.random.SeedSequence(int(seed)).generate_state(len(runs), dtype=np.uint32)
    for run, run_seed in zip(runs, seeds):
        run["seed"] = int(run_seed)
    return runs


def check_ensemble_data(X, plan: list[dict]) -> np.ndarray:
    """Data-dependent checks: k below n; NMF needs nonnegative data."""
    X = check_data(X)
    n = X.shape[0]
    worst_k = max(run["k"] for run in plan)
    if worst_k > n:
        raise SCAError(f"ensemble k = {worst_k} exceeds the number of elements n = {n}", "ensemble")
    if any(run["algorithm"] == "nmf" for run in plan) and X.min() < 0:
        raise SCAError(f"NMF needs nonnegative data; data has minimum {X.min():g}", "data")
    return X
