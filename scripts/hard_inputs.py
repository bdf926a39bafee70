"""The stages on inputs nobody tried: no structure, weak structure, many
clusters and very unequal sizes, from label runs at one n.

For each input, in this process after a warm-up: the automatic k, the ARI
against the planted truth, the iteration's steps and the seconds of each
stage (median of ``--repeats``).  Run it once per version to compare two
versions on the same inputs (the same seed gives the same runs), e.g. the
checkout of another commit first on ``PYTHONPATH``:

    python scripts/hard_inputs.py                      # n = 200,000
    PYTHONPATH=/path/to/other/checkout python scripts/hard_inputs.py
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from sklearn.metrics import adjusted_rand_score

import sca
from sca.planted import planted_runs, planted_truth


def inputs(n: int, runs: int, seed: int):
    """``(name, label runs, truth)`` for each input."""
    rng = np.random.default_rng(seed)
    yield "no structure (random labels)", rng.integers(0, 5, (n, runs)), np.zeros(n, int)
    truth = planted_truth(n, [1, 1, 1], rng)
    yield "weak (3 blocks, 85% of labels random)", planted_runs(truth, runs, 0.85, rng), truth
    truth = planted_truth(n, [1] * 40, rng)
    yield "40 blocks (runs of 40 labels)", planted_runs(truth, runs, 0.5, rng), truth
    sizes = np.array([2000, 500, 100, 30, 10])
    truth = rng.permutation(np.repeat(np.arange(5), np.round(sizes / sizes.sum() * n).astype(int)))
    yield "blocks 2000:500:100:30:10", planted_runs(truth, runs, 0.3, rng), truth


def stages(labels: np.ndarray, seed: int) -> tuple:
    S = sca.membership_operator(labels)
    balanced, spec, result, times = sca.run_stages(S, {"seed": seed}, {})
    return spec.k, result, times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    warm = planted_runs(planted_truth(8192, [1] * 5, rng), 20, 0.5, rng)
    stages(warm, 0)  # imports, compiled kernels, thread pools
    print(f"n = {args.n}, r = {args.runs}, seed {args.seed}; sca from {sca.__file__}")
    print(
        f"{'input':<40} {'k':>3} {'ARI':>6} {'steps':>5} {'balance':>8} {'spectral':>8} "
        f"{'iterate':>8} {'stages':>8}"
    )
    for name, labels, truth in inputs(args.n, args.runs, args.seed):
        seconds = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            k, result, times = stages(labels, args.seed)
            seconds.append((time.perf_counter() - start, times))
        _, times = sorted(seconds, key=lambda pair: pair[0])[len(seconds) // 2]
        ari = adjusted_rand_score(truth, result.labels)
        print(
            f"{name:<40} {k:>3} {ari:>6.3f} {result.iterations:>5} "
            f"{times['balancing']:>8.2f} {times['spectral']:>8.2f} {times['iteration']:>8.2f} "
            f"{statistics.fsum(times[s] for s in ('balancing', 'spectral', 'iteration')):>8.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
