"""Cluster a chunked on-disk label matrix on a dask.distributed LocalCluster.

Writes planted label runs (blocks of equal expected size seen through noise,
as :mod:`sca.planted` plants them) as an npy stack, chunk by chunk on the
workers, starts a LocalCluster, clusters the stack with automatic k
(``sca.run_stages`` on ``sca.membership_operator(da.from_npy_stack(...))``),
writes the labels back as an npy stack beside the input and prints the wall
and CPU time, the client's and each worker's peak RSS, k and the ARI against
the planted truth (from a ``k x k`` table summed over the chunks).  A
worker's peak RSS covers its whole life, the writing of the input included.

    python scripts/scale.py --n 1000000 --runs 100 --dir /tmp/scale

The scheduler of a LocalCluster runs in the client's process: its memory is
counted in the client's peak.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

import numpy as np


def planted_chunk(block, seed: int, index: int, k: int, noise: float, runs: int):
    """Labels of one chunk: ``truth`` in column 0, then ``runs`` noisy runs.

    Every run relabels the blocks by its own permutation, the same in every
    chunk (drawn from ``seed`` alone); the truth and the noise are the chunk's
    own (``seed``, chunk index): :func:`sca.planted.planted_runs` draws both
    for a whole matrix at once, which a chunk cannot."""
    m = block.shape[0]
    relabel = np.random.default_rng(seed).permuted(np.tile(np.arange(k), (runs, 1)), axis=1)
    rng = np.random.default_rng([seed, index])
    truth = rng.integers(0, k, m)
    out = np.empty((m, runs + 1), dtype=np.uint8)
    out[:, 0] = truth
    for j in range(runs):
        run = truth.copy()
        flip = rng.random(m) < noise
        run[flip] = rng.integers(0, k, int(flip.sum()))
        out[:, j + 1] = relabel[j][run]
    return out


def write_input(path: Path, n: int, runs: int, k: int, noise: float, rows: int, seed: int):
    """The planted runs and the truth as npy stacks under ``path`` (computed on the workers)."""
    import dask.array as da

    chunks = (rows,) * (n // rows) + ((n % rows,) if n % rows else ())
    index = da.arange(len(chunks), chunks=1)
    both = da.map_blocks(
        lambda block, i: planted_chunk(block, seed, int(i.ravel()[0]), k, noise, runs),
        da.zeros((n, 1), chunks=(chunks, 1), dtype=np.uint8),
        index[:, None].rechunk((1, 1)),
        chunks=(chunks, (runs + 1,)),
        dtype=np.uint8,
    )
    # one pass writes both stacks (the chunk computed once)
    da.to_npy_stack(str(path / "runs"), both[:, 1:], axis=0)
    da.to_npy_stack(str(path / "truth"), both[:, 0], axis=0)


def ari(table: np.ndarray) -> float:
    """The adjusted Rand index from the contingency table of two clusterings."""

    def pairs(x):
        return float((x * (x - 1) / 2).sum())

    total, rows, cols = pairs(table), pairs(table.sum(axis=1)), pairs(table.sum(axis=0))
    n = table.sum()
    expected = rows * cols / (n * (n - 1) / 2)
    return (total - expected) / (0.5 * (rows + cols) - expected)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--k", type=int, default=5, help="planted blocks (and labels a run)")
    parser.add_argument("--noise", type=float, default=0.3)
    parser.add_argument("--chunk-rows", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="4GiB")
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reuse", action="store_true", help="keep an input already written")
    args = parser.parse_args()

    import dask.array as da
    from dask.distributed import Client, LocalCluster

    import sca

    figures: dict = {"n": args.n, "runs": args.runs, "chunk_rows": args.chunk_rows}
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            memory_limit=args.memory_limit,
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,
    ):
        start = time.perf_counter()
        if not (args.reuse and (args.dir / "runs" / "info").exists()):
            write_input(args.dir, args.n, args.runs, args.k, args.noise, args.chunk_rows, args.seed)
        figures["write_s"] = round(time.perf_counter() - start, 1)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10
        wall, cpu = time.perf_counter(), time.process_time()
        S = sca.membership_operator(da.from_npy_stack(str(args.dir / "runs")))
        balanced, spectrum, result, timings = sca.run_stages(S)
        da.to_npy_stack(str(args.dir / "labels"), result.labels.astype(np.int32), axis=0)
        figures["wall_s"] = round(time.perf_counter() - wall, 1)
        figures["client_cpu_s"] = round(time.process_time() - cpu, 1)
        figures["stages_s"] = {stage: round(sec, 1) for stage, sec in timings.items()}
        figures["client_peak_rss_mib"] = round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10, 1
        )
        figures["client_rss_before_mib"] = round(rss_before, 1)
        figures["worker_peak_rss_mib"] = sorted(
            round(v, 1) for v in client.run(_peak_rss_mib).values()
        )
        figures["k"] = int(spectrum.k)
        figures["balancing_iterations"] = int(balanced.iterations)
        figures["iterations"] = int(result.iterations)
        truth = da.from_npy_stack(str(args.dir / "truth"))
        labels = da.from_npy_stack(str(args.dir / "labels"))
        codes = truth.astype(np.int64) * spectrum.k + labels
        table = da.bincount(codes, minlength=args.k * spectrum.k).compute()
        figures["ari"] = round(ari(table.reshape(args.k, spectrum.k)), 6)
    figures["cpus"] = os.cpu_count()
    print(json.dumps(figures))


def _peak_rss_mib() -> float:
    """This process's peak resident set (a worker's, through ``Client.run``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


if __name__ == "__main__":
    main()
