"""The paper's baseball example over HTTP with Redis and a Celery worker process."""

from __future__ import annotations

import re
import time

import pytest
import requests

from tests.conftest import (
    BASEBALL_BODY,
    BASEBALL_IDS,
    BASEBALL_PAPER,
    BASEBALL_S,
    BASEBALL_TEAMS,
    http_get,
    wait_for,
)

#: The paper's consensus doubled: the same P once balanced (D halves), but a
#: matrix no other test of the session sends, so that its stages are not
#: served from an earlier job's cache whichever tests ran before.
DOUBLED_BODY = {"consensus": [[2 * s for s in row] for row in BASEBALL_S], "ids": BASEBALL_IDS}


def submit(api, body):
    response = requests.post(f"{api}/v1/jobs", json=body, timeout=30)
    assert response.status_code == 202, response.text
    assert response.headers["Location"] == f"/v1/jobs/{response.json()['id']}"
    return response.json()


def test_baseball_clusters_custom_cluster_and_cache(api, celery_worker):
    accepted = submit(api, DOUBLED_BODY)
    assert accepted["status"] == "queued"
    seen = []
    job = wait_for(http_get(api), accepted["id"], 120, interval=0.05, seen=seen)
    assert job["status"] == "succeeded", job.get("error")
    result = job["result"]
    assert result["k"] == 2
    assert sorted(map(sorted, result["clusters"])) == BASEBALL_TEAMS
    assert result["eigenvalues"][:3] == pytest.approx(BASEBALL_PAPER["eigenvalues"][:3], abs=1e-4)
    assert set(job["timings"]) == {"balancing", "spectral", "iteration"}
    assert all(0 <= seen_job["progress"] <= 1 for seen_job in seen)
    assert "sca.balance" in celery_worker.read_text()  # the worker process ran the stages

    custom = requests.post(
        f"{api}/v1/jobs/{accepted['id']}/custom-clusters",
        json={"element": "Rose", "min_size": 2, "max_size": 3},
        timeout=30,
    )
    assert custom.status_code == 200
    assert sorted(custom.json()["cluster"]) == BASEBALL_TEAMS[0]
    assert custom.json()["cluster"][0] == "Rose"

    again = submit(api, DOUBLED_BODY)
    assert again["status"] == "succeeded"  # at once, from the cache
    cached = requests.get(f"{api}/v1/jobs/{again['id']}", timeout=30).json()
    assert cached["cached"] is True and cached["result"]["clusters"] == result["clusters"]

    variant = submit(api, dict(DOUBLED_BODY, options={"split": "gaps", "starts": 2}))
    job = wait_for(http_get(api), variant["id"], 120, interval=0.05)
    assert job["status"] == "succeeded"
    assert set(job["timings"]) == {"iteration"}  # balanced matrix and spectrum reused
    assert sorted(map(sorted, job["result"]["clusters"])) == BASEBALL_TEAMS

    assert requests.delete(f"{api}/v1/jobs/{accepted['id']}", timeout=30).status_code == 204
    assert requests.get(f"{api}/v1/jobs/{accepted['id']}", timeout=30).status_code == 404


def test_numerical_failure_over_the_worker(api, celery_worker):
    accepted = submit(api, dict(BASEBALL_BODY, options={"max_iterations": 1, "seed": 42}))
    job = wait_for(http_get(api), accepted["id"], 120, interval=0.05)
    assert job["status"] == "failed"
    assert job["error"]["status"] == 422 and "options.max_iterations" in job["error"]["errors"]


def test_readyz_with_redis(api):
    ready = requests.get(f"{api}/readyz", timeout=30).json()
    assert {k: ready[k] for k in ("status", "mode", "checks")} == {
        "status": "ok",
        "mode": "redis",
        "checks": {"store": "ok", "broker": "ok", "redis": "ok"},
    }
    assert set(ready) <= {"status", "mode", "checks", "warnings"}  # e.g. appendonly is off


def tasks_of_job(log: str, job_id: str) -> dict[str, str]:
    """Task id -> task name for every task the workers' logs show succeeding for ``job_id``
    (each task of a job returns the job's id)."""
    return {
        match[2]: match[1]
        for match in re.finditer(r"Task (sca\.\w+)\[([0-9a-f-]+)\] succeeded in [^:]*: (.*)", log)
        if f"'job_id': '{job_id}'" in match[3]
    }


def test_a_small_job_takes_one_task_with_the_events_of_every_stage(api, celery_worker):
    body = dict(
        BASEBALL_BODY, consensus=[[3 * v for v in row] for row in BASEBALL_BODY["consensus"]]
    )
    accepted = submit(api, body)
    job = wait_for(http_get(api), accepted["id"], 120, interval=0.05)
    assert job["status"] == "succeeded", job.get("error")
    assert set(job["timings"]) == {"balancing", "spectral", "iteration"}
    deadline = time.monotonic() + 30  # the worker logs its task's end after the job's
    while not tasks_of_job(log := celery_worker.read_text(), accepted["id"]):
        assert time.monotonic() < deadline, log[-2000:]
        time.sleep(0.05)
    assert "kernels warmed in" in log  # before the pool took its first task
    # one task, sca.start, and it ran the stages a big job's tasks run (other jobs'
    # tasks, such as an earlier test's taken-over job, may share the logs)
    assert list(tasks_of_job(log, accepted["id"]).values()) == ["sca.start"], log[-2000:]
    assert f"job {accepted['id']}: sca.balance, sca.spectrum, sca.iterate in sca.start" in log
    stream = requests.get(f"{api}/v1/jobs/{accepted['id']}/events", timeout=30).text
    names = [
        line.removeprefix("event: ") for line in stream.splitlines() if line.startswith("event: ")
    ]
    assert names == ["queued", *["stage"] * 6, "succeeded"], names
