"""Write the README's example files in data/examples/ (deterministic; a few seconds).

- ``S.csv``: the paper's baseball consensus, copied from data/baseball/S.csv.
- ``runs.csv``: label runs of the 38 leukemia patients (data/leukemia/X.csv):
  NMF (multiplicative updates) with k = 3, 20 runs (sca.ensemble_labels, seed 1),
  one row per patient, one column per run.
- ``patients.txt``: the patients' sample names (data/leukemia/samples.csv), one per line,
  in the rows' order.

Run from the repository root: ``python scripts/make_examples.py``.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np

import sca

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
OUT = DATA / "examples"
ENSEMBLE = [{"algorithm": "nmf", "k": [3], "runs": 20}]
SEED = 1


def main() -> None:
    OUT.mkdir(exist_ok=True)
    shutil.copyfile(DATA / "baseball" / "S.csv", OUT / "S.csv")
    X = np.loadtxt(DATA / "leukemia" / "X.csv", delimiter=",", skiprows=1, ndmin=2)
    runs = sca.ensemble_labels(X, ENSEMBLE, seed=SEED)
    np.savetxt(OUT / "runs.csv", runs, fmt="%d", delimiter=",")
    with open(DATA / "leukemia" / "samples.csv", newline="") as f:
        names = [row["sample"] for row in csv.DictReader(f)]
    assert len(names) == runs.shape[0]
    (OUT / "patients.txt").write_text("\n".join(names) + "\n")
    print(f"wrote {OUT}/S.csv, runs.csv ({runs.shape[0]} x {runs.shape[1]}), patients.txt")


if __name__ == "__main__":
    main()
