"""The first job of a fresh process against a later one (``benchmark.py --first-job``).

Each case runs in a fresh process (``python first_job.py --one ...``), with
``NUMBA_CACHE_DIR`` either empty (a new container, a fresh install whose
package folder is not writable, a new worker) or as the cases before left it
(warm disk cache), and with or without :func:`sca.warm` before the first job
(what a Celery worker process, the embedded default and ``sca warm`` at image
build do).  The job: ``sca.run_stages`` on the label operator of ``--runs``
planted runs of ``n`` elements in ``--blocks`` blocks, three times; wall and
CPU seconds (every thread of the process and of its worker processes) of
the warm-up, of the first job and of the later ones (median) are printed
with the first job's excess over a later one.

    python scripts/benchmark.py --first-job
    python scripts/first_job.py --n 100000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from shared import timed

#: (disk cache, warm-up) of each case, in the order they run: the empty cache
#: is filled by the case that uses it.
CASES = (("empty", False), ("warm", False), ("empty", True), ("warm", True))
#: Jobs per process: the first, then the later ones.
JOBS = 3


def one(n: int, runs: int, blocks: int, warm: bool) -> dict:
    """This process's warm-up (when asked) and its jobs' wall and CPU seconds."""
    import numpy as np

    import sca
    from sca.planted import planted_runs, planted_truth

    rng = np.random.default_rng(0)
    labels = planted_runs(planted_truth(n, [1] * blocks, rng), runs, 0.5, rng)
    out = {"warm-up": timed(sca.warm) if warm else None, "jobs": []}
    for _ in range(JOBS):
        out["jobs"].append(
            timed(lambda: sca.run_stages(sca.membership_operator(labels), {"seed": 0}, {}))
        )
    return out


def run_cases(n: int, runs: int, blocks: int) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as warm_dir:
        for cache, warm in CASES:
            with tempfile.TemporaryDirectory() as empty_dir:
                # The first case starts on the warm cases' directory while it is
                # still empty, and fills it.
                first = cache == "empty" and not warm
                directory = warm_dir if cache == "warm" or first else empty_dir
                env = dict(os.environ, NUMBA_CACHE_DIR=directory)
                command = [sys.executable, __file__, "--one", str(n), "--runs", str(runs)]
                command += ["--blocks", str(blocks)] + (["--warm"] if warm else [])
                proc = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
                rows.append({"cache": cache, "warm": warm, **json.loads(proc.stdout)})
    return rows


def _pair(seconds) -> str:
    return "-" if seconds is None else f"{seconds[0]:6.2f} / {seconds[1]:5.2f}"


def report(rows: list[dict], n: int, runs: int, blocks: int) -> None:
    print(
        f"first job of a fresh process: n = {n}, r = {runs} runs, {blocks} blocks; "
        f"seconds wall / CPU"
    )
    print(
        f"{'disk cache':10s} {'sca.warm':8s} {'warm-up':>14s} {'first job':>14s} "
        f"{'later job':>14s} {'excess CPU':>10s} {'first/later':>11s}"
    )
    for row in rows:
        first, later = row["jobs"][0], row["jobs"][1:]
        median = (
            statistics.median(w for w, _ in later),
            statistics.median(c for _, c in later),
        )
        print(
            f"{row['cache']:10s} {'yes' if row['warm'] else 'no':8s} {_pair(row['warm-up']):>14s} "
            f"{_pair(first):>14s} {_pair(median):>14s} {first[1] - median[1]:10.2f} "
            f"{first[0] / median[0]:11.2f}"
        )
    print(
        "disk cache = NUMBA_CACHE_DIR empty, or as the first case left it; sca.warm = "
        "the warm-up before the first job (as a worker process does); excess CPU = first "
        "job's CPU - later job's; first/later = wall ratio"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.runs, args.blocks, args.warm)))
        return 0
    report(run_cases(args.n, args.runs, args.blocks), args.n, args.runs, args.blocks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
