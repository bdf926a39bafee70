"""The ``sca`` console script: the core's subcommands and ``sca serve``."""

from __future__ import annotations

import json

import pytest
import requests

from service import cli
from tests.conftest import BASEBALL_BODY, BASEBALL_CSV, BASEBALL_TEAMS, http_get, wait_for
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
