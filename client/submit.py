"""``sca submit``: run a clustering on the service with :mod:`sca_client.client`.

Examples
--------
sca submit --url http://127.0.0.1:8000 --consensus S.csv --ids ids.txt
sca submit --url http://127.0.0.1:8000 --data X.csv --plots out/   # the default ensemble
sca submit --url http://127.0.0.1:8000 --data X.csv --ensemble nmf:2,3x50 --plots out/

The input options are those of ``sca cluster``; the job document (with its
``result``) is printed as JSON.  A bar by stage is drawn on standard error
while the job runs, when standard error is a terminal.  The core's command
line (:mod:`sca.cli`) finds :func:`add_submit_command` through the
``sca.commands`` entry point; the client itself is imported when the command
runs: :mod:`sca_client.client` imports ``requests`` (the client extra) on first
use, so a missing extra is named, not a traceback.
"""

from __future__ import annotations

import json
import os
import sys
from importlib.util import find_spec
from pathlib import Path

from sca import options as registry
from sca.cli import (
    add_input_arguments,
    add_option_arguments,
    add_plot_arguments,
    given_options,
    read_inputs,
)
from sca.errors import SCAError, field_summary

from .client import Client
from .errors import (
    CLIENT_EXTRA,
    JobCancelled,
    JobFailed,
    ServiceError,
    ServiceUnreachable,
    WaitTimeout,
)


def add_service_arguments(parser) -> None:
    """``--url`` and ``--api-key``, from $SCA_URL and $SCA_API_KEY by default."""
    parser.add_argument(
        "--url",
        default=os.environ.get("SCA_URL"),
        help="the service's base URL (default: $SCA_URL; one of the two is needed)",
    )
    parser.add_argument(
        "--api-key",
        default=os.environ.get("SCA_API_KEY"),
        metavar="KEY",
        help="API key, sent as a bearer token (default: $SCA_API_KEY)",
    )


def add_submit_command(sub) -> None:
    """Add ``submit`` to an argparse subparsers action (the ``sca.commands`` entry point)."""
    p = sub.add_parser(
        "submit",
        help="submit a clustering job to the service and wait for it",
        description="Submit a clustering job to the service, wait for it and "
        "print the job (with its result) as JSON; needs the client extra.",
    )
    service = p.add_argument_group("service")
    add_service_arguments(service)
    add_input_arguments(p)
    service.add_argument(
        "--upload",
        action="store_true",
        help="send the matrix as an .npy file (multipart) instead of JSON",
    )
    add_option_arguments(p.add_argument_group("clustering"), registry.options_for("job"))
    out = p.add_argument_group("output")
    out.add_argument("--no-wait", action="store_true", help="print the accepted job and exit")
    out.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="seconds to wait for the job (default: no limit)",
    )
    add_plot_arguments(out, "also save the job's plots in DIR")
    p.set_defaults(run=run_submit)


def _options(args) -> dict:
    """The options given (the service fills in the rest), checked as the API will."""
    options = given_options(args, registry.options_for("job"))
    registry.validate(options, scope="job")
    return options


def _fail(message: str, code: int, command: str = "submit") -> int:
    print(f"sca {command}: {message}", file=sys.stderr)
    return code


def client_missing(command: str) -> int:
    """2 (after one line naming the extra) when ``requests`` is not installed, else 0."""
    if find_spec("requests") is not None:
        return 0
    message = f"the client extra is not installed (requests is missing): {CLIENT_EXTRA}"
    return _fail(message, 2, command)


def no_url(command: str, args) -> int:
    """2 (after one line saying how to name the service) when there is no URL, else 0:
    ``--url`` is optional in the usage because ``$SCA_URL`` may stand for it."""
    if args.url:
        return 0
    return _fail("error [url]: no service URL: pass --url or set SCA_URL", 2, command)


def run_submit(args) -> int:
    """Carry out ``sca submit``: 0 done, 1 job failed, 2 bad input, 3 service unreachable."""
    missing = client_missing("submit") or no_url("submit", args)
    if missing:
        return missing

    try:
        options = _options(args)
        inputs, ids = read_inputs(args)
    except SCAError as exc:
        return _fail(exc.line(), 2)
    snn = inputs.get("snn")
    try:
        kind = registry.one_input([name for name, value in inputs.items() if value is not None])
    except SCAError as exc:
        return _fail(exc.line(), 2)
    api = Client(args.url, api_key=args.api_key)
    try:
        job = api.submit(
            **{kind: inputs[kind]},
            ensemble=inputs.get("ensemble") or None,
            snn=snn,
            ids=ids,
            options=options or None,
            upload=args.upload,
        )
        if args.no_wait:
            document = job.accepted
        else:
            document = job.wait(progress=True, timeout=args.timeout)
            if args.plots:
                _save_plots(job, document, args.plots, args.plot_format)
    except JobFailed as exc:
        json.dump(exc.job, sys.stdout)
        sys.stdout.write("\n")
        return _fail(f"job failed: {exc}", 1)
    except (JobCancelled, WaitTimeout) as exc:
        return _fail(str(exc), 1)
    except ServiceUnreachable as exc:
        return _fail(f"cannot reach the service: {exc}", 3)
    except ServiceError as exc:
        fields = field_summary(exc.errors)
        return _fail(f"error {exc}" + (f" [{fields}]" if fields else ""), 2)
    json.dump(document, sys.stdout)
    sys.stdout.write("\n")
    return 0


def _save_plots(job, document: dict, directory: str, plot_format: str) -> None:
    formats = ("png", "svg") if plot_format == "both" else (plot_format,)
    names = ["spectrum", "trace", "consensus", "histogram"]
    if document.get("result", {}).get("membership") is not None:
        names.append("membership")
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        for fmt in formats:
            (target / f"{name}.{fmt}").write_bytes(job.plot(name, fmt))
    print(f"sca submit: wrote {len(names) * len(formats)} plots to {target}", file=sys.stderr)
