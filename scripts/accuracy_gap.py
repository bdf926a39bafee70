"""The k rule on raw data with and without the gap statistic of the ensemble's runs.

For each input this runs the default ensemble and eight reference data sets
through it once (as ``sca.reference.reference_spectra`` does, eight at
once), records P's eigenvalues and every run's dispersions, and then reads k
off the same records by several rules: the spectrum alone
(``sca.reference.reference_k`` without the statistic), the gap statistic
alone (Tibshirani's rule on the runs), the two as the default combines them
(``sca.reference.gap_choice``) and variants of that combination.  The sets:

- ``small``: 2 to 6 separated 2-D and 3-D blobs of 10 to 30 rows, and
  structureless uniform and Gaussian rows, n = 50 to 200, d = 2, 3, 5;
- ``larger``: structureless uniform rows (n = 300 to 1,000, d = 2, 3, 5),
  Gaussian (10-D), exponential and t3 rows (3-D);
- ``table``: the raw-data cases of ``accuracy.py`` (3 seeds, real sets).

Rows are standardised as the default does.  Prints a line per input
(``--verbose``) and a table of k right per rule and set::

    python scripts/accuracy_gap.py --sets small larger table
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from accuracy_cases import PLANTED, STRUCTURELESS, raw_cases, separated_centers
from sklearn.datasets import make_blobs
from sklearn.preprocessing import StandardScaler

import sca
from sca.ensemble_spec import default_ensemble
from sca.reference import (
    MIN_EFFECT,
    TINY,
    GapStatistic,
    gap_choice,
    level_dispersions,
    levels_of,
    reference_count,
    reference_data,
    reference_k,
    reference_spectrum,
    run_levels,
)

#: Reference data sets per input.
DRAWS = 8


def small_sets():
    """``(kind, name, seed, X, truth)`` of the few-rows inputs."""
    for seed in range(3):
        for k in (2, 3, 4, 5, 6):
            for size in (10, 15, 20, 30):
                for d in (2, 3):
                    centres = separated_centers(k, d, seed + 500)
                    X, y = make_blobs(k * size, centers=centres, random_state=seed)
                    yield PLANTED, f"{k} blobs of {size} d={d}", seed, X, y
        for n in (50, 80, 120, 200):
            for d in (2, 3, 5):
                rng = np.random.default_rng(seed * 100 + n + d)
                yield STRUCTURELESS, f"uniform n={n} d={d}", seed, rng.uniform(size=(n, d)), None
                yield STRUCTURELESS, f"Gaussian n={n} d={d}", seed, rng.normal(size=(n, d)), None


def larger_sets():
    """``(kind, name, seed, X, None)`` of larger structureless inputs."""
    for seed in range(3):
        for n in (300, 500, 1000):
            for d in (2, 3, 5):
                rng = np.random.default_rng(seed * 1000 + n + d)
                yield STRUCTURELESS, f"uniform n={n} d={d}", seed, rng.uniform(size=(n, d)), None
        for n in (300, 1000):
            rng = np.random.default_rng(seed * 1000 + n)
            yield STRUCTURELESS, f"Gaussian n={n} d=10", seed, rng.normal(size=(n, 10)), None
            yield STRUCTURELESS, f"exponential n={n} d=3", seed, rng.exponential(size=(n, 3)), None
            yield STRUCTURELESS, f"t3 n={n} d=3", seed, rng.standard_t(3, size=(n, 3)), None


def table_sets():
    for kind, name, seed, X, y in raw_cases(quick=False, seeds=3):
        yield kind, name, seed, X, None if kind == STRUCTURELESS else y


SETS = {"small": small_sets, "larger": larger_sets, "table": table_sets}


def record(X) -> dict:
    """P's eigenvalues and the runs' dispersions for X and for :data:`DRAWS` references."""
    X = StandardScaler().fit_transform(X)
    ensemble = default_ensemble(X.shape[0])
    levels = run_levels(ensemble)
    S = sca.membership_operator(sca.ensemble_labels(X, ensemble, seed=0))
    rng = np.random.default_rng([0, 0x5EF])
    sub = X if X.shape[0] <= 2000 else X[rng.choice(X.shape[0], 2000, replace=False)]
    count = reference_count(ensemble, sub.shape[0])
    values = sca.balance(S).P.eigenvalues(count, few=count < X.shape[0] - 1)
    refs = [
        reference_spectrum(reference_data(sub, rng), ensemble, int(rng.integers(2**31)), count)
        for _ in range(DRAWS)
    ]
    return {
        "values": values,
        "spectra": np.array([spectrum for spectrum, _ in refs]),
        "gap": GapStatistic.of(
            levels_of(levels),
            level_dispersions(S, X, levels),
            np.array([dispersions for _, dispersions in refs]),
        ),
    }


def _combined(effect=MIN_EFFECT, above=0.0, larger_only=False):
    """The combination with the statistic's k taken only where λ2 ... λk stand
    ``above`` references' standard deviations above their mean (not on a fall
    after λk), with another least effect, or only where larger."""

    def rule(r):
        spectrum_k = reference_k(r["values"], r["spectra"]).k
        gap = r["gap"]
        if larger_only:
            kept = reference_k(r["values"], r["spectra"], gap).k
            return kept if kept > spectrum_k else spectrum_k
        data = np.log(np.maximum(r["values"][: r["spectra"].shape[1]], TINY))
        refs = np.log(np.maximum(r["spectra"], TINY))
        excess = (data - refs.mean(axis=0)) - above * refs.std(axis=0, ddof=1)
        scaled = GapStatistic(gap.k, gap.effect * MIN_EFFECT / effect, gap.levels, gap.gap)
        k = gap_choice(
            scaled, spectrum_k, lambda j: j < excess.size and bool(np.all(excess[1:j] > 0))
        )
        return spectrum_k if k is None else k

    return rule


def _over_no_structure(effect):
    """As kept, and the statistic's k where the spectrum says k = 1 and the runs'
    groups are at least ``effect`` times tighter than the references' cells."""

    def rule(r):
        kept = reference_k(r["values"], r["spectra"], r["gap"]).k
        gap = r["gap"]
        if kept == 1 and gap.k > 1 and gap.effect >= np.log(effect):
            return gap.k
        return kept

    return rule


RULES = {
    "spectrum alone": lambda r: reference_k(r["values"], r["spectra"]).k,
    "gap statistic alone": lambda r: r["gap"].k,
    "as kept (default)": lambda r: reference_k(r["values"], r["spectra"], r["gap"]).k,
    "as kept, gap's k only if larger": _combined(larger_only=True),
    "λ2..λk above the mean only": _combined(),
    "λ2..λk 1 sd above the mean only": _combined(above=1.0),
    "λ2..λk above the mean only, effect 1.65x": _combined(effect=np.log(1.65)),
    "λ2..λk above the mean only, effect 2.7x": _combined(effect=np.log(2.7)),
    "as kept, the statistic's k over k = 1 from 3x": _over_no_structure(3.0),
    "as kept, the statistic's k over k = 1 from 4x": _over_no_structure(4.0),
    "as kept, the statistic's k over k = 1 from 8x": _over_no_structure(8.0),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=sorted(SETS), default=["small"])
    parser.add_argument("--verbose", action="store_true", help="a line per input")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    scores: dict = {}
    for name in args.sets:
        for kind, case, seed, X, y in SETS[name]():
            r = record(X)
            true_k = 1 if y is None else len(np.unique(y))
            found = {rule: RULES[rule](r) for rule in RULES}
            for rule, k in found.items():
                right, total, wrong_none = scores.get((name, rule), (0, 0, 0))
                scores[(name, rule)] = (
                    right + (k == true_k),
                    total + 1,
                    wrong_none + (kind == STRUCTURELESS and k != 1),
                )
            if args.verbose:
                print(
                    f"{name:6s} {case:28s} seed {seed} true {true_k} "
                    + " ".join(f"{k}" for k in found.values()),
                    flush=True,
                )
    print(f"\n| rule | {' | '.join(args.sets)} |")
    print("| --- |" + " --- |" * len(args.sets))
    for rule in RULES:
        cells = []
        for name in args.sets:
            right, total, wrong_none = scores[(name, rule)]
            cells.append(f"{right}/{total} (k > 1 on no structure: {wrong_none})")
        print(f"| {rule} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
