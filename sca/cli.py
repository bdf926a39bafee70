"""The ``sca`` command: ``cluster`` and ``custom`` print JSON results; the other
packages add their commands (``submit`` and ``query`` from ``sca_client``,
``serve`` from ``sca_service``) through the ``sca.commands`` entry points.

Examples
--------
sca cluster --data X.csv                  # default ensemble, standardised columns
sca cluster --data X.csv --ensemble nmf:2,3x50 --ensemble kmeans:3x100 --seed 1
sca cluster --consensus S.csv --split gaps --rule perron --trace
sca custom --data X.csv --ensemble nmf:6x100 --element 2 --min-size 5 --max-size 8
sca cluster --consensus S.csv --starts 20 --plots plots/   # PNG plots beside the JSON
sca submit --url http://127.0.0.1:8000 --consensus S.csv    # on the service (sca_client)
sca query --url http://127.0.0.1:8000 --job ID --consensus new.csv  # new elements (sca_client)

Options, their defaults and help come from :mod:`sca.options`.  Nothing heavy
is imported to parse the command line: numpy and scipy load when a command
runs, scikit-learn when a k-means or an ensemble does.  A command of another
package is an entry point of the group ``sca.commands`` (pyproject.toml), named
as the command, whose object adds its subparser and sets ``run`` (a function of
the parsed arguments that returns the exit status); it is imported only when
the command line names it or names no command (``sca --help`` lists each with
its own help), so ``sca cluster`` never loads another package, and this
package imports none of them.  On a
terminal, ``sca cluster`` draws a progress bar by stage on standard error.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
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


#: The entry-point group of the commands other packages add.
COMMANDS = "sca.commands"


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
        "without --snn: k-means at several k, sca.ensemble_spec.default_ensemble)",
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


def add_plot_arguments(
    group, plots_help: str = "also save the plots (sca.plots) in DIR; needs matplotlib"
) -> None:
    """``--plots DIR`` and ``--plot-format``, for every command that saves plots."""
    group.add_argument("--plots", metavar="DIR", help=plots_help)
    group.add_argument(
        "--plot-format",
        choices=["png", "svg", "both"],
        default="png",
        help="format of the plots (default: png)",
    )


def add_commands(sub) -> None:
    """Add the core's ``cluster`` and ``custom`` to argparse subparsers."""
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
    add_plot_arguments(out)
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
    add_plot_arguments(u.add_argument_group("output"))
    w = sub.add_parser(
        "warm",
        help="compile the kernels into numba's disk cache (at install or image build)",
        description="Compile the label-matrix kernels for every argument type the "
        "stages use, and fill numba's disk cache (NUMBA_CACHE_DIR, or beside the "
        "package), so that no process compiles them before its first job.",
    )
    w.set_defaults(run=_warm)


def _warm(args) -> int:
    from .warmup import warm  # numpy, scipy and numba: only for this command

    print(f"sca warm: kernels ready in {warm():.1f} s", file=sys.stderr)
    return 0


def add_plugin_commands(sub, load=None) -> None:
    """Add the commands of the ``sca.commands`` entry points to argparse subparsers.

    Those named in ``load`` (every one when None) are imported and add their
    own parser, with its help; the others are listed by name only, so that
    parsing a command line imports no package but the one it names.  One that
    cannot be imported is listed with the reason, which running it prints.
    """
    # importlib.metadata and the scan of the installed distributions cost about as much
    # as the rest of parsing: only for a command line that names no core command.  The
    # commands' modules import no more than the standard library and the core (their
    # packages' heavy dependencies load when a command runs).
    from importlib.metadata import entry_points

    for entry in entry_points(group=COMMANDS):
        if load is None or entry.name in load:
            try:
                entry.load()(sub)
                continue
            except ImportError as exc:
                problem = f"{entry.value} cannot be imported ({exc})"
        else:
            problem = None
        stub = sub.add_parser(
            entry.name,
            help=problem or f"from {entry.module.split('.')[0]}: `sca {entry.name} --help`",
            add_help=False,
        )
        stub.set_defaults(
            run=lambda args, problem=problem: _unavailable(args, problem), unparsed=True
        )


def _unavailable(args, problem: str | None) -> int:
    print(f"sca {args.command}: {problem or 'not loaded'}", file=sys.stderr)
    return 2


def _command(argv) -> str | None:
    """The command an argument list names: its first word that is not an option."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(argv=None) -> argparse.ArgumentParser:
    """The ``sca`` parser: with ``argv`` that names a command, only that command's
    package is imported (see :func:`add_plugin_commands`); with one that names none
    (``sca --help``), or without, every command's."""
    parser = argparse.ArgumentParser(
        prog="sca",
        description="Stochastic clustering algorithm (Meyer & Wessell): cluster, query, serve.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_commands(sub)
    command = None if argv is None else _command(argv)
    if command not in sub.choices:  # the core's own need no discovery
        # No command named (``sca --help``): every command, each with its help.
        add_plugin_commands(sub, None if command is None else {command})
    return parser


def read_inputs(args) -> tuple[dict, list | None]:
    from .io import read_ids, read_matrix_file  # numpy and scipy: not for parsing or --help
    from .storage import open_labels

    inputs, header = {}, None
    if args.data:
        inputs["data"], _ = read_matrix_file(args.data, "data")
        inputs["ensemble"] = args.ensemble
        inputs["snn"] = None if args.snn is None else {"kappa": args.snn, "metric": args.metric}
    elif args.ensemble or args.snn is not None:
        raise SCAError("--ensemble and --snn need --data", "data")
    if args.consensus:
        inputs["consensus"], header = read_matrix_file(args.consensus, "consensus")
    if args.labels and os.path.isdir(args.labels):  # an npy stack or a .zarr store
        inputs["labels"] = open_labels(args.labels)
    elif args.labels:
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

    # The numerics load when a command runs, not to parse it (see the module's docstring).
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
        import numpy as np  # as the pipeline above: loaded when the command runs

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
    from .plots import save_plots  # matplotlib, an extra: only with --plots

    formats = ("png", "svg") if args.plot_format == "both" else (args.plot_format,)
    written = save_plots(
        directory, result, formats=formats, seed=getattr(args, "seed", None) or 0, **inputs
    )
    print(f"sca {args.command}: wrote {len(written)} plots to {directory}", file=sys.stderr)


def execute(args) -> int:
    """Run a parsed command: JSON to stdout, errors to stderr (exit 2).  Another
    package's command runs its own ``run``."""
    if getattr(args, "run", None) is not None:
        return args.run(args)
    try:
        out = run(args)
    except SCAError as exc:
        print(f"sca {args.command}: {exc.line()}", file=sys.stderr)
        return 2
    # dumps, not dump: only a one-shot encoding uses the C encoder (much faster at large n)
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


def parse(parser: argparse.ArgumentParser, words) -> argparse.Namespace:
    """``parser.parse_args(words)``, but a command listed by name only (not
    importable) takes any arguments: it is the one to say what is wrong."""
    args, unknown = parser.parse_known_args(words)
    if unknown and not getattr(args, "unparsed", False):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def main(argv=None) -> int:
    words = sys.argv[1:] if argv is None else argv
    status = execute(parse(build_parser(words), words))
    if argv is None:
        # The console script: the process ends with this command.  Its final
        # garbage collections would traverse every object of every module
        # (once scikit-learn and numba are loaded, a noticeable pause) to free memory the
        # system takes back anyway; frozen objects are left out of them.
        gc.freeze()
    return status


if __name__ == "__main__":
    sys.exit(main())
