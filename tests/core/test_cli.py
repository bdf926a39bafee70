"""The ``sca`` command line: in this process (``main([...])``), and the installed
console script as a process where the entry point itself is the point."""

import argparse
import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest

from sca.cli import main

from .conftest import (
    BASEBALL_CSV,
    BASEBALL_IDS,
    BASEBALL_PAPER,
    BASEBALL_S,
    BASEBALL_TEAMS,
    DATA,
    LEUKEMIA_PAPER,
)

SCA = Path(sys.executable).with_name("sca")


def run(capsys, *args):
    assert main(list(args)) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def fail(capsys, *args):
    """Exit status and standard error of a failing command (argparse's exits too)."""
    try:
        status = main(list(args))
    except SystemExit as exit_:
        status = exit_.code
    captured = capsys.readouterr()
    assert captured.out == ""
    return status, captured.err


def test_cluster_consensus_csv_with_id_header(capsys):
    out = run(capsys, "cluster", "--consensus", str(BASEBALL_CSV), "--split", "gaps", "--trace")
    assert out["k"] == 2
    assert out["clusters"] == BASEBALL_PAPER["clusters"]
    assert out["labels"] == [0, 0, 0, 1, 1, 1]
    assert len(out["eigenvalues"]) == 6 and out["eigenvalues"][0] == pytest.approx(1)
    assert out["trace"][0]["t"] == 0 and "balancing" in out["timings"]


def test_cluster_npy_and_npz_without_ids(tmp_path, capsys):
    np.save(tmp_path / "S.npy", BASEBALL_S)
    out = run(capsys, "cluster", "--consensus", str(tmp_path / "S.npy"))
    assert out["clusters"] == [[0, 1, 2], [3, 4, 5]]
    import scipy.sparse as sp

    sp.save_npz(tmp_path / "S.npz", sp.csr_array(BASEBALL_S))
    out = run(capsys, "cluster", "--consensus", str(tmp_path / "S.npz"), "--k", "3")
    assert out["k"] == 3 and len(out["clusters"]) == 3


def test_labels_and_ids_files(tmp_path, capsys):
    labels = np.array([[0, 1, 0], [0, 1, 0], [0, 1, 1], [1, 0, 1], [1, 0, 1], [1, 0, 1]])
    np.savetxt(tmp_path / "runs.csv", labels, fmt="%d", delimiter=",")
    (tmp_path / "ids.txt").write_text("\n".join(BASEBALL_IDS) + "\n")
    out = run(
        capsys,
        "cluster",
        "--labels",
        str(tmp_path / "runs.csv"),
        "--ids",
        str(tmp_path / "ids.txt"),
        "--seed",
        "3",
        "--starts",
        "2",
    )
    assert sorted(map(sorted, out["clusters"])) == BASEBALL_TEAMS
    assert len(out["membership"]) == 6


def test_labels_from_an_npy_stack_directory(tmp_path, capsys):
    """``--labels DIR``: an npy stack, read as a Dask array, clusters as the same
    labels in a .npy file; a directory that is not a stack is an error naming it."""
    import dask.array as da

    from sca.planted import planted_runs, planted_truth

    rng = np.random.default_rng(2)
    labels = planted_runs(planted_truth(900, [1, 1, 1], rng), 12, 0.3, rng)
    np.save(tmp_path / "runs.npy", labels)
    da.to_npy_stack(tmp_path / "stack", da.from_array(labels, chunks=(300, -1)))
    from_file = run(capsys, "cluster", "--labels", str(tmp_path / "runs.npy"))
    from_stack = run(capsys, "cluster", "--labels", str(tmp_path / "stack"))
    assert from_stack["k"] == from_file["k"] == 3
    assert from_stack["clusters"] == from_file["clusters"]
    (tmp_path / "empty").mkdir()
    status, err = fail(capsys, "cluster", "--labels", str(tmp_path / "empty"))
    assert status != 0 and "labels" in err


def test_data_with_ensembles_and_truth(capsys):
    out = run(
        capsys,
        "cluster",
        "--data",
        str(DATA / "iris" / "X.csv"),
        "--ensemble",
        "kmeans:3x10",
        "--ensemble",
        "nmf:2,3x5",
        "--truth",
        str(DATA / "iris" / "labels.csv"),
    )
    assert out["n"] == 150 and out["evaluation"]["ari"] > 0.5


def test_custom_prints_cluster_ranked_and_neighbours(capsys):
    out = run(
        capsys,
        "custom",
        "--consensus",
        str(BASEBALL_CSV),
        "--element",
        "Fisk",
        "--min-size",
        "2",
        "--max-size",
        "3",
    )
    assert out["element"] == "Fisk" and "Fisk" in out["cluster"]
    assert {r["id"] for r in out["ranked"]} == set(BASEBALL_IDS) - {"Fisk"}
    # by 0-based index, the size bounds left to their defaults (1 and n)
    assert (
        run(capsys, "custom", "--consensus", str(BASEBALL_CSV), "--element", "2")["element"]
        == "Fisk"
    )
    leuk = run(
        capsys,
        "custom",
        "--data",
        str(DATA / "leukemia" / "X.csv"),
        "--ensemble",
        "kmeans:4x5",
        "--scale",
        "none",  # the paper's data as printed
        "--element",
        "1",
        "--min-size",
        "2",
        "--max-size",
        "30",
    )
    for method, expected in LEUKEMIA_PAPER["neighbours"].items():
        assert [r["id"] + 1 for r in leuk[method]] == expected


@pytest.mark.parametrize(
    "args, words",
    [
        (["cluster"], "exactly one"),
        (["cluster", "--consensus", "/nonexistent.csv"], "cannot read"),
        (["cluster", "--ensemble", "kmeans:3x5"], "need --data"),
        (
            ["cluster", "--consensus", str(BASEBALL_CSV), "--labels", str(BASEBALL_CSV)],
            "exactly one",
        ),
        (["cluster", "--consensus", str(BASEBALL_CSV), "--starts", "0"], "[options.starts]"),
        (["cluster", "--consensus", str(BASEBALL_CSV), "--k", "7"], "[options.k]"),
        (
            ["cluster", "--consensus", str(BASEBALL_CSV), "--min-k", "3", "--max-k", "2"],
            "[options.max_k]",
        ),
        (
            [
                "custom",
                "--consensus",
                str(BASEBALL_CSV),
                "--element",
                "0",
                "--min-size",
                "4",
                "--max-size",
                "3",
            ],
            "[max_size]",
        ),
        (["custom", "--consensus", str(BASEBALL_CSV), "--element", "Babe"], "[element]"),
    ],
)
def test_errors_go_to_stderr_with_status_2(capsys, args, words):
    status, err = fail(capsys, *args)
    assert status == 2 and words in err, err


def test_k_hat_must_exceed_an_explicit_k_as_in_the_api(capsys):
    """The gap after λ_k needs λ_(k+1): ``--k 3 --k-hat 3`` is refused (the API answers
    422 on options.k_hat), ``--k-hat 4`` reports the gap; k = n has no gap to report."""
    status, err = fail(
        capsys, "cluster", "--consensus", str(BASEBALL_CSV), "--k", "3", "--k-hat", "3"
    )
    assert status == 2 and "[options.k_hat]" in err and "exceed k = 3" in err
    out = run(capsys, "cluster", "--consensus", str(BASEBALL_CSV), "--k", "3", "--k-hat", "4")
    assert out["k"] == 3 and out["gap"] > 0 and len(out["eigenvalues"]) == 4
    status, err = fail(
        capsys, "cluster", "--consensus", str(BASEBALL_CSV), "--k", "6", "--k-hat", "6"
    )
    assert status == 2 and "[options.k_hat]" in err
    out = run(capsys, "cluster", "--consensus", str(BASEBALL_CSV), "--k", "6")
    assert out["k"] == 6 and out["gap"] is None


def test_bad_files_are_refused(tmp_path, capsys):
    (tmp_path / "bad.csv").write_text("1,2\n3,x\n")
    status, err = fail(capsys, "cluster", "--consensus", str(tmp_path / "bad.csv"))
    assert status == 2 and "non-numeric" in err
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    status, err = fail(capsys, "cluster", "--consensus", str(tmp_path / "obj.npy"))
    assert status == 2 and "without pickle" in err
    status, err = fail(
        capsys, "cluster", "--consensus", str(tmp_path / "bad.csv"), "--ensemble", "foo"
    )
    assert status == 2 and "ALGO:K" in err
    status, err = fail(capsys, "cluster", "--data", str(tmp_path / "missing.csv"))
    assert status == 2
    assert err.startswith("sca cluster: error [data]: cannot read ") and err.count("data") == 1


@pytest.mark.parametrize("command", ["cluster", "custom", "submit", "query", "serve"])
def test_help_describes_every_option_under_one_options_heading(capsys, command):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert text.count("options:") == 1, text
    parser = __import__("sca.cli", fromlist=["build_parser"]).build_parser()
    sub = parser._subparsers._group_actions[0].choices[command]
    for action in sub._actions:
        assert action.help, f"sca {command} {action.option_strings} has no description"
    if command == "custom":
        assert "0-based index (the first element is 0)" in " ".join(text.split())


def test_help_lists_the_commands_other_packages_add(capsys):
    """``submit``, ``query`` (sca_client) and ``serve`` (sca_service) come from the
    ``sca.commands`` entry points; ``sca --help`` lists each with its own help line,
    as the core's own commands."""
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    listed = capsys.readouterr().out
    for command in ("cluster", "custom", "submit", "query", "serve"):
        assert f"    {command} " in listed, listed
    sub = argparse.ArgumentParser().add_subparsers()
    for entry in entry_points(group="sca.commands"):
        entry.load()(sub)
    helps = {action.dest: action.help for action in sub._choices_actions}
    assert {"submit", "query", "serve"} <= set(helps)
    words = " ".join(listed.split())
    for command, text in helps.items():
        assert text and f" {command} {' '.join(text.split())} " in words, listed


def test_help_names_a_command_that_cannot_be_imported(monkeypatch, capsys):
    from importlib.metadata import EntryPoint

    broken = EntryPoint("broken", "sca_missing_package.commands:add", "sca.commands")
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: [broken])
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = " ".join(capsys.readouterr().out.split())
    assert " broken sca_missing_package.commands:add cannot be imported " in listed, listed


def test_a_command_whose_package_cannot_be_imported_says_so(monkeypatch, capsys):
    from importlib.metadata import EntryPoint

    broken = EntryPoint("broken", "sca_missing_package.commands:add", "sca.commands")
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: [broken])
    assert main(["broken", "--any", "thing"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sca broken: ") and "sca_missing_package" in err


def test_serve_without_the_server_extra_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "sca_service.cli", None)  # as if not installed
    assert main(["serve", "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'stochastic-clustering[server]'" in err


@pytest.mark.slow
def test_the_console_script_runs_the_core_cli():
    """The installed ``sca`` (pyproject's entry point) as a process."""
    proc = subprocess.run(
        [str(SCA), "cluster", "--consensus", str(BASEBALL_CSV)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(map(sorted, json.loads(proc.stdout)["clusters"])) == BASEBALL_TEAMS
    proc = subprocess.run([str(SCA), "cluster"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "exactly one" in proc.stderr and proc.stdout == ""


@pytest.mark.slow
def test_only_the_console_script_leaves_its_objects_to_the_system():
    """The console script (``main()`` on sys.argv) freezes the collector's
    objects before the process ends; ``main([...])`` called from Python leaves
    its caller's collector as it was."""
    code = (
        "import gc, sys\nfrom sca.cli import main\n"
        f"main(['cluster', '--consensus', {str(BASEBALL_CSV)!r}])\n"
        "print(gc.get_freeze_count(), file=sys.stderr)\n"
        f"sys.argv = ['sca', 'cluster', '--consensus', {str(BASEBALL_CSV)!r}]\n"
        "main()\nprint(gc.get_freeze_count(), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    called, console = map(int, proc.stderr.split()[-2:])
    assert called == 0 and console > 1000


def test_help_imports_no_web_stack_and_no_scikit_learn():
    """``sca --help`` and ``sca cluster --help`` load neither the web stack nor
    scikit-learn, matplotlib or requests (scripts/cli_startup.py times them)."""
    code = (
        "import sys\nfrom sca.cli import main\n"
        "for argv in (['--help'], ['cluster', '--help'], ['custom', '--help']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert proc.returncode == 0, proc.stderr
    modules = set(proc.stderr.split())
    loaded = {name.split(".")[0] for name in modules}
    # Of sca_service, ``sca --help`` loads the package and the module that adds
    # ``serve`` (both import the standard library alone), for its help line.
    assert {m for m in modules if m.startswith("sca_service")} <= {
        "sca_service",
        "sca_service.commands",
    }
    heavy = {
        "flask",
        "celery",
        "sklearn",
        "matplotlib",
        "requests",
        "sca_worker",
        "marshmallow",
        "redis",
        "scipy",
        "numpy",
    }
    assert not loaded & heavy, sorted(loaded & heavy)


TWO_GROUPS = [[0.1, 10], [0.2, 12], [0.15, 11], [0.12, 13], [0.18, 9]] + [
    [0.9, 95],
    [0.95, 99],
    [0.92, 97],
    [0.88, 101],
    [0.91, 96],
]


def test_data_alone_runs_the_default_ensemble(tmp_path, capsys):
    path = tmp_path / "X.csv"
    np.savetxt(path, np.array(TWO_GROUPS), delimiter=",", header="a,b", comments="")
    for scale in ((), ("--scale", "standard")):
        out = run(capsys, "cluster", "--data", str(path), *scale)
        assert out["k"] == 2, scale
        assert sorted(map(sorted, out["clusters"])) == [list(range(5)), list(range(5, 10))]
    out = run(capsys, "cluster", "--data", str(path), "--scale", "none")
    assert sorted(i for cluster in out["clusters"] for i in cluster) == list(range(10))
    with pytest.raises(SystemExit) as info:
        main(["cluster", "--data", str(path), "--scale", "minmax"])
    assert info.value.code == 2
    assert "--scale" in capsys.readouterr().err
