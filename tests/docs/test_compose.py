"""docker-compose.yml: valid, keys from .env, health checks, a lean build context.

The file is resolved as ``docker compose config`` resolves it, without a
container engine: YAML anchors and merge keys, then ``${VAR...}``
interpolation (:func:`interpolate`, with ``.env`` beside the file under the
environment), then validation against the Compose Specification's JSON
schema (``compose-spec/compose-spec.json``, vendored; its source, version and
licence are in ``compose-spec/SOURCE.md``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from dotenv import dotenv_values

from ..conftest import ROOT

FILES = ("docker-compose.yml", "Dockerfile", ".dockerignore")
SCHEMA = json.loads((Path(__file__).parent / "compose-spec" / "compose-spec.json").read_text())

_NAME = re.compile(r"[_A-Za-z][_A-Za-z0-9]*")
# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error},
# ${NAME:+replacement}, ${NAME+replacement}; the colon forms treat an empty
# value as unset.
_BRACED = re.compile(r"(?P<name>[_A-Za-z][_A-Za-z0-9]*)(?:(?P<op>:?[-?+])(?P<arg>.*))?\Z", re.S)


class InterpolationError(ValueError):
    """A ``${...}`` that Compose would refuse: malformed, or required and unset."""


def interpolate(value: Any, environment: Mapping[str, str | None]) -> Any:
    """Interpolate every string value of a Compose model as Compose does.

    The Compose Specification's rules ("Interpolation"): ``$$`` is a literal
    ``$``; ``$NAME`` and ``${NAME}`` are the variable's value, or empty when
    unset; ``${NAME:-default}`` / ``${NAME-default}`` give ``default`` when
    ``NAME`` is unset or empty / unset; ``${NAME:?error}`` / ``${NAME?error}``
    stop with ``error`` in the same cases; ``${NAME:+other}`` / ``${NAME+other}``
    give ``other`` when ``NAME`` is set and non-empty / set. Defaults, errors
    and replacements are themselves interpolated (nesting); a ``$`` followed by
    anything else is kept. Keys are not interpolated, only values.

    Parameters
    ----------
    value : Any
        The model (mappings, lists and scalars, as ``yaml.safe_load`` gives it).
    environment : Mapping of str to str or None
        The variables; ``None`` (a ``NAME`` line without ``=`` in ``.env``) is unset.

    Returns
    -------
    Any
        A copy of ``value`` with each string interpolated.

    Raises
    ------
    InterpolationError
        For a malformed ``${...}`` or a required variable without a value,
        naming the variable and the file's error text.
    """
    if isinstance(value, str):
        return _interpolate_string(value, environment)
    if isinstance(value, dict):
        return {key: interpolate(item, environment) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, environment) for item in value]
    return value


def _interpolate_string(text: str, environment: Mapping[str, str | None]) -> str:
    out = []
    i = 0
    while (dollar := text.find("$", i)) >= 0:
        out.append(text[i:dollar])
        i = dollar + 1
        if text.startswith("$", i):
            out.append("$")
            i += 1
        elif text.startswith("{", i):
            end = _closing_brace(text, i + 1)
            out.append(_substitute(text[i + 1 : end], environment))
            i = end + 1
        elif name := _NAME.match(text, i):
            out.append(environment.get(name[0]) or "")
            i = name.end()
        else:
            out.append("$")
    out.append(text[i:])
    return "".join(out)


def _closing_brace(text: str, start: int) -> int:
    depth, i = 1, start
    while i < len(text):
        if text.startswith("$$", i):
            i += 2
            continue
        if text.startswith("${", i):
            depth += 1
            i += 2
            continue
        if text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise InterpolationError(f"invalid interpolation format: {text!r} (no closing brace)")


def _substitute(expression: str, environment: Mapping[str, str | None]) -> str:
    match = _BRACED.match(expression)
    if match is None:
        raise InterpolationError(f"invalid interpolation format: ${{{expression}}}")
    name, op, arg = match["name"], match["op"], match["arg"]
    value = environment.get(name)
    is_set = value is not None and not (op and op.startswith(":") and value == "")
    if op is None or (op[-1] != "+" and is_set):
        return value or ""
    if op[-1] == "-":
        return _interpolate_string(arg, environment)
    if op[-1] == "+":
        return _interpolate_string(arg, environment) if is_set else ""
    raise InterpolationError(
        f"required variable {name} is missing a value: {_interpolate_string(arg, environment)}"
    )


def config(project: Path) -> dict:
    """``docker-compose.yml`` of ``project`` resolved and validated, as ``docker compose config``.

    The environment is this process's, without ``SCA_*`` and ``COMPOSE_*``
    (so that the caller's settings do not leak in), over ``.env`` beside the
    file, the precedence Compose gives them.

    Raises
    ------
    InterpolationError
        As :func:`interpolate`.
    jsonschema.ValidationError
        When the interpolated model breaks the Compose Specification's schema.
    """
    dot_env = project / ".env"
    environment = {
        **(dotenv_values(dot_env) if dot_env.exists() else {}),
        **{k: v for k, v in os.environ.items() if not k.startswith(("SCA_", "COMPOSE_"))},
    }
    model = interpolate(yaml.safe_load((project / "docker-compose.yml").read_text()), environment)
    jsonschema.Draft7Validator(SCHEMA).validate(model)
    return model


@pytest.fixture
def project(tmp_path) -> Path:
    for name in FILES:
        shutil.copy2(ROOT / name, tmp_path / name)
    return tmp_path


def test_vendored_schema_is_a_draft_7_schema():
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    assert SCHEMA["title"] == "Compose Specification"


def test_config_is_valid_with_keys_from_dot_env(project):
    (project / ".env").write_text("SCA_API_KEYS=key-one,key-two\n")
    services = config(project)["services"]
    assert {name for name in services if not services[name].get("profiles")} == {
        "redis",
        "api",
        "worker",
    }
    for name in ("api", "worker"):
        assert services[name]["environment"]["SCA_API_KEYS"] == "key-one,key-two"
        assert services[name]["environment"]["REDIS_URL"] == "redis://redis:6379/0"
        assert services[name]["build"]["dockerfile"] == "Dockerfile"
        assert services[name]["depends_on"]["redis"]["condition"] == "service_healthy"
    for name in services:
        assert services[name]["healthcheck"]["test"], name
    assert "/readyz" in " ".join(services["api"]["healthcheck"]["test"])
    worker_check = " ".join(services["worker"]["healthcheck"]["test"])
    # $$HOSTNAME in the file: the container's shell, not Compose, expands it.
    assert "inspect ping -d celery@$HOSTNAME " in worker_check


def test_the_dask_profile_adds_a_scheduler_and_two_workers(project):
    (project / ".env").write_text(
        "SCA_API_KEYS=key-one\nCOMPOSE_PROFILES=dask\nSCA_DASK_SCHEDULER=tcp://dask-scheduler:8786\n"
    )
    services = config(project)["services"]
    dask = {name for name in services if "dask" in services[name].get("profiles", ())}
    assert dask == {"dask-scheduler", "dask-worker"}
    scheduler, worker = services["dask-scheduler"], services["dask-worker"]
    assert scheduler["command"][:2] == ["dask", "scheduler"] and "8786" in scheduler["command"]
    assert worker["command"][:3] == ["dask", "worker", "tcp://dask-scheduler:8786"]
    assert worker["deploy"]["replicas"] == 2
    assert worker["depends_on"]["dask-scheduler"]["condition"] == "service_healthy"
    assert services["worker"]["environment"]["SCA_DASK_SCHEDULER"] == "tcp://dask-scheduler:8786"
    # The labels named by reference, and those a job writes, on one volume for all.
    roots = services["api"]["environment"]["SCA_DATA_ROOTS"]
    assert roots == services["worker"]["environment"]["SCA_DATA_ROOTS"] == "data=/data"
    for name in ("api", "worker", "dask-worker"):
        assert "sca-data:/data" in services[name]["volumes"], name


def test_without_the_profile_the_workers_have_no_scheduler(project):
    (project / ".env").write_text("SCA_API_KEYS=key-one\n")
    assert config(project)["services"]["worker"]["environment"]["SCA_DASK_SCHEDULER"] == ""


def test_config_without_keys_stops_naming_them(project):
    with pytest.raises(InterpolationError) as error:
        config(project)
    assert "SCA_API_KEYS" in str(error.value) and ".env" in str(error.value)


@pytest.mark.parametrize(
    ("edit", "broken"),
    [
        ("depends_on:", "depend_on:"),  # an unknown key of a service
        ("\nservices:", "\nservice:"),  # an unknown top-level key
        ("condition: service_healthy", "condition: healthy"),  # not one of the conditions
        ('ports:\n      - "8000:8000"', 'ports: "8000:8000"'),  # a string, not a list
        ("interval: 5s", "interval: [5s]"),  # a list, not a duration
    ],
)
def test_a_broken_copy_is_rejected(project, edit, broken):
    (project / ".env").write_text("SCA_API_KEYS=key-one\n")
    compose = project / "docker-compose.yml"
    text = compose.read_text()
    assert edit in text
    compose.write_text(text.replace(edit, broken, 1))
    with pytest.raises(jsonschema.ValidationError):
        config(project)


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("$$HOSTNAME and $$$$", "$HOSTNAME and $$"),
        ("$SET-${SET}/${SET:-d}/${SET-d}/${SET:+r}/${SET+r}", "v-v/v/v/r/r"),
        ("${EMPTY:-d}|${EMPTY-d}|${EMPTY:+r}|${EMPTY+r}|${EMPTY?e}", "d|||r|"),
        ("${UNSET:-d}|${UNSET-d}|${UNSET:+r}|${UNSET+r}|$UNSET|${UNSET}", "d|d||||"),
        ("${UNSET:-${ALSO_UNSET:-${SET}}}", "v"),
        ("cost: $5, ${SET}s", "cost: $5, vs"),
    ],
)
def test_interpolation_follows_the_compose_specification(template, expected):
    assert interpolate(template, {"SET": "v", "EMPTY": ""}) == expected


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("${EMPTY:?needs ${SET}}", "required variable EMPTY is missing a value: needs v"),
        ("${UNSET?unset}", "required variable UNSET is missing a value: unset"),
        ("${SET", "no closing brace"),
        ("${SET/v/w}", "invalid interpolation format: ${SET/v/w}"),
    ],
)
def test_interpolation_refuses_what_compose_refuses(template, message):
    with pytest.raises(InterpolationError, match=re.escape(message)):
        interpolate({"key": [template]}, {"SET": "v", "EMPTY": ""})


def test_build_context_leaves_out_environments_secrets_and_history():
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".env", "**/__pycache__", "tests/artifacts"} <= ignored
    assert ".env" in (ROOT / ".gitignore").read_text().split()
