"""The embedded default runs the same stages on the in-process store."""

from __future__ import annotations

import json
import time

import numpy as np

from sca_worker import events
from sca_worker.embedded import EmbeddedRunner, run_job
from sca_worker.store import Store
from sca_worker.store.keys import artifact_keys
from tests.worker.conftest import make_job


def test_run_job_in_memory():
    store = Store.in_process(ttl=60)
    record = make_job(store)
    run_job(store, record["id"])
    job = store.get_job(record["id"])
    assert job["status"] == "succeeded"
    assert store.load_json(artifact_keys(record)["result"])["k"] == 2


def test_runner_with_labels_and_cancel():
    store = Store.in_process(ttl=60)
    runner = EmbeddedRunner(store, workers=1)
    labels = np.array([[0, 0], [0, 0], [0, 1], [1, 1], [1, 1], [1, 2]])
    record = make_job(store, "labels", {"labels": labels}, options={"k": 2})
    runner.submit(record["id"])
    runner.wait(record["id"], timeout=30)
    assert store.get_job(record["id"])["status"] == "succeeded"
    assert store.silent_jobs(time.time() + 1) == []  # no watchdog here: the runner prunes
    cancelled = make_job(store, options={"seed": 3})
    store.update_job(cancelled["id"], {"status": "cancelled"})
    runner.submit(cancelled["id"])
    runner.wait(cancelled["id"], timeout=30)
    assert store.get_job(cancelled["id"])["status"] == "cancelled"
    assert not store.has(artifact_keys(cancelled)["result"])
    runner.shutdown()


def _ensemble_job(store, runs: int) -> dict:
    X = np.random.default_rng(0).normal(size=(2000, 10))
    source = {"ensemble": [{"algorithm": "kmeans", "k": list(range(2, 12)), "runs": runs}]}
    record = make_job(store, "data", {"X": X}, source)
    store.update_job(record["id"], {"runs_total": 10 * runs})  # as the API counts them
    return record


def test_the_ensemble_runs_count_as_they_finish():
    store = Store.in_process(ttl=60)
    record = _ensemble_job(store, 3)
    run_job(store, record["id"])
    job = store.get_job(record["id"])
    assert job["status"] == "succeeded" and job["runs_done"] == job["runs_total"] == 30
    seen = events.read(store, record["id"])
    done = [json.loads(data)["done"] for _, name, data in seen if name == "progress"]
    assert len(done) == events.PROGRESS_STEPS and done == sorted(set(done)) and done[-1] == 30
    stages = [json.loads(data) for _, name, data in seen if name == "stage"]
    ensemble = [(e["stage"], e["state"]) for e in stages if e["stage"] == "ensemble"]
    assert ensemble == [("ensemble", "started"), ("ensemble", "finished")]


def test_a_job_cancelled_during_its_ensemble_drops_the_runs_not_yet_started():
    store = Store.in_process(ttl=60)
    record = _ensemble_job(store, 40)
    runner = EmbeddedRunner(store, workers=1)
    runner.submit(record["id"])
    deadline = time.monotonic() + 60
    while not store.get_job(record["id"]).get("runs_done"):
        assert time.monotonic() < deadline, "no run finished"
        time.sleep(0.005)
    store.update_job(record["id"], {"status": "cancelled"})
    runner.wait(record["id"], timeout=60)
    job = store.get_job(record["id"])
    assert job["status"] == "cancelled" and job["runs_done"] < job["runs_total"] == 400
    keys = artifact_keys(record)
    assert not store.has(keys["op"]) and not store.has(keys["run"] + "0")
    assert not store.has(keys["result"])
    runner.shutdown()
