"""Regenerate the plots in docs/plots/ for the paper's three examples.

    python scripts/make_plots.py            # PNG into docs/plots/<example>/
    python scripts/make_plots.py --svg      # PNG and SVG

Examples (small ensembles: the whole run takes about half a minute):

* baseball -- the paper's 6 x 6 consensus matrix (Sec. 3), 10 starts, the
  trace recorded, the custom cluster of Rose;
* iris -- 150 flowers, k-means with k = 2, 3, 4, 5 x 20 runs each, 10
  starts, the custom cluster of flower 52 (0-based);
* leukemia -- 38 patients x 5000 genes, NMF with k = 3 and k = 6 x 20 runs
  each (the paper runs 100 per ensemble), 10 starts, the custom cluster of
  patient 2 with 5 to 8 members (Sec. 5.3); ids are the paper's patient
  numbers.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from shared import DATA, ROOT, load_matrix

sys.path.insert(0, str(ROOT))

from sca.pipeline import (
    balance_dict,
    build_operator,
    custom_result,
    result_dict,  # noqa: E402
    run_stages,
    spectrum_dict,
)
from sca.plots import save_plots  # noqa: E402


def examples():
    """``(name, inputs, ids, options, custom query)`` of each example."""
    baseball = DATA / "baseball" / "S.csv"  # the paper's consensus; a header row of ids
    baseball_ids = baseball.read_text().splitlines()[0].split(",")
    leukemia_ids = [
        line.split(",")[1]
        for line in (DATA / "leukemia" / "samples.csv").read_text().splitlines()[1:]
    ]
    yield (
        "baseball",
        {"consensus": load_matrix(baseball)},
        baseball_ids,
        {"starts": 10, "trace": True},
        {"element": "Rose", "min_size": 1, "max_size": 3},
    )
    yield (
        "iris",
        {
            "data": load_matrix(DATA / "iris" / "X.csv"),
            "ensemble": [{"algorithm": "kmeans", "k": [2, 3, 4, 5], "runs": 20}],
        },
        None,
        {"starts": 10, "seed": 1},
        {"element": 52, "min_size": 1, "max_size": None},
    )
    yield (
        "leukemia",
        {
            "data": load_matrix(DATA / "leukemia" / "X.csv"),
            "ensemble": [{"algorithm": "nmf", "k": [3, 6], "runs": 20}],
        },
        leukemia_ids,
        {"starts": 10, "seed": 1},
        {"element": "2", "min_size": 5, "max_size": 8},
    )


def make(name, inputs, ids, options, query, out: Path, formats) -> list[Path]:
    timings: dict = {}
    S, raw = build_operator(seed=options.get("seed", 0), timings=timings, **inputs)
    balanced, spec, result, timings = run_stages(S, options, timings, raw=raw)
    out_result = result_dict(
        S, balanced.P, balance_dict(balanced), spectrum_dict(spec), result, ids, timings
    )
    custom = custom_result(
        balanced.P, query["element"], ids, spec.k, query["min_size"], query["max_size"]
    )
    return save_plots(
        out / name,
        out_result,
        S=S,
        P=balanced.P,
        ids=ids,
        custom=custom,
        formats=formats,
        seed=options.get("seed", 0),
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "plots"))
    parser.add_argument("--svg", action="store_true", help="write SVG beside each PNG")
    args = parser.parse_args(argv)
    formats = ("png", "svg") if args.svg else ("png",)
    for name, inputs, ids, options, query in examples():
        start = time.perf_counter()
        written = make(name, inputs, ids, options, query, Path(args.out), formats)
        print(f"{name}: {len(written)} files in {time.perf_counter() - start:.1f} s")
        for path in written:
            print(f"  {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
