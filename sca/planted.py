"""Planted partitions: label runs with a known truth, for tests and benchmarks.

Each run sees the true blocks through noise: every element keeps its block
with probability ``1 - noise`` and otherwise gets a uniformly random label;
a run may also split or merge blocks by using ``k_run`` labels.
"""

from __future__ import annotations

import numpy as np


def planted_truth(n: int, sizes, rng: np.random.Generator) -> np.ndarray:
    """Labels of ``n`` elements in blocks of relative ``sizes`` (shuffled)."""
    sizes = np.asarray(sizes, dtype=float)
    counts = np.floor(sizes / sizes.sum() * n).astype(int)
    counts[: n - counts.sum()] += 1
    truth = np.repeat(np.arange(counts.size), counts)
    return rng.permutation(truth)


def planted_runs(
    truth: np.ndarray, runs: int, noise: float, rng: np.random.Generator, dtype=np.int32
) -> np.ndarray:
    """``n x runs`` labels: each run relabels a ``noise`` fraction at random."""
    n, k = truth.size, int(truth.max()) + 1
    labels = np.empty((n, runs), dtype=dtype)
    for j in range(runs):
        run = truth.copy()
        flip = rng.random(n) < noise
        run[flip] = rng.integers(0, k, int(flip.sum()))
        labels[:, j] = rng.permutation(k)[run]
    return labels
