"""The embedded default runs the same stages on the in-process store."""

from __future__ import annotations

import time

import numpy as np

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
