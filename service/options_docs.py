"""The docs' options tables (``docs/guide/options.md``) and ``openapi.yaml``'s
``Options`` schema, from the core's registry (:mod:`sca.options`) and the
service's limits (:data:`sca_service.options.LIMITS`).

``python -m sca_service.options_docs --write`` rewrites the generated regions of both
files (between their BEGIN/END markers); ``--check`` exits 1 when the
committed files differ from what the registry gives (a test does the same);
``--openapi`` and ``--readme`` print the fragments.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sca.options import CLUSTERING, CUSTOM, Option

from .options import limit

ROOT = Path(__file__).resolve().parents[1]
SOURCE = (
    "generated from sca/options/records.py by `python -m sca_service.options_docs --write`; "
    "do not edit"
)
TABLE_MARKERS = (f"<!-- BEGIN options: {SOURCE} -->", "<!-- END options -->")
OPENAPI_MARKERS = (f"    # BEGIN options: {SOURCE}", "    # END options")
#: The page of the options tables, relative to the repository.
OPTIONS_PAGE = "docs/guide/options.md"
_WHERE = {"job": "API, `sca submit`", "cli": "`sca cluster`", "core": "Python"}
_WHERE_CUSTOM = {"custom": "API", "cli": "`sca custom`"}


def _yaml(value) -> str:
    """A scalar or flat list in YAML flow style (JSON is YAML)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def schema(option: Option, group: str = "clustering") -> dict:
    """The JSON Schema of one option (null stands for its default)."""
    kind = {"element": None}.get(option.type, option.type)
    out: dict = {"description": _description(option, group)}
    if option.type == "element":
        out["oneOf"] = [{"type": "string"}, {"type": "integer"}]
        return out
    out["type"] = [kind, "null"]
    if option.choices is not None:
        out["enum"] = [*option.choices, None]
    if option.minimum is not None:
        out["exclusiveMinimum" if option.exclusive_minimum else "minimum"] = option.minimum
    if option.maximum is not None:
        out["maximum"] = option.maximum
    if option.default is not None:
        out["default"] = option.default
    return out


def _description(option: Option, group: str) -> str:
    text = option.doc
    if option.default is None and option.default_doc is not None:
        text += f" Default: {option.default_doc}."
    setting = limit(option, group)
    if setting:
        text += f" At most `{setting}` (422 beyond)."
    return text


def openapi_fragment() -> str:
    """The ``Options`` schema as YAML lines, indented for ``components.schemas``."""
    lines = [
        "    Options:",
        "      description: Options of a job; null or absent means the default.",
        "      type: object",
        "      additionalProperties: false",
        "      properties:",
    ]
    for option in CLUSTERING:
        if "job" not in option.scopes:
            continue
        lines.append(f"        {option.name}:")
        for key, value in schema(option).items():
            if key == "oneOf":
                value = "[" + ", ".join("{type: " + v["type"] + "}" for v in value) + "]"
                lines.append(f"          {key}: {value}")
            else:
                lines.append(f"          {key}: {_yaml(value)}")
    return "\n".join(lines) + "\n"


def _values(option: Option, group: str) -> str:
    if option.choices is not None:
        return ", ".join(f"`{c}`" for c in option.choices)
    if option.type == "element":
        return "id or 0-based index"
    if option.type in ("boolean", "array"):
        return option.type
    low = option.minimum
    if option.exclusive_minimum:
        text = f"{option.type} > {low:g}"
    elif option.maximum is not None:
        text = f"{option.type} {low:g} … {option.maximum}"
    else:
        text = f"{option.type} ≥ {low:g}"
    setting = limit(option, group)
    return text + (f", API ≤ `{setting}`" if setting else "")


def _default(option: Option) -> str:
    if option.required:
        return "required"
    if option.default is None and option.default_doc is None:
        return "—"
    text = option.describe_default()
    return text if option.default_doc else f"`{text}`"


def _table(options, where: dict, paper: bool, group: str) -> list[str]:
    head = [
        "option",
        "values",
        "default",
        *(["the paper's"] if paper else []),
        "where",
        "what it sets",
    ]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for option in options:
        places = ", ".join(where[s] for s in where if s in option.scopes)
        cells = [f"`{option.name}`", _values(option, group), _default(option)]
        if paper:
            cells.append(f"`{option.paper}`" if option.paper else "")
        cells += [places, option.doc.replace("|", "\\|")]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def readme_fragment() -> str:
    """The docs' options tables (clustering options, then custom clusters)."""
    lines = _table(CLUSTERING, _WHERE, paper=True, group="clustering")
    lines += [
        "",
        "Custom clusters (`POST /v1/jobs/{id}/custom-clusters`, `sca custom`; the "
        "paper's Fig. 5.2):",
        "",
    ]
    lines += _table(CUSTOM, _WHERE_CUSTOM, paper=False, group="custom")
    return "\n".join(lines) + "\n"


def replace_region(text: str, markers: tuple[str, str], fragment: str, name: str) -> str:
    """``text`` with the lines between the two marker lines replaced by ``fragment``."""
    begin, end = markers
    lines = text.splitlines(keepends=True)
    try:
        start = next(i for i, line in enumerate(lines) if line.rstrip("\n") == begin)
        stop = next(i for i, line in enumerate(lines) if line.rstrip("\n") == end and i > start)
    except StopIteration:
        raise ValueError(f"{name}: no generated region between {begin!r} and {end!r}") from None
    return "".join(lines[: start + 1]) + fragment + "".join(lines[stop:])


def generated(root: Path = ROOT) -> dict[Path, str]:
    """Each generated file's full text as the registry gives it."""
    out = {}
    for name, markers, fragment in (
        (OPTIONS_PAGE, TABLE_MARKERS, readme_fragment()),
        ("openapi.yaml", OPENAPI_MARKERS, openapi_fragment()),
    ):
        path = root / name
        out[path] = replace_region(path.read_text(encoding="utf-8"), markers, fragment, name)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m sca_service.options_docs",
        description=f"Generate the options tables of {OPTIONS_PAGE} and the "
        "Options schema of openapi.yaml from sca/options/records.py.",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--write", action="store_true", help="rewrite both files' regions")
    what.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when a committed file differs from the registry",
    )
    what.add_argument("--openapi", action="store_true", help="print the Options schema")
    what.add_argument("--readme", action="store_true", help="print the options tables")
    p.add_argument("--root", type=Path, default=ROOT, help="the repository (default: %(default)s)")
    args = p.parse_args(argv)
    if args.openapi or args.readme:
        sys.stdout.write(openapi_fragment() if args.openapi else readme_fragment())
        return 0
    stale = []
    for path, text in generated(args.root).items():
        if path.read_text(encoding="utf-8") != text:
            stale.append(path.name)
            if args.write:
                path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print(
            f"out of date: {', '.join(stale)}; run python -m sca_service.options_docs --write",
            file=sys.stderr,
        )
        return 1
    if args.write:
        print(f"rewrote {', '.join(stale)}" if stale else "up to date", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover - python -m sca_service.options_docs
    sys.exit(main())
