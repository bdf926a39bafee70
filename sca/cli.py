"""The ``sca`` command: ``cluster`` and ``custom`` print JSON results; ``submit``
runs a job on the service; ``serve`` serves the API.

Examples
--------
sca cluster --data X.csv                  # default ensemble, standardised columns
sca cluster --data X.csv --ensemble nmf:2,3x50 --ensemble kmeans:3x100 --seed 1
sca cluster --consensus S.csv --split gaps --rule perron --trace
sca custom --data X.csv --ensemble nmf:6x100 --element 2 --min-size 5 --max-size 8
sca cluster --consensus S.csv --starts 20 --plots plots/   # PNG plots beside the JSON
sca submit --url http://127.0.0.1:8000 --consensus S.csv    # on the service (sca.remote)
sca query --url http://127.0.0.1:8000 --job ID --consensus new.csv  # new elements (remote_query)

Options, their defaults and help come from :mod:`sca.options`.  Nothing heavy
is imported to parse the command line: numpy and scipy load when a command
runs, scikit-learn when a k-means or an ensemble does, and the web stack
(``sca_service``) only for ``sca serve``.  On a terminal, ``sca cluster``
draws a progress bar by stage on standard error.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import sys
from typing import Any

from . import options as registry
from .errors import SCAError

_ENSEMBLE = re.compile(rf"^({'|'.join(registry.ALGORITHMS)}):(\d+(?:,\d+)*)x(\d+)$")
#: The clustering options ``sca custom`` reads: those that make S, P and its k, and the
#: seed (of the ensemble and the noise floor's null draws).
_CUSTOM_STAGES = ("ensemble", "balancing", "spectral")


def _custom_clustering_options() -> tuple:
    return tuple(
        o for o in registry.options_for("cli") if o.stage in _CUSTOM_STAGES or o.name == "seed"
    )


SERVER_EXTRA = "pip install 'stochastic-clustering[server]'"


def option_help(option: registry.Option) -> str:
    """The argparse help of an option: its doc and its default."""
    text = option.doc.replace("`", "").replace("%", "%%").rstrip(".")
    text = text[0].lower() + text[1:]  # as argparse's own help reads
    if (
        option.required
        or option.type == "boolean"
        or (option.default is None and option.default_doc is None)
    ):
        return text
    return f"{text} (default: {option.describe_default().replace('`', '')})"


def add_option_arguments(parser, options) -> None:
    """Add registry ``options`` to an argparse parser or group; every default is
    None (the core, or the service, fills in the registry's)."""
    for option in options:
        kwargs: dict[str, Any] = {"help": option_help(option), "default": None}
        if option.type == "boolean":
            kwargs["action"] = "store_true"
        elif option.type == "string":
            kwargs["choices"] = option.choices
        elif option.type == "integer":
            kwargs.update(type=int, metavar=option.metavar or "N")
        elif option.type == "number":
            kwargs.update(type=float, metavar=option.metavar or "X")
        else:
            kwargs["metavar"] = option.metavar or "VALUE"
        if option.required:
            kwargs["required"] = True
        parser.add_argument(option.flag, dest=option.name, **kwargs)


def given_options(args, options) -> dict:
    """The registry ``options`` given on the command line (those left out are absent)."""
    return {
        o.name: getattr(args, o.name) for o in options if getattr(args, o.name, None) is not None
    }


def parse_ensemble(text: str) -> dict:
    """``ALGO:K[,K...]xRUNS`` -> ``{"algorithm", "k", "runs"}``."""
    match = _ENSEMBLE.match(text.strip().lower())
    if not match:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not ALGO:K[,K...]xRUNS with ALGO one of "
            f"{', '.join(registry.ALGORITHMS)} (e.g. nmf:2,3x50)"
        )
    algorithm, ks, runs = match.groups()
    return {"algorithm": algorithm, "k": [int(k) for k in ks.split(",")], "runs": int(runs)}


def add_input_arguments(p: argparse.ArgumentParser) -> None:
    """The input options shared by ``cluster``, ``custom`` and ``submit``."""
    names = ", ".join(f"--{kind.name}" for kind in registry.INPUTS)
    src = p.add_argument_group(f"input (exactly one of {names})")
    for kind in registry.INPUTS:
        src.add_argument(f"--{kind.name}", metavar="FILE", help=kind.cli_doc)
    src.add_argument(
        "--ensemble",
        action="append",
        type=parse_ensemble,
        metavar="ALGO:KxRUNS",
        help="clustering runs on --data whose consensus is clustered, repeatable: "
        "kmeans:3x100, nmf:2,3x50 (ALGO one of "
        f"{', '.join(registry.ALGORITHMS)}; K one or more k, RUNS runs of each; default "
        "without --snn: k-means at several k, sca.ensemble.default_ensemble)",
    )
    src.add_argument(
        "--snn",
        type=int,
        metavar="KAPPA",
        help="shared-nearest-neighbour similarity on --data: elements sharing "
        "their KAPPA nearest neighbours are similar",
    )
    src.add_argument(
        "--metric",
        default="euclidean",
        choices=registry.SNN_METRICS,
        metavar="METRIC",
        help="distance for --snn (default: euclidean; any "
        "scikit-learn neighbour metric without parameters)",
    )
    src.add_argument(
        "--ids",
        metavar="FILE",
        help="file with one element id per line (default: the consensus CSV's "
        "header, else 0-based indices)",
    )


def _add_plots(group) -> None:
    group.add_argument(
        "--plots", metavar="DIR", help="also save the plots (sca.plots) in DIR; needs matplotlib"
    )
    group.add_argument(
        "--plot-format",
        choices=["png", "svg", "both"],
        default="png",
        help="format of the plots (default: png)",
    )


def add_commands(sub) -> None:
    """Add ``cluster``, ``custom``, ``submit``, ``query`` and ``serve`` to argparse subparsers."""
    c = sub.add_parser(
        "cluster",
        help="cluster the elements; prints the result as JSON",
        description="Cluster the elements with the stochastic clustering "
        "algorithm; prints the result as JSON.",
    )
    add_input_arguments(c)
    add_option_arguments(c.add_argument_group("clustering"), registry.options_for("cli"))
    out = c.add_argument_group("output")
    out.add_argument(
        "--truth",
        metavar="FILE",
        help="file of true labels (one per line, or CSV with a header): adds "
        "`evaluation` (errors, adjusted Rand index)",
    )
    _add_plots(out)
    u = sub.add_parser(
        "custom",
        help="custom cluster of one element; prints JSON",
        description="The custom cluster of one element (the paper's Fig. 5.2) "
        "and the elements ranked by closeness; prints JSON.",
    )
    add_input_arguments(u)
    add_option_arguments(
        u.add_argument_group("clustering (P and its k)"), _custom_clustering_options()
    )
    add_option_arguments(
        u.add_argument_group("custom cluster"), registry.options_for("cli", "custom")
    )
    _add_plots(u.add_argument_group("output"))
    from .remote import add_submit_command
    from .remote_query import add_query_command

    add_submit_command(sub)
    add_query_command(sub)
    add_serve_command(sub)


def add_serve_command(sub) -> None:
    """``sca serve``: its arguments here, its code in ``sca_service`` (imported when it runs)."""
    serve = sub.add_parser(
        "serve",
        help="serve the HTTP API (embedded default without REDIS_URL); needs the server extra",
        description="Serve the HTTP API: without REDIS_URL the embedded "
        "default (one process, jobs in memory); with it, the API enqueues "
        "for `celery -A worker worker`.",
    )
    # Their defaults are read by sca_service with the other settings (a bad value is named).
    serve.add_argument("--host", help="address to listen on (default: $SCA_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default: $SCA_PORT or 8000)")
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="API processes (REDIS_URL only; the embedded default uses one)",
    )
    serve.add_argument(
        "--threads", type=int, default=8, metavar="N", help="threads per API process (default: 8)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sca",
        description="Stochastic clustering algorithm (Meyer & Wessell): cluster, query, serve.",
    )
    add_commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    return parser


def read_inputs(args) -> tuple[dict, list | None]:
    from .io import read_ids, read_matrix_file

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


def _clustering_options(args) -> dict:
    custom = args.command == "custom"
    return given_options(
        args, _custom_clustering_options() if custom else registry.options_for("cli")
    )


def run(args) -> dict:
    """Carry out a parsed ``cluster`` / ``custom`` command; returns the JSON-ready result."""
    options = registry.validate(_clustering_options(args), scope="core")
    query = {}
    if args.command == "custom":
        query = registry.validate(
            given_options(args, registry.options_for("cli", "custom")), "custom"
        )
    inputs, ids = read_inputs(args)
    kind = registry.one_input([name for name in registry.INPUT_NAMES if name in inputs])
    registry.validate(options, n=inputs[kind].shape[0], scope="core")  # before any work

    from .pipeline import build_operator, check_ids, clustering, custom_result, prepare
    from .progress import StageProgress

    timings: dict = {}
    with StageProgress() as bar:  # draws only when standard error is a terminal
        S, raw = build_operator(
            seed=options["seed"], timings=timings, progress=bar, scale=options["scale"], **inputs
        )
        ids = check_ids(ids, S.n)
        if args.command == "custom":
            balanced, spec = prepare(S, options, timings, bar, raw)
            out = custom_result(
                balanced.P,
                query["element"],
                ids,
                spec.k,
                query["min_size"],
                query["max_size"],
                query["max_iterations"],
                None if raw is None else raw.X,
                query["limit"],
            )
            _plots(args, None, custom=out)
            return out
        done = clustering(S, options, ids, timings, bar, raw)
    out = done["result"]
    _plots(args, out, S=S, P=done["P"], ids=ids)
    if args.truth:
        import numpy as np

        from .diagnostics import evaluate
        from .io import read_matrix_file

        truth, _ = read_matrix_file(args.truth, "truth")
        out["evaluation"] = evaluate(done["iteration"].labels, np.asarray(truth).ravel())
    return out


def _plots(args, result, **inputs) -> None:
    """``--plots DIR``: every plot the command can draw, as PNG and/or SVG."""
    directory = getattr(args, "plots", None)
    if not directory:
        return
    from .plots import save_plots

    formats = ("png", "svg") if args.plot_format == "both" else (args.plot_format,)
    written = save_plots(
        directory, result, formats=formats, seed=getattr(args, "seed", None) or 0, **inputs
    )
    print(f"sca {args.command}: wrote {len(written)} plots to {directory}", file=sys.stderr)


def _serve(args) -> int:
    try:
        from sca_service.cli import serve
    except ImportError as exc:
        print(
            f"sca serve: the server extra is not installed ({exc.name} is missing): {SERVER_EXTRA}",
            file=sys.stderr,
        )
        return 2
    return serve(args.host, args.port, args.workers, args.threads)


def execute(args) -> int:
    """Run a parsed command: JSON to stdout, errors to stderr (exit 2)."""
    if args.command == "serve":
        return _serve(args)
    if args.command == "submit":
        from .remote import run_submit

        return run_submit(args)
    if args.command == "query":
        from .remote_query import run_query

        return run_query(args)
    try:
        out = run(args)
    except SCAError as exc:
        where = f" [{exc.field}]" if exc.field else ""
        print(f"sca {args.command}: error{where}: {exc}", file=sys.stderr)
        return 2
    # dumps, not dump: only a one-shot encoding uses the C encoder (10x faster at large n)
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


def main(argv=None) -> int:
    status = execute(build_parser().parse_args(argv))
    if argv is None:
        # The console script: the process ends with this command.  Its final
        # garbage collections would traverse every object of every module
        # (0.3-0.5 s once scikit-learn and numba are loaded) to free memory the
        # system takes back anyway; frozen objects are left out of them.
        gc.freeze()
    return status


if __name__ == "__main__":
    sys.exit(main())
