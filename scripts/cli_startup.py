"""How long the ``sca`` command takes to answer ``--help`` (target: under 0.3 s wall).

    python scripts/cli_startup.py [--repeats 20]

Runs the installed console script (beside this Python) and, as the peer in
the same run, a bare ``python -c pass``; prints the median and the fastest
wall time of each, then the ten slowest imports of ``sca cluster --help``
from ``python -X importtime``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

SCA = str(Path(sys.executable).with_name("sca"))


def wall(argv: list[str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return times


def slowest_imports(argv: list[str], count: int = 10) -> list[tuple[float, str]]:
    code = f"import sys; sys.argv = {argv!r}; from sca.cli import main; main(sys.argv[1:])"
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True
    ).stderr
    rows = []
    for line in err.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|(\s*)(\S+)", line)
        if match and len(match.group(2)) <= 2:  # top-level imports only
            rows.append((int(match.group(1)) / 1e6, match.group(3)))
    return sorted(rows, reverse=True)[:count]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=20)
    args = p.parse_args()
    cases = [
        ("python -c pass (peer)", [sys.executable, "-c", "pass"]),
        ("sca --help", [SCA, "--help"]),
        ("sca cluster --help", [SCA, "cluster", "--help"]),
        ("sca custom --help", [SCA, "custom", "--help"]),
    ]
    print(f"{'command':<24} {'median s':>9} {'fastest s':>10}  ({args.repeats} runs each)")
    for name, argv in cases:
        times = wall(argv, args.repeats)
        print(f"{name:<24} {statistics.median(times):9.3f} {min(times):10.3f}")
    print("\nslowest top-level imports of `sca cluster --help` (cumulative s):")
    for seconds, module in slowest_imports(["sca", "cluster", "--help"]):
        print(f"  {seconds:7.4f}  {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
