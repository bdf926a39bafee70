"""Speed, memory and accuracy of the stages on planted partitions, with peers.

For each n, a consensus of r label runs (planted blocks, each run relabelling
a ``noise`` fraction of elements at random) goes through the factored
pipeline: build S = H H^T, balance, spectrum, iteration.  In the same run and
on the same consensus, where it fits in memory, scikit-learn's
``SpectralClustering(affinity="precomputed")`` with the true k and
average-linkage evidence accumulation (scipy) are timed and scored.

Each size runs in a fresh process so the peak memory is its own; a small
warm-up pass first takes imports and thread-pool start-up out of the timings
of both the package and its peers.  Then, for the same labels saved as
``runs.npy``, the whole command ``sca cluster --labels runs.npy`` is timed
in a process of its own (wall time with imports, and its peak RSS).

    python scripts/benchmark.py                      # n = 1e3, 1e4, 1e5, 1e6
    python scripts/benchmark.py --sizes 1000 10000 --repeats 3
    python scripts/benchmark.py --sizes 10000000 --markdown   # README table rows

The first job of a fresh process (``--first-job``, :mod:`first_job`): with an
empty and a warm numba disk cache, with and without :func:`sca.warm` first,
wall and CPU seconds of the first job beside a later one (n = 10^5 unless
``--sizes`` names one).

    python scripts/benchmark.py --first-job

Raw-data rows (``--raw``): the whole default job on raw data,
``sca.StochasticClustering(random_state=0).fit(X)``, on ``make_blobs`` data
(5 clusters) of n x d = 1,000 x 20, 10,000 x 50 and 100,000 x 50, beside a
peer measured in the same process: scikit-learn's ``KMeans`` run once per run
of the default ensemble (``sca.ensemble_spec.default_ensemble(n)``, read when the
benchmark runs), at the same k, one thread per run, one run after the other.
The two alternate, repeat by repeat; medians of wall and CPU seconds (CPU of
every thread of the process and of its worker processes) are printed with the
ratio sca / peer and the target of each size.

    python scripts/benchmark.py --raw
    python scripts/benchmark.py --raw --raw-sizes 1000x20 10000x50 --repeats 5

The k and r axes (``--clusters``, ``--runs-axis``, :mod:`axes`): at n = 10^5
(or the first of ``--sizes``), planted equal blocks, the stages' wall and CPU
seconds, peak RSS, the k found and its ARI for each number of blocks at r =
``--runs``, and for each number of runs at k = ``--blocks``, beside HDBSCAN on
the Hamming distance of the label rows (a subsample) on the same labels.

    python scripts/benchmark.py --clusters 40 200 1000 --runs-axis 100 1000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import axes
import first_job
import numpy as np
from shared import (
    PEER_MAX_N,
    PERFORMANCE_DOC,
    cpu_seconds,
    peak_rss_gib,
    spectral_clustering,
    write_table,
)

#: Above this n the second (tracemalloc) pass and the k rule's separate timing are skipped.
TRACED_MAX_N = 1_000_000
#: Raw-data sizes (n, d) of ``--raw``.
RAW_SIZES = ("1000x20", "10000x50", "100000x50")
#: Clusters of the raw-data blobs.
RAW_CENTERS = 5
#: Wall seconds the whole default job should take at each n of ``--raw``.
RAW_TARGETS = {1_000: 2.0, 10_000: 10.0, 100_000: 90.0}


def warm_up(blocks: int, runs: int, seed: int) -> None:
    """One small pass through every timed code path (imports, thread pools)."""
    import sca
    from sca.operators.kernels import COMPILED_MIN_ROWS
    from sca.planted import planted_runs, planted_truth

    rng = np.random.default_rng(seed)
    # small (numpy kernels, and the peers) and large enough for the compiled ones
    for n in (300, 2 * COMPILED_MIN_ROWS):
        truth = planted_truth(n, [1] * blocks, rng)
        S = sca.membership_operator(planted_runs(truth, runs, 0.5, rng, dtype=np.uint8))
        P = sca.balance(S).P
        sca.iterate(P, sca.spectrum(P).k, seed=seed)
        if n == 300:
            peers(S.to_dense(), truth, runs, blocks, seed)


def run_stages(labels, seed: int):
    """Build S from the labels, then balance, spectrum and iterate (``sca.run_stages``):
    ``(S, balanced, spectrum, result, seconds per stage)``."""
    import sca

    t = time.perf_counter()
    S = sca.membership_operator(labels)
    times = {"build": time.perf_counter() - t}
    balanced, spec, result, times = sca.run_stages(S, {"seed": seed}, times)
    return S, balanced, spec, result, times


def one_size(n: int, runs: int, blocks: int, noise: float, seed: int, unequal: bool) -> dict:
    from sklearn.metrics import adjusted_rand_score

    import sca
    from sca.planted import planted_runs, planted_truth

    warm_up(blocks, runs, seed)
    rng = np.random.default_rng(seed)
    sizes = list(range(1, blocks + 1)) if unequal else [1] * blocks
    truth = planted_truth(n, sizes, rng)
    labels = planted_runs(truth, runs, noise, rng, dtype=np.uint8)  # one byte per label
    out = {
        "n": n,
        "runs": runs,
        "blocks": blocks,
        "unequal": unequal,
        "rss_before_gib": peak_rss_gib(),
    }
    S, balanced, spec, result, times = run_stages(labels, seed)
    peak = None
    if n <= TRACED_MAX_N:
        from sca.null import noise_floor  # the k rule's own cost: its null draws

        t = time.perf_counter()
        noise_floor(S, seed)
        times["k_rule"] = time.perf_counter() - t
        del S, balanced, spec, result  # the results are dropped before the second pass
        # Memory in a second pass: tracemalloc slows allocation-heavy code, so
        # it is never on while timing.
        tracemalloc.start()
        S, balanced, spec, result, _ = run_stages(labels, seed)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    times["stages"] = times["balancing"] + times["spectral"] + times["iteration"]
    out.update(
        {
            "seconds": {k: round(v, 3) for k, v in times.items()},
            "peak_traced_gib": None if peak is None else round(peak / 2**30, 3),
            "peak_rss_gib": round(peak_rss_gib(), 3),
            "k": spec.k,
            "perron_k": sca.perron_cluster(spec.eigenvalues),
            "balancing_iterations": balanced.iterations,
            "iterations": result.iterations,
            "ari": round(float(adjusted_rand_score(truth, result.labels)), 4),
        }
    )
    if n <= PEER_MAX_N:
        out["peers"] = peers(S.to_dense(), truth, runs, blocks, seed)
    del S, balanced, spec, result
    out["cli"] = cli(labels, truth, seed)
    return out


def cli(labels: np.ndarray, truth: np.ndarray, seed: int) -> dict:
    """``sca cluster --labels runs.npy`` in a process of its own: wall seconds
    (imports included), peak RSS, k and ARI of what it printed."""
    from sklearn.metrics import adjusted_rand_score

    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "runs.npy", Path(tmp) / "out.json"
        np.save(path, labels)
        # The console script's own code, which then reports the process's VmHWM: a
        # forked child's ru_maxrss would count this (large) parent's pages too.
        code = (
            "import atexit, re, sys\n"
            "atexit.register(lambda: sys.stderr.write('VmHWM ' + re.search("
            "r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1) + '\\n'))\n"
            "from sca.cli import main\n"
            f"sys.argv = ['sca', 'cluster', '--labels', {str(path)!r}, '--seed', '{seed}']\n"
            "sys.exit(main())\n"
        )
        t = time.perf_counter()
        with open(out, "w") as fp:
            proc = subprocess.run(
                [sys.executable, "-c", code], stdout=fp, stderr=subprocess.PIPE, text=True
            )
        wall = time.perf_counter() - t
        if proc.returncode != 0:
            raise RuntimeError(f"sca cluster failed: {proc.stderr[-2000:]}")
        rss = int(proc.stderr.split("VmHWM ")[-1].split()[0]) * 1024
        result = json.loads(out.read_text())
    return {
        "seconds": round(wall, 3),
        "rss_gib": round(rss / 2**30, 3),
        "k": result["k"],
        "ari": round(float(adjusted_rand_score(truth, result["labels"])), 4),
    }


def peers(S: np.ndarray, truth: np.ndarray, runs: int, k: int, seed: int) -> dict:
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform
    from sklearn.metrics import adjusted_rand_score

    result = {}
    t = time.perf_counter()
    labels = spectral_clustering(S, k, seed)
    result["spectral_clustering"] = {
        "seconds": round(time.perf_counter() - t, 3),
        "ari": round(float(adjusted_rand_score(truth, labels)), 4),
    }
    t = time.perf_counter()
    D = 1.0 - S / runs
    np.fill_diagonal(D, 0.0)
    tree = linkage(squareform(D, checks=False), method="average")
    labels = fcluster(tree, k, criterion="maxclust")
    result["average_linkage"] = {
        "seconds": round(time.perf_counter() - t, 3),
        "ari": round(float(adjusted_rand_score(truth, labels)), 4),
    }
    return result


def summary(n: int, rows: list) -> dict:
    """Medians over the repeats of one size."""

    def med(f):
        values = [f(r) for r in rows]
        return None if any(v is None for v in values) else statistics.median(values)

    out = {"n": n, "repeats": len(rows)}
    for key in ("build", "balancing", "spectral", "iteration", "stages"):
        out[key] = med(lambda r: r["seconds"][key])
    out["k_rule_share"] = med(
        lambda r: (
            r["seconds"].get("k_rule", None) and r["seconds"]["k_rule"] / r["seconds"]["stages"]
        )
    )
    out["traced_gib"] = med(lambda r: r["peak_traced_gib"])
    out["rss_gib"] = med(lambda r: r["peak_rss_gib"])
    out["k"], out["ari"] = med(lambda r: r["k"]), med(lambda r: r["ari"])
    out["cli_seconds"], out["cli_rss_gib"] = (
        med(lambda r: r["cli"]["seconds"]),
        med(lambda r: r["cli"]["rss_gib"]),
    )
    out["cli_k"], out["cli_ari"] = med(lambda r: r["cli"]["k"]), med(lambda r: r["cli"]["ari"])
    if "peers" in rows[0]:
        for peer in ("spectral_clustering", "average_linkage"):
            out[peer] = med(lambda r: r["peers"][peer]["seconds"])
            out[peer + "_ari"] = med(lambda r: r["peers"][peer]["ari"])
        out["ratio"] = out["spectral_clustering"] / out["stages"]
    return out


MARKDOWN_HEADER = (
    "| n | build | balancing | spectral | iteration | stages | k rule | peak traced | peak RSS "
    "| k | ARI | SpectralClustering s (ARI) | ratio | average linkage s (ARI) "
    "| sca cluster s | sca cluster RSS |\n"
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
    "| ---: | ---: | ---: |"
)
_POWERS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _fmt(value, spec=".3f", suffix=""):
    return "—" if value is None else f"{value:{spec}}{suffix}"


def markdown_row(row: dict) -> str:
    exponent = len(str(row["n"])) - 1
    n = f"10{str(exponent).translate(_POWERS)}" if row["n"] == 10**exponent else str(row["n"])
    cells = [n] + [
        _fmt(row[key]) for key in ("build", "balancing", "spectral", "iteration", "stages")
    ]
    cells += [
        _fmt(None if row["k_rule_share"] is None else 100 * row["k_rule_share"], ".0f", "%"),
        _fmt(row["traced_gib"], ".3f", " GiB"),
        _fmt(row["rss_gib"], ".2f", " GiB"),
        _fmt(row["k"], ".0f"),
        _fmt(row["ari"]),
    ]
    if "ratio" in row:
        cells += [
            f"{row['spectral_clustering']:.3g} ({row['spectral_clustering_ari']:.3f})",
            f"{row['ratio']:.1f}×",
            f"{row['average_linkage']:.3g} ({row['average_linkage_ari']:.3f})",
        ]
    else:
        cells += ["—", "—", "—"]
    cells += [_fmt(row["cli_seconds"], ".2f"), _fmt(row["cli_rss_gib"], ".2f", " GiB")]
    return "| " + " | ".join(cells) + " |"


def text_row(row: dict) -> str:
    return "  ".join(
        f"{key}={_fmt(value, '.4g') if isinstance(value, float) else value}"
        for key, value in row.items()
    )


def _raw_size(text: str) -> tuple[int, int]:
    """``"10000x50"`` as ``(10000, 50)``."""
    try:
        n, d = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N x D as 10000x50, got {text!r}") from None
    return n, d


def _timed(fn) -> dict:
    t, c = time.perf_counter(), cpu_seconds()
    out = fn()
    return {"wall": time.perf_counter() - t, "cpu": cpu_seconds() - c, "out": out}


def raw_peer(X: np.ndarray, seed: int) -> int:
    """scikit-learn's KMeans once per run of the default ensemble, at the run's k,
    one BLAS/OpenMP thread, one run after the other; returns the number of runs."""
    from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_limits

    import sca.ensemble_spec

    plan = sca.ensemble_spec.ensemble_plan(sca.ensemble_spec.default_ensemble(X.shape[0]), seed)
    with threadpool_limits(limits=1):
        for run in plan:
            KMeans(n_clusters=run["k"], n_init=1, random_state=run["seed"]).fit(X)
    return len(plan)


def raw_one(n: int, d: int, repeats: int, seed: int) -> dict:
    """The default job and its peer on ``make_blobs`` data, alternately."""
    from sklearn.datasets import make_blobs
    from sklearn.metrics import adjusted_rand_score

    import sca

    X, truth = make_blobs(n_samples=n, n_features=d, centers=RAW_CENTERS, random_state=seed)
    # warm-up: imports, thread pools, compiled kernels, and (2,000 rows: work enough,
    # sca.pool.PROCESS_MIN_WORK) the ensemble's worker processes
    small = X[:: max(1, n // 2000)]
    sca.StochasticClustering(random_state=0).fit(small)
    raw_peer(small, seed)
    rows = []
    for _ in range(repeats):
        fit = _timed(lambda: sca.StochasticClustering(random_state=0).fit(X))
        peer = _timed(lambda: raw_peer(X, seed))
        rows.append(
            {
                "sca_wall": fit["wall"],
                "sca_cpu": fit["cpu"],
                "peer_wall": peer["wall"],
                "peer_cpu": peer["cpu"],
                "runs": peer["out"],
                "k": int(fit["out"].n_clusters_),
                "ari": float(adjusted_rand_score(truth, fit["out"].labels_)),
            }
        )
    med = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
    target = RAW_TARGETS.get(n)
    return {
        "n": n,
        "d": d,
        "repeats": repeats,
        "runs": rows[0]["runs"],
        **{key: round(med[key], 3) for key in ("sca_wall", "sca_cpu", "peer_wall", "peer_cpu")},
        "ratio": round(med["sca_wall"] / med["peer_wall"], 3),
        "k": med["k"],
        "ari": round(med["ari"], 4),
        "target": target,
        "met": None if target is None else med["sca_wall"] < target,
    }


RAW_HEADER = (
    "| n × d | runs | sca wall s | sca CPU s | peer wall s | peer CPU s | ratio | k | ARI "
    "| target s | met |\n"
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :--- |"
)


def raw_row(row: dict) -> str:
    met = "—" if row["met"] is None else ("met" if row["met"] else "not met")
    cells = [
        f"{row['n']:,} × {row['d']}",
        str(row["runs"]),
        _fmt(row["sca_wall"], ".2f"),
        _fmt(row["sca_cpu"], ".2f"),
        _fmt(row["peer_wall"], ".2f"),
        _fmt(row["peer_cpu"], ".2f"),
        _fmt(row["ratio"], ".2f"),
        _fmt(row["k"], ".0f"),
        _fmt(row["ari"], ".3f"),
        _fmt(row["target"], ".0f"),
        met,
    ]
    return "| " + " | ".join(cells) + " |"


def raw_main(args, argv) -> int:
    """``--raw``: each size in a process of its own, its repeats alternating."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(
        f"raw data: make_blobs, {RAW_CENTERS} clusters; sca = StochasticClustering"
        f"(random_state=0).fit(X), the default job; peer = KMeans(n_init=1) once per run of"
        f" the default ensemble, one thread, sequential; {cores} core(s); median of"
        f" {args.repeats} alternating repeat(s)",
        flush=True,
    )
    rows = []
    for n, d in args.raw_sizes:
        cmd = [sys.executable, __file__, "--raw-one", f"{n}x{d}", "--repeats", str(args.repeats)]
        cmd += ["--seed", str(args.seed)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    _report(
        "raw",
        [RAW_HEADER, *(raw_row(row) for row in rows)],
        "sca = the whole default job (ensemble, consensus, balancing, spectrum, iteration);"
        " CPU = every thread of the process and of its worker processes; ratio = sca wall /"
        " peer wall; target = wall seconds of the whole default job",
        args,
        argv,
    )
    return 0


def _report(name: str, lines: list, legend: str, args, argv) -> None:
    """Print a table and its legend, and write it into its place with ``--write``."""
    table = "\n".join(lines)
    print()
    print(table)
    print(legend)
    if args.write:
        write_table(args.write, name, table, _command(argv))


def axes_main(args, argv) -> int:
    """``--clusters`` / ``--runs-axis``: each point and repeat in a process of its own."""
    n = args.sizes[0] if "--sizes" in (sys.argv if argv is None else argv) else 100_000
    print(
        f"planted equal blocks at n = {n}, noise {args.noise}: the k axis at r = {args.runs},"
        f" the r axis at k = {args.blocks}; peer = HDBSCAN on the Hamming distance of"
        f" {axes.PEER_ROWS} label rows; median of {args.repeats} seed(s)",
        flush=True,
    )
    rows = []
    for point in axes.points(n, args.runs, args.blocks, args.clusters, args.runs_axis):
        repeats = []
        for rep in range(args.repeats):
            cmd = [sys.executable, __file__, "--axis-one", *map(str, point)]
            cmd += ["--noise", str(args.noise), "--seed", str(args.seed + rep)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
            repeats.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        rows.append(axes.summary(repeats))
        print(json.dumps(rows[-1]), flush=True)
    _report(
        "axes",
        [axes.AXES_HEADER, *(axes.markdown_row(row) for row in rows)],
        "stages = build, balancing, spectrum with the automatic k, iteration (sca.run_stages)"
        " from the label runs; CPU = every thread of the process; RSS = process peak;"
        " HDBSCAN's ARI on its subsample (noise points one cluster)",
        args,
        argv,
    )
    return 0


def _command(argv) -> str:
    """The command line that ran this script (``argv`` or ``sys.argv``), for the page."""
    args = sys.argv[1:] if argv is None else list(argv)
    return " ".join(["python scripts/benchmark.py", *args])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**3, 10**4, 10**5, 10**6])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--noise", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, default=1, help="seeds per size (median shown)")
    parser.add_argument("--unequal", action="store_true", help="blocks of sizes 1:2:...:k")
    parser.add_argument(
        "--markdown", action="store_true", help="print the rows of the README's benchmark table"
    )
    parser.add_argument(
        "--raw", action="store_true", help="only the raw-data rows: the default job and its peer"
    )
    parser.add_argument(
        "--raw-sizes",
        type=_raw_size,
        nargs="+",
        default=[_raw_size(size) for size in RAW_SIZES],
        metavar="NxD",
        help="sizes of the raw-data rows (default: %(default)s)",
    )
    parser.add_argument(
        "--write",
        type=Path,
        nargs="?",
        const=PERFORMANCE_DOC,
        metavar="PAGE",
        help="also write the table into its place in PAGE (default: docs/performance.md)",
    )
    parser.add_argument(
        "--first-job",
        action="store_true",
        help="only the first job of a fresh process against a later one, with an empty "
        "and a warm numba cache (scripts/first_job.py; n = the first of --sizes)",
    )
    parser.add_argument(
        "--clusters",
        type=int,
        nargs="+",
        metavar="K",
        help="the k axis: planted blocks at n = 10^5 (or the first of --sizes), r = --runs",
    )
    parser.add_argument(
        "--runs-axis",
        type=int,
        nargs="+",
        metavar="R",
        help="the r axis: runs at n = 10^5 (or the first of --sizes), k = --blocks",
    )
    parser.add_argument("--axis-one", type=int, nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--raw-one", type=_raw_size, help=argparse.SUPPRESS)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.raw_one:
        print(json.dumps(raw_one(*args.raw_one, args.repeats, args.seed)))
        return 0
    if args.raw:
        return raw_main(args, argv)
    if args.axis_one:
        n, runs, blocks = args.axis_one
        print(json.dumps(axes.one_point(n, runs, blocks, args.noise, args.seed)))
        return 0
    if args.clusters or args.runs_axis:
        return axes_main(args, argv)
    if args.first_job:
        n = args.sizes[0] if "--sizes" in (argv or sys.argv) else 100_000
        first_job.report(first_job.run_cases(n, args.runs, args.blocks), n, args.runs, args.blocks)
        return 0
    if args.one:
        print(
            json.dumps(
                one_size(args.one, args.runs, args.blocks, args.noise, args.seed, args.unequal)
            )
        )
        return 0
    print(
        f"planted partitions: {args.blocks} {'unequal' if args.unequal else 'equal'} blocks, "
        f"r = {args.runs} runs, noise {args.noise}; median of {args.repeats} seed(s)"
    )
    rows_out = []
    for n in args.sizes:
        rows = []
        for rep in range(args.repeats):
            cmd = [
                sys.executable,
                __file__,
                "--one",
                str(n),
                "--runs",
                str(args.runs),
                "--blocks",
                str(args.blocks),
                "--noise",
                str(args.noise),
                "--seed",
                str(args.seed + rep),
            ] + (["--unequal"] if args.unequal else [])
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        rows_out.append(summary(n, rows))
        print(json.dumps(rows_out[-1]), flush=True)
    print()
    if args.markdown or args.write:
        table = "\n".join([MARKDOWN_HEADER, *(markdown_row(row) for row in rows_out)])
        print(table)
        if args.write:
            write_table(args.write, "labels", table, _command(argv))
    else:
        for row in rows_out:
            print(text_row(row))
    print(
        "stages = balancing + spectral + iteration (from label runs); build = the label"
        " operator from the labels; k rule = the noise floor's null draws (inside spectral),"
        " as a share of stages; traced = tracemalloc peak of build+stages; RSS = process"
        " peak; ratio = SpectralClustering seconds / stages seconds; sca cluster = the whole"
        " command on runs.npy (wall, imports included, and its peak RSS)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
