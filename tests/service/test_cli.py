"""The ``sca`` console script: the core's subcommands and ``sca serve``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import requests

from service import cli
from tests.conftest import BASEBALL_IDS, BASEBALL_S, ROOT, free_port


def test_cluster_is_delegated_to_the_core(tmp_path, capsys):
    path = tmp_path / "S.csv"
    rows = [",".join(BASEBALL_IDS)] + [",".join(map(str, r)) for r in BASEBALL_S]
    path.write_text("\n".join(rows))
    assert cli.main(["cluster", "--consensus", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["k"] == 2
    assert sorted(map(sorted, out["clusters"])) == [["Cobb", "Fisk", "Rose"],
                                                    ["Mays", "Ott", "Ruth"]]


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
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    process = subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--port", str(port)],
                               cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if requests.get(f"{base}/readyz", timeout=1).json()["mode"] == "embedded":
                    break
            except requests.ConnectionError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "sca serve did not start"
            time.sleep(0.1)
        response = requests.post(f"{base}/v1/jobs", json={"consensus": BASEBALL_S,
                                                          "ids": BASEBALL_IDS}, timeout=5)
        assert response.status_code == 202
        location = base + response.headers["Location"]
        for _ in range(200):
            job = requests.get(location, timeout=5).json()
            if job["status"] == "succeeded":
                break
            time.sleep(0.05)
        assert sorted(map(sorted, job["result"]["clusters"])) == [["Cobb", "Fisk", "Rose"],
                                                                  ["Mays", "Ott", "Ruth"]]
        custom = requests.post(f"{location}/custom-clusters",
                               json={"element": "Fisk", "min_size": 2, "max_size": 3}, timeout=5)
        assert sorted(custom.json()["cluster"]) == ["Cobb", "Fisk", "Rose"]
    finally:
        process.terminate()
        process.wait(10)
