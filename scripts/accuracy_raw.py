"""The raw-data part of ``scripts/accuracy.py``: the automatic k of the estimator
on raw rows, beside six peers given the same rows.

The estimator is called in one place, :func:`sca_fit`.  Each case
(:func:`accuracy_cases.raw_cases`) becomes one row: its true k, the k, ARI
and seconds of every method, and sca's ARI when told the true k.
:func:`summary` reads the rows only.
"""

from __future__ import annotations

import time

import numpy as np
from accuracy_cases import KINDS, REAL, STRUCTURELESS, UNEQUAL, WEAK, raw_cases
from accuracy_peers import (
    evidence_accumulation,
    gap_k,
    gap_statistic,
    gmm_bic,
    hdbscan,
    k_max,
    monti,
    sil_gap_k,
)
from sklearn.metrics import adjusted_rand_score

import sca

#: The methods in the table's order; sca first.
METHODS = ("sca", "gap", "sil+gap", "gmm-bic", "hdbscan", "monti", "EA")
#: Share of a block that must stay in one cluster for it to count as not split.
UNSPLIT_SHARE = 0.95
#: A peer is skipped ('-') on a case where :func:`expected_seconds` exceeds this.
SECONDS_LIMIT = 60.0
#: k-means (or EM) point-centre steps, and flops of dense products, per second of
#: one core: orders of magnitude, enough to tell a minute from a second.
STEP_RATE, FLOP_RATE = 1e8, 3e10


def sca_fit(X, seed, k=None, ensemble=None):
    """The system under test, in one place: the estimator with its defaults.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Raw rows.
    seed : int
        ``random_state``.
    k : int, default=None
        ``n_clusters``; None lets the estimator choose.
    ensemble : list of dict or callable, default=None
        ``ensemble``, or ``ensemble(n)`` giving it for n rows; None: the
        default ensemble.

    Returns
    -------
    k : int
    labels : ndarray of shape (n_samples,)
    """
    if callable(ensemble):
        ensemble = ensemble(len(X))
    est = sca.StochasticClustering(n_clusters=k, random_state=seed, ensemble=ensemble).fit(X)
    return est.n_clusters_, est.labels_


def standardises() -> bool:
    """Whether the estimator's default scales raw columns; every method then gets
    the same standardised rows."""
    return sca.options.OPTIONS["scale"].default == "standard"


def expected_seconds(method: str, n: int, d: int, kmax: int) -> float:
    """The order of magnitude of a peer's time on an n x d case, on one core.

    One k-means start (or one EM run) at k counts n d k steps (n d^2 k for a
    full-covariance mixture), at :data:`STEP_RATE` per second; products of
    one-hot labels count their flops, at :data:`FLOP_RATE`.  Over k = 1 ...
    kmax, k sums to kmax (kmax + 1) / 2.
    """
    d = min(n, d)
    ks = kmax * (kmax + 1) / 2
    if method in ("gap", "sil+gap"):  # data and 10 references, 3 starts each
        steps, flops = 3 * 11 * n * d * ks, 0.0
    elif method == "gmm-bic":
        steps, flops = 2 * n * d * (d if d <= n / 5 else 1) * ks, 0.0
    elif method == "monti":
        m = min(n, 2000)
        steps, flops = 25 * 0.8 * m * d * ks, 2 * 25 * m * m * ks
    elif method == "EA":
        k = 0.75 * np.sqrt(n)
        steps, flops = 50 * n * d * k, 2 * 50 * k * n * n
    else:  # HDBSCAN: neighbour queries, at worst n^2 d
        steps, flops = 0.0, n * n * d
    return steps / STEP_RATE + flops / FLOP_RATE


def unsplit(truth: np.ndarray, labels: np.ndarray, blocks: int = 2) -> bool:
    """Whether each of the ``blocks`` largest true blocks has UNSPLIT_SHARE of its
    rows in one cluster."""
    names, sizes = np.unique(truth, return_counts=True)
    for name in names[np.argsort(-sizes)[:blocks]]:
        _, counts = np.unique(labels[truth == name], return_counts=True)
        if counts.max() < UNSPLIT_SHARE * counts.sum():
            return False
    return True


def score_case(
    kind: str, name: str, seed: int, X: np.ndarray, truth: np.ndarray, ensemble=None
) -> dict:
    """One case through every method (sca with ``ensemble``, None for the default):
    the row of the table."""
    if standardises():
        from sklearn.preprocessing import StandardScaler

        X = StandardScaler().fit_transform(X)
    n, d = X.shape
    k_true = int(np.unique(truth).size)
    kmax = k_max(n)
    row = {"kind": kind, "name": name, "seed": seed, "n": n, "k_true": k_true, "methods": {}}

    gap = {}

    def gap_then(pick):
        if "g" not in gap:
            t = time.perf_counter()
            gap["g"] = gap_statistic(X, seed, kmax)
            gap["seconds"] = time.perf_counter() - t
        return pick(gap["g"])

    def record(method, fit):
        if method != "sca" and expected_seconds(method, n, d, kmax) > SECONDS_LIMIT:
            return
        t = time.perf_counter()
        k, labels = fit()
        seconds = time.perf_counter() - t
        if method == "sil+gap":  # it reuses the gap statistic: its time counts too
            seconds += gap["seconds"]
        row["methods"][method] = {
            "k": int(k),
            "ari": float(adjusted_rand_score(truth, labels)),
            "seconds": seconds,
            "unsplit": bool(k <= k_true and unsplit(truth, np.asarray(labels))),
        }

    record("sca", lambda: sca_fit(X, seed, ensemble=ensemble))
    try:
        told = sca_fit(X, seed, k=k_true, ensemble=ensemble)[1]
        row["sca_ari_true"] = float(adjusted_rand_score(truth, told))
    except sca.IterationError:  # no start settled at the true k: the cell shows nan
        row["sca_ari_true"] = float("nan")
    record("gap", lambda: gap_then(gap_k))
    record("sil+gap", lambda: gap_then(lambda g: sil_gap_k(X, g)))
    for method, peer in (
        ("gmm-bic", gmm_bic),
        ("hdbscan", hdbscan),
        ("monti", monti),
        ("EA", evidence_accumulation),
    ):
        record(method, lambda peer=peer: peer(X, seed, kmax))
    return row


#: The table's columns after the case and seed: title and width.
COLUMNS = [("n", 5), ("true", 4), ("sca k", 5), ("ARI", 5), ("ARI@k", 5), ("sca s", 5)] + [
    col for method in METHODS[1:] for col in ((method, max(4, len(method))), ("ARI", 5))
]


def header() -> str:
    return f"{'case':<30} {'seed':>4} " + " ".join(f"{t:>{w}}" for t, w in COLUMNS)


def _cells(row: dict) -> str:
    m = row["methods"]
    values = [row["n"], row["k_true"], m["sca"]["k"], m["sca"]["ari"], row["sca_ari_true"]]
    values.append(m["sca"]["seconds"])
    for method in METHODS[1:]:
        values += [m[method]["k"], m[method]["ari"]] if method in m else [None, None]
    cells = []
    for value, (title, width) in zip(values, COLUMNS, strict=True):
        if value is None:
            cells.append(f"{'-':>{width}}")
        elif isinstance(value, int):
            cells.append(f"{value:>{width}}")
        else:
            cells.append(f"{value:>{width}.{1 if title == 'sca s' else 2}f}")
    return f"{row['name']:<30} {row['seed']:>4} " + " ".join(cells)


def summary(rows: list[dict]) -> list[dict]:
    """Per method: what the rows say, computed from them alone.

    ``k right`` counts k = true k over every case; ``k=1 none`` k = 1 on the
    structureless cases; ``weak <= planted`` k <= true k on weak structure;
    ``unequal unsplit`` k <= true k with the two largest blocks not split;
    ``real ARI`` the mean ARI on the real sets with the automatic k (and
    sca's at the true k); ``seconds`` the total time (sil+gap's includes the
    gap statistic it reuses).  Each count is over the cases the method ran on.
    """

    def count(method, kind, test):
        ran = [r for r in rows if (kind is None or r["kind"] == kind) and method in r["methods"]]
        return sum(test(r, r["methods"][method]) for r in ran), len(ran)

    out = []
    for method in METHODS:
        real = [r for r in rows if r["kind"] == REAL and method in r["methods"]]
        out.append(
            {
                "method": method,
                "k right": count(method, None, lambda r, m: m["k"] == r["k_true"]),
                "k=1 none": count(method, STRUCTURELESS, lambda r, m: m["k"] == 1),
                "weak <= planted": count(method, WEAK, lambda r, m: m["k"] <= r["k_true"]),
                "unequal unsplit": count(method, UNEQUAL, lambda r, m: m["unsplit"]),
                "real ARI": np.mean([r["methods"][method]["ari"] for r in real]) if real else None,
                "real ARI true k": np.mean([r["sca_ari_true"] for r in real])
                if method == "sca" and real
                else None,
                "seconds": sum(
                    r["methods"][method]["seconds"] for r in rows if method in r["methods"]
                ),
            }
        )
    return out


def _format(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, tuple):
        return f"{value[0]}/{value[1]}"
    if isinstance(value, float | np.floating):
        return f"{value:.3f}" if value < 10 else f"{value:.0f}"
    return str(value)


def print_summary(rows: list[dict], markdown: bool) -> None:
    table = summary(rows)
    keys = list(table[0])
    if markdown:
        print("| " + " | ".join(keys) + " |")
        print("| " + " | ".join("---" for _ in keys) + " |")
        for entry in table:
            print("| " + " | ".join(_format(entry[key]) for key in keys) + " |")
        return
    widths = [max(len(key), 9) for key in keys]
    print(" ".join(f"{key:>{w}}" for key, w in zip(keys, widths, strict=True)))
    for entry in table:
        print(" ".join(f"{_format(entry[k]):>{w}}" for k, w in zip(keys, widths, strict=True)))


def run(quick: bool, seeds: int, markdown: bool, ensemble=None, names=()) -> list[dict]:
    """Every raw case (or those whose name contains one of ``names``) through every
    method, sca with ``ensemble`` (None: the default); prints the table, then the
    summary."""
    rows_how = "standardised (StandardScaler)" if standardises() else "as given"
    print(
        f"raw data, rows {rows_how} for every method; kinds: {', '.join(KINDS)}; "
        f"ARI@k: sca told the true k; '-': skipped, expected above {SECONDS_LIMIT:.0f} s",
        flush=True,
    )
    if ensemble is not None:
        print(f"sca's ensemble: {ensemble.__doc__ if callable(ensemble) else ensemble}", flush=True)
    print(header(), flush=True)
    rows = []
    for kind, name, seed, X, truth in raw_cases(quick, seeds):
        if names and not any(part in name for part in names):
            continue
        row = score_case(kind, name, seed, X, truth, ensemble)
        rows.append(row)
        print(_cells(row), flush=True)
    print()
    print_summary(rows, markdown)
    return rows
