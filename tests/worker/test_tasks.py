"""The named tasks called directly against a real Redis store (no eager mode)."""

from __future__ import annotations

import numpy as np
import pytest
from celery import chord
from celery.canvas import _chain
from celery.exceptions import Ignore

from sca_worker import celery_app, planning, stages, tasks
from sca_worker.store.keys import artifact_keys
from tests.conftest import BASEBALL_PAPER
from tests.worker.conftest import make_job


def _blobs():
    rng = np.random.default_rng(3)
    return np.vstack([rng.normal(0, 0.3, (10, 3)), rng.normal(5, 0.3, (10, 3))])


def _run_chain(record):
    for task in (tasks.balance, tasks.spectrum, tasks.iterate):
        assert task(record["id"])["job_id"] == record["id"]


def test_baseball_stages(task_store):
    record = make_job(task_store)
    _run_chain(record)
    job = task_store.get_job(record["id"])
    assert job["status"] == "succeeded" and job["stage"] == "iteration"
    assert set(job) >= {"t:balancing", "t:spectral", "t:iteration"}
    keys = artifact_keys(record)
    for name in ("P", "balance", "spectrum", "result"):
        assert task_store.has(keys[name])
    result = task_store.load_json(keys["result"])
    assert result["k"] == 2
    labels = result["labels"]
    assert labels[:3] == [labels[0]] * 3 and labels[3:] == [labels[3]] * 3
    assert labels[0] != labels[3]
    assert result["eigenvalues"][1] == pytest.approx(BASEBALL_PAPER["eigenvalues"][1], abs=1e-4)


def test_ensemble_fan_out_and_collect(task_store):
    source = {"ensemble": [{"algorithm": "kmeans", "k": [2, 3], "runs": 2}], "ensemble_seed": 1}
    record = make_job(task_store, "data", {"X": _blobs()}, source)
    steps = planning.plan(task_store, record["id"])
    assert steps["stages"] == ["ensemble", "balancing", "spectral", "iteration"]
    assert len(steps["runs"]) == 4
    for i, run in enumerate(steps["runs"]):
        tasks.ensemble_run(record["id"], i, run)
    assert task_store.get_job(record["id"])["runs_done"] == 4
    tasks.ensemble_collect(record["id"], 4)
    keys = artifact_keys(record)
    assert task_store.has(keys["op"]) and not task_store.has(keys["run"] + "0")
    _run_chain(record)
    result = task_store.load_json(keys["result"])
    assert result["k"] == 2
    assert len(set(result["labels"][:10])) == 1 and len(set(result["labels"][10:])) == 1


def test_cache_reuse_plans(task_store):
    first = make_job(task_store)
    _run_chain(first)
    same = make_job(task_store)
    assert planning.plan(task_store, same["id"]) == {"stages": [], "runs": []}
    job = task_store.get_job(same["id"])
    assert job["status"] == "succeeded" and job["cached"] is True
    # The noise rule's floor comes from seeded null draws: another seed, another spectrum.
    other_seed = make_job(task_store, options={"seed": 7, "split": "gaps"})
    assert planning.plan(task_store, other_seed["id"])["stages"] == ["spectral", "iteration"]
    _run_chain(make_job(task_store, options={"rule": "perron"}))
    perron_seed = make_job(task_store, options={"rule": "perron", "seed": 7, "split": "gaps"})
    assert planning.plan(task_store, perron_seed["id"])["stages"] == ["iteration"]
    other_k = make_job(task_store, options={"k": 3})
    assert planning.plan(task_store, other_k["id"])["stages"] == ["spectral", "iteration"]


def test_numerical_failure_fails_the_job(task_store):
    record = make_job(task_store, options={"max_iterations": 1, "stable": 6})
    tasks.balance(record["id"])
    tasks.spectrum(record["id"])
    with pytest.raises(Ignore):
        tasks.iterate(record["id"])
    job = task_store.get_job(record["id"])
    assert job["status"] == "failed"
    error = job["error"]
    assert error["status"] == 422 and error["stage"] == "iteration"
    assert error["type"].endswith("iteration-not-converged")
    assert "options.max_iterations" in error["errors"]


def test_cancelled_job_is_not_worked_on(task_store):
    record = make_job(task_store)
    task_store.update_job(record["id"], {"status": "cancelled"})
    with pytest.raises(Ignore):
        tasks.balance(record["id"])
    assert not task_store.has(artifact_keys(record)["P"])
    assert planning.plan(task_store, record["id"]) is None


def test_missing_input_fails_with_problem(task_store):
    record = make_job(task_store)
    task_store.delete(artifact_keys(record)["input"])
    with pytest.raises(Ignore):
        tasks.balance(record["id"])
    error = task_store.get_job(record["id"])["error"]
    assert error["type"].endswith("artifact-missing") and error["stage"] == "balancing"


def _names(signature) -> list:
    """Task names of a canvas in execution order (a chord: header, then body)."""
    if isinstance(signature, chord):
        return [_names(list(signature.tasks))] + _names(signature.body)
    if isinstance(signature, (_chain, list)):
        items = signature.tasks if isinstance(signature, _chain) else signature
        return [name for item in items for name in _names(item)]
    return [signature.name]


def test_canvas_is_a_chain_with_a_chord():
    steps = {
        "stages": ["ensemble", "balancing", "spectral", "iteration"],
        "runs": [{"algorithm": "kmeans", "k": 2, "seed": s} for s in range(3)],
    }
    canvas = tasks.job_canvas("j", steps)
    assert _names(canvas) == [
        ["sca.ensemble_run"] * 3,
        "sca.ensemble_collect",
        "sca.balance",
        "sca.spectrum",
        "sca.iterate",
    ]
    plain = tasks.job_canvas("j", {"stages": ["iteration"], "runs": []})
    assert _names(plain) == ["sca.iterate"]
    assert tasks.job_canvas("j", {"stages": [], "runs": []}) is None
    # a stage of the core's table without a task of its own name
    added = tasks.job_canvas("j", {"stages": ["balancing", "extra", "iteration"], "runs": []})
    assert _names(added) == ["sca.balance", "sca.stage", "sca.iterate"]


def test_celery_is_json_only_and_tasks_are_named():
    conf = celery_app.app.conf
    assert conf.task_serializer == conf.result_serializer == "json"
    assert conf.accept_content == ["json"] and not conf.task_always_eager
    assert conf.task_time_limit < conf.broker_transport_options["visibility_timeout"]
    names = {
        "sca.start",
        "sca.ensemble_run",
        "sca.ensemble_collect",
        "sca.balance",
        "sca.spectrum",
        "sca.iterate",
    }
    assert names <= set(celery_app.app.tasks)


def test_a_record_from_before_the_scale_option_runs_on_its_data_as_given(task_store):
    source = {"ensemble": [{"algorithm": "kmeans", "k": 2, "runs": 2}], "ensemble_seed": 0}
    X = _blobs()
    record = make_job(task_store, "data", {"X": X}, source)
    assert np.array_equal(stages.scaled_data(task_store, record), X)
    scaled = make_job(task_store, "data", {"X": X}, {**source, "scale": "standard"})
    assert scaled["hashes"]["input"] != record["hashes"]["input"]
    Z = stages.scaled_data(task_store, scaled)
    assert np.allclose(Z.mean(axis=0), 0) and np.allclose(Z.std(axis=0), 1)


def test_plan_runs_again_the_stages_whose_artifacts_are_gone(task_store):
    record = make_job(task_store)
    _run_chain(record)
    keys = artifact_keys(record)
    other = make_job(task_store, options={"starts": 2})  # the same P and spectrum
    assert planning.plan(task_store, other["id"])["stages"] == ["iteration"]
    task_store.delete(keys["spectrum"])
    assert planning.plan(task_store, other["id"])["stages"] == ["spectral", "iteration"]
    task_store.delete(keys["balance"])
    assert planning.plan(task_store, other["id"])["stages"] == [
        "balancing",
        "spectral",
        "iteration",
    ]
    _run_chain(other)
    assert task_store.get_job(other["id"])["status"] == "succeeded"
