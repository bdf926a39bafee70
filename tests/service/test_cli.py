"""The ``sca`` console script: the core's subcommands and ``sca serve``."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from sca_service import cli
from sca_service.config import from_env
from tests.conftest import (
    BASEBALL_BODY,
    BASEBALL_CSV,
    BASEBALL_TEAMS,
    ROOT,
    free_port,
    http_get,
    wait_for,
)
from tests.service.serving import sca_serve, wait_until_up


def test_cluster_is_delegated_to_the_core(capsys):
    assert cli.main(["cluster", "--consensus", str(BASEBALL_CSV)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["k"] == 2
    assert sorted(map(sorted, out["clusters"])) == BASEBALL_TEAMS


def test_serve_is_listed_with_the_core_commands(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "cluster" in text and "custom" in text and "serve" in text
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    assert "--port" in capsys.readouterr().out


def test_sca_serve_embedded_default_end_to_end():
    with sca_serve() as base:
        assert requests.get(f"{base}/readyz", timeout=5).json()["mode"] == "embedded"
        response = requests.post(f"{base}/v1/jobs", json=BASEBALL_BODY, timeout=5)
        assert response.status_code == 202
        location = response.headers["Location"]
        job = wait_for(
            http_get(base, timeout=5), location.rsplit("/", 1)[1], timeout=20, interval=0.05
        )
        assert job["status"] == "succeeded", job.get("error")
        assert sorted(map(sorted, job["result"]["clusters"])) == BASEBALL_TEAMS
        custom = requests.post(
            f"{base}{location}/custom-clusters",
            json={"element": "Fisk", "min_size": 2, "max_size": 3},
            timeout=5,
        )
        assert sorted(custom.json()["cluster"]) == BASEBALL_TEAMS[0]


def test_serve_refuses_a_bad_setting_in_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "sca_service.cli", "serve", "--port", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SCA_RATE_LIMIT": "1.5"},
    )
    assert done.returncode == 2
    assert done.stderr == "sca serve: SCA_RATE_LIMIT must be a whole number, not '1.5'\n"


@pytest.mark.parametrize(
    "env, named",
    [
        ({"SCA_ALLOW_ANONYMOUS": "sure"}, "SCA_ALLOW_ANONYMOUS must be true or false"),
        ({"SCA_TASK_TIME_LIMIT": "5000"}, "SCA_VISIBILITY_TIMEOUT"),
        ({"REDIS_URL": "redis://127.0.0.1:1/0"}, "no API keys"),
        ({"REDIS_URL": "redis://127.0.0.1:1/0", "SCA_ALLOW_ANONYMOUS": "false"}, "no API keys"),
    ],
)
def test_serve_names_what_stops_it(monkeypatch, capsys, env, named):
    for name in [*os.environ]:
        if name.startswith("SCA_") or name == "REDIS_URL":
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["serve", "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sca serve: ") and named in err, err


def test_serve_reads_its_address_through_the_typed_loader(monkeypatch, capsys):
    monkeypatch.setenv("SCA_PORT", "eighty")
    assert cli.main(["serve"]) == 2
    assert capsys.readouterr().err == "sca serve: SCA_PORT must be a whole number, not 'eighty'\n"


def test_a_flag_spelled_as_a_word_lets_redis_mode_run_open():
    settings = from_env({"REDIS_URL": "redis://127.0.0.1:1/0", "SCA_ALLOW_ANONYMOUS": "true"})
    assert settings["SCA_ALLOW_ANONYMOUS"] is True and cli.start_up_problem(settings) is None


def test_serve_on_a_taken_port_says_so_in_one_line():
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "sca_service.cli", "serve", "--port", str(port)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={
                k: v for k, v in os.environ.items() if not k.startswith("SCA_") and k != "REDIS_URL"
            },
        )
    assert done.returncode == 2
    assert done.stderr.startswith(f"sca serve: cannot listen on 127.0.0.1:{port}: ")
    assert done.stderr.count("\n") == 1 and "--port" in done.stderr, done.stderr


@pytest.mark.parametrize("command", ["submit", "query"])
def test_the_service_url_may_come_from_the_environment(monkeypatch, capsys, command):
    monkeypatch.delenv("SCA_URL", raising=False)
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    usage = " ".join(capsys.readouterr().out.split())
    assert "[--url URL]" in usage  # optional: $SCA_URL stands for it
    args = [command, "--consensus", str(BASEBALL_CSV)]
    if command == "query":
        args = [command, "--job", "j", "--consensus", str(BASEBALL_CSV)]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err == f"sca {command}: error [url]: no service URL: pass --url or set SCA_URL\n"


def test_make_serve_prints_the_address_it_listens_on(tmp_path):
    """``SCA_PORT=P make serve`` names ``http://127.0.0.1:P``, the address that answers.

    The real ``make serve`` of this environment (``VENV`` is the running
    Python's; ``-o`` keeps make from reinstalling the package), every address
    in its output compared with the one it listens on.
    """
    port = free_port()
    venv = Path(sys.prefix)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SCA_", "MAKE")) and k not in ("REDIS_URL", "MFLAGS")
    }
    env.update(SCA_PORT=str(port), PYTHONUNBUFFERED="1")
    log = tmp_path / "make-serve.log"
    with log.open("w") as output:
        make = subprocess.Popen(
            [shutil.which("make") or "make", "--no-print-directory", f"VENV={venv}"]
            + ["-o", f"{venv}/.installed", "serve"],
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # make, its shell and sca serve: one group to stop
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, make, timeout=60)
        printed = re.findall(r"https?://[^\s;,)]+", log.read_text())
        assert printed and set(printed) == {url}, log.read_text()
    finally:
        _stop_group(make)


def _stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to ``process``'s group (a session leader's), SIGKILL to what is left after 15 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)
