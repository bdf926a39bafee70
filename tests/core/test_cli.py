"""The ``sca`` command line, run as a process."""

import json
import subprocess
import sys

import numpy as np
import pytest

from .conftest import (BASEBALL_CSV, BASEBALL_IDS, BASEBALL_PAPER, BASEBALL_S, BASEBALL_TEAMS,
                       DATA, LEUKEMIA_PAPER)


def run(*args, ok=True):
    proc = subprocess.run([sys.executable, "-m", "sca", *args], capture_output=True, text=True,
                          timeout=120)
    if ok:
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)
    return proc


def test_cluster_consensus_csv_with_id_header():
    out = run("cluster", "--consensus", str(BASEBALL_CSV), "--split", "gaps", "--trace")
    assert out["k"] == 2
    assert out["clusters"] == BASEBALL_PAPER["clusters"]
    assert out["labels"] == [0, 0, 0, 1, 1, 1]
    assert len(out["eigenvalues"]) == 6 and out["eigenvalues"][0] == pytest.approx(1)
    assert out["trace"][0]["t"] == 0 and "balancing" in out["timings"]


def test_cluster_npy_and_npz_without_ids(tmp_path):
    np.save(tmp_path / "S.npy", BASEBALL_S)
    out = run("cluster", "--consensus", str(tmp_path / "S.npy"))
    assert out["clusters"] == [[0, 1, 2], [3, 4, 5]]
    import scipy.sparse as sp
    sp.save_npz(tmp_path / "S.npz", sp.csr_array(BASEBALL_S))
    out = run("cluster", "--consensus", str(tmp_path / "S.npz"), "--k", "3")
    assert out["k"] == 3 and len(out["clusters"]) == 3


def test_labels_and_ids_files(tmp_path):
    labels = np.array([[0, 1, 0], [0, 1, 0], [0, 1, 1], [1, 0, 1], [1, 0, 1], [1, 0, 1]])
    np.savetxt(tmp_path / "runs.csv", labels, fmt="%d", delimiter=",")
    (tmp_path / "ids.txt").write_text("\n".join(BASEBALL_IDS) + "\n")
    out = run("cluster", "--labels", str(tmp_path / "runs.csv"), "--ids",
              str(tmp_path / "ids.txt"), "--seed", "3", "--starts", "2")
    assert sorted(map(sorted, out["clusters"])) == BASEBALL_TEAMS
    assert len(out["membership"]) == 6


def test_data_with_ensembles_and_truth():
    out = run("cluster", "--data", str(DATA / "iris" / "X.csv"), "--ensemble", "kmeans:3x10",
              "--ensemble", "nmf:2,3x5", "--truth", str(DATA / "iris" / "labels.csv"))
    assert out["n"] == 150 and out["evaluation"]["ari"] > 0.5


def test_custom_prints_cluster_ranked_and_neighbours():
    out = run("custom", "--consensus", str(BASEBALL_CSV), "--element", "Fisk",
              "--min-size", "2", "--max-size", "3")
    assert out["element"] == "Fisk" and "Fisk" in out["cluster"]
    assert {r["id"] for r in out["ranked"]} == set(BASEBALL_IDS) - {"Fisk"}
    leuk = run("custom", "--data", str(DATA / "leukemia" / "X.csv"), "--ensemble",
               "kmeans:4x5", "--element", "1", "--min-size", "2", "--max-size", "30")
    for method, expected in LEUKEMIA_PAPER["neighbours"].items():
        assert [r["id"] + 1 for r in leuk[method]] == expected


@pytest.mark.parametrize("args, words", [
    (["cluster"], "exactly one"),
    (["cluster", "--consensus", "/nonexistent.csv"], "cannot read"),
    (["cluster", "--ensemble", "kmeans:3x5"], "need --data"),
])
def test_errors_go_to_stderr_with_nonzero_status(args, words):
    proc = run(*args, ok=False)
    assert proc.returncode != 0 and words in proc.stderr and proc.stdout == ""


def test_bad_files_are_refused(tmp_path):
    (tmp_path / "bad.csv").write_text("1,2\n3,x\n")
    proc = run("cluster", "--consensus", str(tmp_path / "bad.csv"), ok=False)
    assert proc.returncode == 2 and "non-numeric" in proc.stderr
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    proc = run("cluster", "--consensus", str(tmp_path / "obj.npy"), ok=False)
    assert proc.returncode == 2 and "without pickle" in proc.stderr
    proc = run("cluster", "--consensus", str(tmp_path / "bad.csv"), "--ensemble", "foo", ok=False)
    assert proc.returncode == 2 and "ALGO:K" in proc.stderr
