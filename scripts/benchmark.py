"""Speed, memory and accuracy of the stages on planted partitions, with peers.

For each n, a consensus of r label runs (planted blocks, each run relabelling
a ``noise`` fraction of elements at random) goes through the factored
pipeline: build S = H H^T, balance, spectrum, iteration.  In the same run and
on the same consensus, where it fits in memory, scikit-learn's
``SpectralClustering(affinity="precomputed")`` with the true k and
average-linkage evidence accumulation (scipy) are timed and scored.

Each size runs in a fresh process so the peak memory is its own; a small
warm-up pass first takes imports and thread-pool start-up out of the timings
of both the package and its peers.

    python scripts/benchmark.py                      # n = 1e3, 1e4, 1e5, 1e6
    python scripts/benchmark.py --sizes 1000 10000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc

import numpy as np

from shared import PEER_MAX_N, spectral_clustering


def _peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def warm_up(blocks: int, runs: int, seed: int) -> None:
    """One small pass through every timed code path (imports, thread pools)."""
    import sca
    from sca.planted import planted_runs, planted_truth

    rng = np.random.default_rng(seed)
    truth = planted_truth(300, [1] * blocks, rng)
    S = sca.membership_operator(planted_runs(truth, runs, 0.5, rng))
    P = sca.balance(S).P
    sca.iterate(P, sca.spectrum(P).k, seed=seed)
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
    import sca
    from sca.planted import planted_runs, planted_truth
    from sklearn.metrics import adjusted_rand_score

    warm_up(blocks, runs, seed)
    rng = np.random.default_rng(seed)
    sizes = list(range(1, blocks + 1)) if unequal else [1] * blocks
    truth = planted_truth(n, sizes, rng)
    labels = planted_runs(truth, runs, noise, rng)
    out = {"n": n, "runs": runs, "blocks": blocks, "unequal": unequal,
           "rss_before_gib": _peak_rss_gib()}
    S, *_, times = run_stages(labels, seed)
    from sca.null import noise_floor  # the k rule's own cost: its null draws
    t = time.perf_counter()
    noise_floor(S, seed)
    times["k_rule"] = time.perf_counter() - t
    del S, _  # the results are dropped before the second pass
    # Memory in a second pass: tracemalloc slows allocation-heavy code, so
    # it is never on while timing.
    tracemalloc.start()
    S, balanced, spec, result, _ = run_stages(labels, seed)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    times["stages"] = times["balancing"] + times["spectral"] + times["iteration"]
    out.update({
        "seconds": {k: round(v, 3) for k, v in times.items()},
        "peak_traced_gib": round(peak / 2**30, 3),
        "peak_rss_gib": round(_peak_rss_gib(), 3),
        "k": spec.k, "perron_k": sca.perron_cluster(spec.eigenvalues),
        "balancing_iterations": balanced.iterations, "iterations": result.iterations,
        "ari": round(float(adjusted_rand_score(truth, result.labels)), 4),
    })
    if n <= PEER_MAX_N:
        out["peers"] = peers(S.to_dense(), truth, runs, blocks, seed)
    return out


def peers(S: np.ndarray, truth: np.ndarray, runs: int, k: int, seed: int) -> dict:
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform
    from sklearn.metrics import adjusted_rand_score

    result = {}
    t = time.perf_counter()
    labels = spectral_clustering(S, k, seed)
    result["spectral_clustering"] = {"seconds": round(time.perf_counter() - t, 3),
                                     "ari": round(float(adjusted_rand_score(truth, labels)), 4)}
    t = time.perf_counter()
    D = 1.0 - S / runs
    np.fill_diagonal(D, 0.0)
    tree = linkage(squareform(D, checks=False), method="average")
    labels = fcluster(tree, k, criterion="maxclust")
    result["average_linkage"] = {"seconds": round(time.perf_counter() - t, 3),
                                 "ari": round(float(adjusted_rand_score(truth, labels)), 4)}
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**3, 10**4, 10**5, 10**6])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--noise", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, default=1, help="seeds per size (median shown)")
    parser.add_argument("--unequal", action="store_true", help="blocks of sizes 1:2:...:k")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one_size(args.one, args.runs, args.blocks, args.noise, args.seed,
                                  args.unequal)))
        return 0
    print(f"planted partitions: {args.blocks} {'unequal' if args.unequal else 'equal'} blocks, "
          f"r = {args.runs} runs, noise {args.noise}; median of {args.repeats} seed(s)")
    header = (f"{'n':>9} {'build':>7} {'balance':>8} {'spectral':>9} {'iterate':>8} "
              f"{'stages':>7} {'k rule':>7} {'peakGiB':>8} {'rssGiB':>7} {'k':>3} {'ARI':>6} | "
              f"{'SC s':>7} {'SC ARI':>6} {'ratio':>6} | {'avg-link s':>10} {'AL ARI':>6}")
    print(header)
    for n in args.sizes:
        rows = []
        for rep in range(args.repeats):
            cmd = [sys.executable, __file__, "--one", str(n), "--runs", str(args.runs),
                   "--blocks", str(args.blocks), "--noise", str(args.noise),
                   "--seed", str(args.seed + rep)] + (["--unequal"] if args.unequal else [])
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        med = lambda f: statistics.median(f(r) for r in rows)  # noqa: E731
        sec = lambda key: med(lambda r: r["seconds"][key])  # noqa: E731
        line = (f"{n:>9} {sec('build'):>7.3f} {sec('balancing'):>8.3f} {sec('spectral'):>9.3f} "
                f"{sec('iteration'):>8.3f} {sec('stages'):>7.3f} "
                f"{100 * med(lambda r: r['seconds']['k_rule'] / r['seconds']['stages']):>6.0f}% "
                f"{med(lambda r: r['peak_traced_gib']):>8.3f} "
                f"{med(lambda r: r['peak_rss_gib']):>7.3f} {med(lambda r: r['k']):>3.0f} "
                f"{med(lambda r: r['ari']):>6.3f} |")
        if "peers" in rows[0]:
            sc = med(lambda r: r["peers"]["spectral_clustering"]["seconds"])
            line += (f" {sc:>7.3f} {med(lambda r: r['peers']['spectral_clustering']['ari']):>6.3f}"
                     f" {sc / sec('stages'):>6.1f} |"
                     f" {med(lambda r: r['peers']['average_linkage']['seconds']):>10.3f}"
                     f" {med(lambda r: r['peers']['average_linkage']['ari']):>6.3f}")
        else:
            line += f" {'-':>7} {'-':>6} {'-':>6} | {'-':>10} {'-':>6}"
        print(line, flush=True)
    print("stages = balancing + spectral + iteration (from label runs); build = H from labels;"
          " k rule = the noise floor's null draws (inside spectral), as a share of stages;"
          " peakGiB = tracemalloc peak of build+stages; rssGiB = process peak RSS;"
          " ratio = SpectralClustering seconds / stages seconds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
