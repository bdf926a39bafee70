"""Reproduce the results of Meyer & Wessell, "Stochastic Data Clustering", with ``sca``.

Covers the paper's small baseball example (exact), the iris table and the
leukemia DNA microarray results (k = 2, 3, S2 + S3, k = 4 and the custom
cluster of patient 2).  Ensembles are random, so every ensemble-based result
is reported as a distribution over ensemble seeds.  Writes
``docs/paper-reproduction.md``; the output depends only on the seeds (and the
installed numpy / scikit-learn), never on the date or the machine's speed.

Usage::

    python scripts/reproduce_paper.py            # full run (10 iris / 5 leukemia seeds)
    python scripts/reproduce_paper.py --quick    # 5 iris / 2 leukemia seeds

Only files inside this repository are read.  The sections live in the
``reproduce`` package next to this script.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

# the package sets one BLAS / OpenMP thread before numpy is imported
from reproduce.common import DEFAULT_OUT, log
from reproduce.report import report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="fewer seeds (5 for iris, 2 for leukemia)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="markdown output (default docs/paper-reproduction.md)",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    text, lk = report(args.quick)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    log(
        f"wrote {args.out} in {time.perf_counter() - started:.0f} s "
        f"(leukemia ensembles {sum(lk['timings']):.0f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
