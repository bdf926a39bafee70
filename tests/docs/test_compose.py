"""docker-compose.yml: valid, keys from .env, health checks, a lean build context.

``docker compose config`` (the plugin) or ``docker-compose config`` (Debian's
package, which ``make install-test`` installs) resolves and validates the file
without a Docker engine.  Without either the validation is skipped, saying so;
the checks on ``.dockerignore`` run everywhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ..conftest import ROOT

FILES = ("docker-compose.yml", "Dockerfile", ".dockerignore")


def _compose() -> list[str] | None:
    docker = shutil.which("docker")
    if (
        docker
        and subprocess.run(
            [docker, "compose", "version"], capture_output=True, timeout=60
        ).returncode
        == 0
    ):
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


COMPOSE = _compose()
needs_compose = pytest.mark.skipif(
    COMPOSE is None,
    reason="neither `docker compose` nor `docker-compose` is installed "
    "(`make install-test` installs Debian's docker-compose as root)",
)


@pytest.fixture
def project(tmp_path) -> Path:
    for name in FILES:
        shutil.copy2(ROOT / name, tmp_path / name)
    return tmp_path


def config(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCA_", "COMPOSE_"))}
    return subprocess.run(
        [*COMPOSE, "config", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@needs_compose
def test_config_is_valid_with_keys_from_dot_env(project):
    (project / ".env").write_text("SCA_API_KEYS=key-one,key-two\n")
    proc = config(project)
    assert proc.returncode == 0, proc.stderr
    services = yaml.safe_load(proc.stdout)["services"]
    assert set(services) == {"redis", "api", "worker"}
    for name in ("api", "worker"):
        assert services[name]["environment"]["SCA_API_KEYS"] == "key-one,key-two"
        assert services[name]["environment"]["REDIS_URL"] == "redis://redis:6379/0"
        assert services[name]["build"]["dockerfile"] == "Dockerfile"
        assert services[name]["depends_on"]["redis"]["condition"] == "service_healthy"
    for name in services:
        assert services[name]["healthcheck"]["test"], name
    assert "/readyz" in " ".join(services["api"]["healthcheck"]["test"])
    assert "inspect ping" in " ".join(services["worker"]["healthcheck"]["test"])


@needs_compose
def test_config_without_keys_stops_naming_them(project):
    proc = config(project, "-q")
    assert proc.returncode != 0
    assert "SCA_API_KEYS" in proc.stderr and ".env" in proc.stderr


def test_build_context_leaves_out_environments_secrets_and_history():
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".env", "**/__pycache__", "tests/artifacts"} <= ignored
    assert ".env" in (ROOT / ".gitignore").read_text().split()
