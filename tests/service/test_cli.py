"""The ``sca`` console script: the core's subcommands and ``sca serve``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import requests

from service import cli
from tests.conftest import BASEBALL_BODY, BASEBALL_CSV, BASEBALL_TEAMS, ROOT, http_get, wait_for
from tests.service.serving import sca_serve


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
        job = wait_for(http_get(base, timeout=5), location.rsplit("/", 1)[1], timeout=20,
                       interval=0.05)
        assert job["status"] == "succeeded", job.get("error")
        assert sorted(map(sorted, job["result"]["clusters"])) == BASEBALL_TEAMS
        custom = requests.post(f"{base}{location}/custom-clusters",
                               json={"element": "Fisk", "min_size": 2, "max_size": 3}, timeout=5)
        assert sorted(custom.json()["cluster"]) == BASEBALL_TEAMS[0]


@pytest.mark.parametrize("env, named", [
    ({"SCA_RATE_LIMIT": "1.5"}, "SCA_RATE_LIMIT must be a whole number"),
    ({"SCA_ALLOW_ANONYMOUS": "sure"}, "SCA_ALLOW_ANONYMOUS must be true or false"),
    ({"SCA_TASK_TIME_LIMIT": "5000"}, "SCA_VISIBILITY_TIMEOUT"),
    ({"REDIS_URL": "redis://127.0.0.1:1/0"}, "no API keys"),
])
def test_serve_refuses_bad_settings_in_one_line(env, named):
    done = subprocess.run([sys.executable, "-m", "service.cli", "serve", "--port", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**{k: v for k, v in os.environ.items()
                                  if not k.startswith(("SCA_", "REDIS_URL"))}, **env})
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and named in done.stderr, done.stderr


def test_serve_reads_flags_as_words(tmp_path):
    # Redis mode without keys, explicitly open: starts (SCA_ALLOW_ANONYMOUS=true is no error).
    with sca_serve(env={"REDIS_URL": "redis://127.0.0.1:1/0", "SCA_ALLOW_ANONYMOUS": "true",
                        "SCA_REDIS_TIMEOUT": "1"}) as base:
        assert requests.get(f"{base}/healthz", timeout=5).status_code == 200
