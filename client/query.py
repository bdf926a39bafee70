"""``sca query``: place new elements into a finished job on the service.

Examples
--------
sca query --url http://127.0.0.1:8000 --job ID --consensus new.csv --ids new-ids.txt
sca query --url http://127.0.0.1:8000 --job ID --data patients.csv --max-size 10
sca query --url http://127.0.0.1:8000 --job ID --elements new.json

The new elements come one per row of a matrix file in the job's input kind
(``--data`` rows of features, ``--labels`` one label per run,
``--consensus`` similarities to the job's elements), or as the JSON list of
``elements`` of ``POST /v1/jobs/{id}/queries``.  The answer is printed as
JSON.  Exit status: 0 done, 2 bad input, 3 service unreachable.
"""

from __future__ import annotations

import json
import sys

from sca import options as registry
from sca.cli import add_option_arguments
from sca.errors import SCAError, field_summary

from .client import Client
from .errors import ServiceError, ServiceUnreachable
from .submit import add_service_arguments, client_missing, no_url


def add_query_command(sub) -> None:
    """Add ``query`` to an argparse subparsers action (the ``sca.commands`` entry point)."""
    p = sub.add_parser("query", help="place new elements into a finished job on the service")
    add_service_arguments(p)
    p.add_argument("--job", required=True, help="the finished job's id")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", help="new rows of features (CSV/.npy), for a job of raw data")
    src.add_argument("--labels", help="new elements' labels, one column per run of the job")
    src.add_argument("--consensus", help="new elements' similarity rows to the job's elements")
    src.add_argument("--elements", help="JSON file: the request's list of elements")
    p.add_argument("--ids", help="file with one name per new element")
    p.add_argument(
        "--self",
        type=float,
        dest="self_similarity",
        help="with --consensus: each new element's similarity to itself",
    )
    custom = {o.name: o for o in registry.CUSTOM}
    add_option_arguments(
        p.add_argument_group("custom clusters"),
        [custom[name] for name in ("min_size", "max_size", "max_iterations", "k")],
    )
    p.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="length of each new element's ranked list (default: 6)",
    )
    p.add_argument("--no-custom", action="store_true", help="skip the custom clusters")
    p.set_defaults(run=run_query)


def _elements(args) -> list:
    from sca.io import read_ids, read_matrix_file  # numpy: `sca query --help` stays light

    if args.elements:
        try:
            with open(args.elements, encoding="utf-8") as handle:
                elements = json.load(handle)
        except (OSError, ValueError) as exc:
            raise SCAError(f"elements: cannot read {args.elements}: {exc}", "elements") from None
        if not isinstance(elements, list):
            raise SCAError("elements: the file must hold a JSON list", "elements")
        return elements
    kind = next(name for name in ("data", "labels", "consensus") if getattr(args, name))
    matrix, _ = read_matrix_file(getattr(args, kind), kind)
    elements = [{kind: row} for row in matrix.tolist()]
    if kind == "consensus" and args.self_similarity is not None:
        for element in elements:
            element["self"] = args.self_similarity
    if args.ids:
        names = read_ids(args.ids)
        if len(names) != len(elements):
            raise SCAError(f"ids has {len(names)} names for {len(elements)} elements", "ids")
        for element, name in zip(elements, names):
            element["id"] = name
    return elements


def run_query(args) -> int:
    """Carry out ``sca query``; prints the placements as JSON."""
    missing = client_missing("query") or no_url("query", args)
    if missing:
        return missing
    try:
        elements = _elements(args)
    except SCAError as exc:
        print(f"sca query: {exc.line()}", file=sys.stderr)
        return 2
    api = Client(args.url, api_key=args.api_key)
    try:
        out = api.query(
            args.job,
            elements,
            min_size=args.min_size,
            max_size=args.max_size,
            max_iterations=args.max_iterations,
            k=args.k,
            limit=args.limit,
            custom=False if args.no_custom else None,
        )
    except ServiceUnreachable as exc:
        print(f"sca query: cannot reach the service: {exc}", file=sys.stderr)
        return 3
    except ServiceError as exc:
        fields = field_summary(exc.errors)
        print(f"sca query: error {exc}" + (f" [{fields}]" if fields else ""), file=sys.stderr)
        return 2
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0
