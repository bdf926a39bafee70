"""Heartbeats and takeover against a real Redis (the process-level test is
tests/integration/test_faults.py)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from sca_worker.config import check_settings
from sca_worker.heartbeat import beat, take_over_stale
from sca_worker.store import keys
from tests.worker.conftest import make_job


def _stale(store, job_id, task="t1", age=100):
    store.client.zadd(store.key(keys.heartbeats()), {f"{job_id}|{task}": time.time() - age})


def test_beat_adds_held_tasks_and_drops_finished_ones(redis_store):
    held = [
        SimpleNamespace(id="a", kwargs={"job_id": "j1"}, args=()),
        SimpleNamespace(id="b", kwargs={}, args=("j2", 0, {})),
    ]
    mine = beat(redis_store, held, set())
    assert mine == {"j1|a", "j2|b"}
    assert beat(redis_store, held[1:], mine) == {"j2|b"}
    members = redis_store.client.zrange(redis_store.key(keys.heartbeats()), 0, -1)
    assert members == [b"j2|b"]


def test_a_stale_job_is_resumed_once(redis_store):
    record = make_job(redis_store)
    redis_store.update_job(record["id"], {"status": "running"})
    _stale(redis_store, record["id"], "t1")
    _stale(redis_store, record["id"], "t2")  # two tasks of the job died together
    sent = []
    assert take_over_stale(redis_store, sent.append, 4, 3) == [record["id"]]
    assert sent == [record["id"]]
    assert redis_store.get_job(record["id"])["takeovers"] == 1
    assert take_over_stale(redis_store, sent.append, 4, 3) == []  # claimed: nothing left


def test_fresh_and_finished_jobs_are_left_alone(redis_store):
    fresh, done = make_job(redis_store), make_job(redis_store, options={"seed": 4})
    _stale(redis_store, fresh["id"], age=1)
    redis_store.update_job(done["id"], {"status": "succeeded"})
    _stale(redis_store, done["id"])
    assert take_over_stale(redis_store, pytest.fail, 4, 3) == []


def test_a_job_taken_over_too_often_fails_with_a_problem(redis_store):
    record = make_job(redis_store)
    redis_store.update_job(record["id"], {"status": "running", "takeovers": 3})
    _stale(redis_store, record["id"])
    assert take_over_stale(redis_store, pytest.fail, 4, 3) == []
    job = redis_store.get_job(record["id"])
    assert job["status"] == "failed" and job["error"]["type"].endswith("worker-lost")


@pytest.mark.parametrize(
    "settings",
    [
        {"SCA_TASK_TIME_LIMIT": 3600, "SCA_VISIBILITY_TIMEOUT": 3600},
        {"SCA_TASK_SOFT_TIME_LIMIT": 3000, "SCA_TASK_TIME_LIMIT": 3000},
        {"SCA_HEARTBEAT_INTERVAL": 40, "SCA_HEARTBEAT_TIMEOUT": 60},
    ],
)
def test_contradictory_limits_are_refused(settings):
    with pytest.raises(ValueError):
        check_settings(settings)
    check_settings({})
