"""Command line: ``sca cluster`` and ``sca custom`` print JSON results.

Examples
--------
sca cluster --data X.csv --ensemble nmf:2,3x50 --ensemble kmeans:3x100 --seed 1
sca cluster --consensus S.csv --split gaps --rule perron --trace
sca custom --data X.csv --ensemble nmf:6x100 --element 2 --min-size 5 --max-size 8
sca cluster --consensus S.csv --starts 20 --plots plots/   # PNG plots beside the JSON
sca submit --url http://127.0.0.1:8000 --consensus S.csv    # on the service (sca.remote)

On a terminal, ``sca cluster`` draws a progress bar by stage on standard error.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

import numpy as np

from .diagnostics import evaluate
from .errors import SCAError
from .io import read_ids, read_matrix_file
from .pipeline import (DEFAULTS, balance_dict, build_operator, check_ids, custom_result, prepare,
                       result_dict, run_stages, spectrum_dict)
from .progress import StageProgress
from .spectral import RULES, check_spectrum_options

SPECTRUM_OPTIONS = ("k", "k_hat", "min_k", "max_k", "rule")

_ENSEMBLE = re.compile(r"^(kmeans|nmf):(\d+(?:,\d+)*)x(\d+)$")


def parse_ensemble(text: str) -> dict:
    """``ALGO:K[,K...]xRUNS`` -> ``{"algorithm", "k", "runs"}``."""
    match = _ENSEMBLE.match(text.strip().lower())
    if not match:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not ALGO:K[,K...]xRUNS with ALGO kmeans or nmf (e.g. nmf:2,3x50)")
    algorithm, ks, runs = match.groups()
    return {"algorithm": algorithm, "k": [int(k) for k in ks.split(",")], "runs": int(runs)}


def add_input_arguments(p: argparse.ArgumentParser) -> None:
    """The input options shared by ``cluster``, ``custom`` and ``submit``."""
    src = p.add_argument_group("input (exactly one of --data, --consensus, --labels)")
    src.add_argument("--data", help="raw data CSV/.npy, rows = elements (a header row is skipped)")
    src.add_argument("--ensemble", action="append", type=parse_ensemble, metavar="ALGO:KxRUNS",
                     help="ensemble on --data, repeatable: kmeans:3x100, nmf:2,3x50")
    src.add_argument("--snn", type=int, metavar="KAPPA",
                     help="shared-nearest-neighbour similarity on --data")
    src.add_argument("--metric", default="euclidean", help="metric for --snn")
    src.add_argument("--consensus", help="consensus matrix S.csv|S.npy|S.npz (CSV header = ids)")
    src.add_argument("--labels", help="label runs RUNS.csv|RUNS.npy, one row per element")
    src.add_argument("--ids", help="file with one element id per line")


def _add_inputs(p: argparse.ArgumentParser) -> None:
    add_input_arguments(p)
    opt = p.add_argument_group("options")
    opt.add_argument("--k", type=int, help="number of clusters (overrides the spectrum)")
    opt.add_argument("--k-hat", type=int, help="number of largest eigenvalues to compute "
                     "(default: all when cheap, else grown until they reach the noise floor)")
    opt.add_argument("--min-k", type=int, default=DEFAULTS["min_k"],
                     help="smallest k the rule may choose")
    opt.add_argument("--max-k", type=int, help="largest k the rule may choose")
    opt.add_argument("--rule", choices=RULES, default=DEFAULTS["rule"],
                     help="k = eigenvalues above the noise floor (noise), the largest gap among "
                     "λ2..λk̂ (gap) or the paper's Perron cluster (perron)")
    opt.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    opt.add_argument("--starts", type=int, default=DEFAULTS["starts"])
    opt.add_argument("--stable", type=int, default=DEFAULTS["stable"])
    opt.add_argument("--max-iterations", type=int, default=DEFAULTS["max_iterations"])
    opt.add_argument("--split", choices=["kmeans", "gaps"], default=DEFAULTS["split"])
    opt.add_argument("--tol", type=float, default=DEFAULTS["tol"], help="balancing tolerance")


def add_commands(sub) -> None:
    """Add ``cluster`` and ``custom`` to an argparse subparsers action."""
    c = sub.add_parser("cluster", help="cluster the elements; prints the result as JSON")
    _add_inputs(c)
    c.add_argument("--trace", action="store_true", help="x_t and its clusters per step")
    c.add_argument("--reconsensus", action="store_true",
                   help="re-cluster the consensus of the starts' solutions until one remains")
    c.add_argument("--truth", help="file of true labels (one per line or CSV with a header)")
    u = sub.add_parser("custom", help="custom cluster of one element; prints JSON")
    _add_inputs(u)
    u.add_argument("--element", required=True, help="element id (or 0-based index)")
    u.add_argument("--min-size", type=int, required=True)
    u.add_argument("--max-size", type=int, required=True)
    u.add_argument("--limit", type=int, help="how many ranked elements to print")
    for command in (c, u):
        command.add_argument("--plots", metavar="DIR",
                             help="also save the plots (sca.plots) in DIR; needs matplotlib")
        command.add_argument("--plot-format", choices=["png", "svg", "both"], default="png")
    from .remote import add_submit_command

    add_submit_command(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sca", description="Stochastic clustering algorithm")
    add_commands(parser.add_subparsers(dest="command", required=True))
    return parser


def read_inputs(args) -> tuple[dict, list | None]:
    inputs, header = {}, None
    if args.data:
        inputs["data"], _ = read_matrix_file(args.data, "data")
        inputs["ensemble"] = args.ensemble
        inputs["snn"] = None if args.snn is None else {"kappa": args.snn, "metric": args.metric}
    elif args.ensemble or args.snn is not None:
        raise SCAError("--ensemble and --snn need --data", "data")
    if args.consensus:
        inputs["consensus"], header = read_matrix_file(args.consensus, "consensus")
    if args.labels:
        inputs["labels"], _ = read_matrix_file(args.labels, "labels")
    ids = read_ids(args.ids) if args.ids else header
    return inputs, ids


def _options(args) -> dict:
    return {"k": args.k, "k_hat": args.k_hat, "min_k": args.min_k, "max_k": args.max_k,
            "rule": args.rule, "seed": args.seed, "starts": args.starts,
            "stable": args.stable, "max_iterations": args.max_iterations,
            "split": args.split, "tol": args.tol,
            "trace": getattr(args, "trace", False),
            "reconsensus": getattr(args, "reconsensus", False)}


def run(args) -> dict:
    """Carry out a parsed command; returns the JSON-ready result."""
    inputs, ids = read_inputs(args)
    options = _options(args)
    timings: dict = {}
    with StageProgress() as bar:  # draws only when standard error is a terminal
        S, X = build_operator(seed=args.seed, timings=timings, progress=bar, **inputs)
        ids = check_ids(ids, S.n)
        check_spectrum_options(S.n, **{k: options[k] for k in SPECTRUM_OPTIONS})  # before work
        if args.command == "custom":
            balanced, spec = prepare(S, options, timings, bar)
            out = custom_result(balanced.P, args.element, ids, spec.k, args.min_size,
                                args.max_size, args.max_iterations, X, args.limit)
            _plots(args, None, custom=out)
            return out
        balanced, spec, result, timings = run_stages(S, options, timings, bar)
    out = result_dict(S, balanced.P, balance_dict(balanced), spectrum_dict(spec), result, ids,
                      timings)
    _plots(args, out, S=S, P=balanced.P, ids=ids)
    if args.truth:
        truth, _ = read_matrix_file(args.truth, "truth")
        out["evaluation"] = evaluate(result.labels, np.asarray(truth).ravel())
    return out


def _plots(args, result, **inputs) -> None:
    """``--plots DIR``: every plot the command can draw, as PNG and/or SVG."""
    directory = getattr(args, "plots", None)
    if not directory:
        return
    from .plots import save_plots

    formats = ("png", "svg") if args.plot_format == "both" else (args.plot_format,)
    written = save_plots(directory, result, formats=formats, seed=args.seed, **inputs)
    print(f"sca {args.command}: wrote {len(written)} plots to {directory}", file=sys.stderr)


def execute(args) -> int:
    """Run a parsed ``cluster`` / ``custom`` command: JSON to stdout, errors to stderr."""
    if args.command == "submit":
        from .remote import run_submit

        return run_submit(args)
    try:
        out = run(args)
    except SCAError as exc:
        where = f" [{exc.field}]" if exc.field else ""
        print(f"sca {args.command}: error{where}: {exc}", file=sys.stderr)
        return 2
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


def main(argv=None) -> int:
    return execute(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
