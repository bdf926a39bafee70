"""Constants, data loading, formatting and SCA helpers shared by the sections."""

from __future__ import annotations

import sys
from collections import Counter

from shared import DATA, ROOT, load_labels, load_matrix  # noqa: F401 (used by the sections)

import sca
from sca.errors import IterationError

DEFAULT_OUT = ROOT / "docs" / "paper-reproduction.md"

RUNS = 100  # clusterings per ensemble, as in the paper
IPVS = 100  # random initial probability vectors per leukemia consensus matrix
PAPER_ALGO = {"rule": "perron", "split": "gaps", "starts": 1}
DEFAULT_ALGO = {}  # the package defaults: rule="gap", split="kmeans", starts=1
# the two SCA configurations every ensemble result is reported for
CONFIGS = (("paper", PAPER_ALGO), ("default", DEFAULT_ALGO))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# formatting
# ---------------------------------------------------------------------------
def compact(numbers) -> str:
    """1-based patient numbers in the paper's style: ``1, 3, 5, 7–9, 11–14``."""
    nums = sorted(int(n) for n in numbers)
    if not nums:
        return "–"
    parts, start, prev = [], nums[0], nums[0]
    for n in nums[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        if prev - start >= 2:
            parts.append(f"{start}–{prev}")
        else:
            parts.extend(str(v) for v in range(start, prev + 1))
        if n is not None:
            start = prev = n
    return ", ".join(parts)


def plist(numbers) -> str:
    """A list in its given order: ``29, 19, 4``."""
    return ", ".join(str(int(n)) for n in numbers)


def counts(values) -> str:
    """``value (count×)`` for a list of hashable values, most frequent first."""
    c = Counter(values)
    items = sorted(c.items(), key=lambda kv: (-kv[1], str(kv[0])))
    return ", ".join(f"{v} ({n}×)" for v, n in items)


class Markdown:
    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, text: str = "") -> None:
        self.lines.append(text)

    def table(self, header, rows) -> None:
        self(f"| {' | '.join(header)} |")
        self(f"| {' | '.join('---' for _ in header)} |")
        for row in rows:
            self(f"| {' | '.join(str(c) for c in row)} |")
        self()

    def text(self) -> str:
        return "\n".join(self.lines).rstrip() + "\n"


# ---------------------------------------------------------------------------
# scoring and running the SCA
# ---------------------------------------------------------------------------
def misclustered(labels, truth):
    """1-based numbers of the elements not in their class's matched cluster."""
    mapping = sca.matching(labels, truth)
    return [i + 1 for i in range(len(labels)) if mapping[labels[i]] != truth[i]]


def single_errors(L, truth) -> list[int]:
    """``sca.clustering_errors`` of each of the ``RUNS`` single clusterings (columns) of L."""
    return [sca.clustering_errors(L[:, j], truth) for j in range(RUNS)]


def solution_runs(result, starts):
    """(labels, number of starts) for each distinct solution of an iterate result."""
    return [
        (labels, int(round(freq * (starts - result.failed_starts))))
        for labels, freq in result.solutions
    ]


def run_sca(S, options):
    """Run balancing + spectrum + iteration; ``(spectrum, result)`` or ``(spectrum, None)``."""
    try:
        _, spec, result, _ = sca.run_stages(S, options)
        return spec, result
    except IterationError:
        _, spec = sca.pipeline.prepare(S, options)
        return spec, None
