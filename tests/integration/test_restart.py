"""Redis crashed and restarted (with its append-only file) in the middle of a job's ensemble:
the job must finish, or fail with a problem, within a bounded time, whatever
state its messages were in (a chord counter or a delivered message may be lost).
"""

from __future__ import annotations

import time
import uuid

import pytest

from sca_worker.store import keys
from tests.integration.faults import FAST_TAKEOVER, Api, RedisProcess, Worker, worker_env
from tests.integration.test_faults import leukemia_job

TIMEOUT = int(FAST_TAKEOVER["SCA_HEARTBEAT_TIMEOUT"])
INTERVAL = int(FAST_TAKEOVER["SCA_HEARTBEAT_INTERVAL"])


@pytest.fixture
def redis_with_aof(tmp_path):
    # Redis's default durability: the append-only file synced once a second, so a
    # crash loses the last second of writes (acks, chord counts, beats)
    server = RedisProcess(tmp_path, ("--appendfsync", "everysec"))
    server.start()
    yield server
    server.stop()


@pytest.mark.parametrize("round_", range(3))
def test_redis_restart_mid_ensemble_never_leaves_a_job_running(redis_with_aof, tmp_path, round_):
    prefix = f"sca-aof-{uuid.uuid4().hex[:6]}:"
    api = Api(redis_with_aof.url, prefix)
    workers = [
        Worker(worker_env(redis_with_aof.url, prefix), tmp_path / f"w{i}.log", f"aof{i}")
        for i in range(2)
    ]
    try:
        job_id = leukemia_job(api, runs=24, seed=100 + round_)
        deadline = time.monotonic() + 60
        while int(api.get(f"/v1/jobs/{job_id}").json().get("ensemble", {}).get("done", 0)) < 4:
            assert time.monotonic() < deadline, "the ensemble did not start"
            time.sleep(0.05)
        redis_with_aof.process.kill()  # a crash, not a shutdown
        redis_with_aof.process.wait(10)
        time.sleep(1)
        redis_with_aof.start()
        restarted = time.monotonic()
        # the bound: the job's last sign of life times out, the next watchdog round takes it
        # over, and the rest of the ensemble runs (seconds here)
        job = api.wait(job_id, timeout=2 * TIMEOUT + INTERVAL + 60)
        assert job["status"] in ("succeeded", "failed"), job
        assert job["status"] == "succeeded" or job["error"]["type"], job
        assert time.monotonic() - restarted < 2 * TIMEOUT + INTERVAL + 60
    finally:
        for worker in workers:
            worker.stop()
        api.close()


@pytest.mark.parametrize("state", ["queued", "mid-ensemble"])
def test_a_job_whose_messages_were_lost_is_taken_over(redis_with_aof, tmp_path, state):
    """The messages a crash can lose (the last second of writes) are lost on purpose:
    the queue is emptied while no worker runs.  Before the idle sweep such a job
    stayed queued or running for good (until the broker's visibility timeout)."""
    import redis

    prefix = f"sca-lost-{uuid.uuid4().hex[:6]}:"
    api = Api(redis_with_aof.url, prefix)
    env = worker_env(redis_with_aof.url, prefix)
    workers = []
    try:
        if state == "queued":
            job_id = leukemia_job(api, runs=4, seed=200)
        else:
            workers.append(Worker(env, tmp_path / "first.log", "lost0"))
            job_id = leukemia_job(api, runs=40, seed=201)
            deadline = time.monotonic() + 60
            while int(api.get(f"/v1/jobs/{job_id}").json().get("ensemble", {}).get("done", 0)) < 2:
                assert time.monotonic() < deadline, "the ensemble did not start"
                time.sleep(0.05)
            workers.pop().kill()  # no worker left to finish the runs
        client = redis.Redis.from_url(redis_with_aof.url)
        client.delete(prefix + keys.queue(), "unacked", "unacked_index")  # every message gone
        client.delete(f"{prefix}heartbeats")
        workers.append(Worker(env, tmp_path / "second.log", "lost1"))
        started = time.monotonic()
        job = api.wait(job_id, timeout=2 * TIMEOUT + INTERVAL + 90)
        assert job["status"] == "succeeded", job
        assert "no task of it is queued or running" in (tmp_path / "second.log").read_text()
        assert time.monotonic() - started < 2 * TIMEOUT + INTERVAL + 90
    finally:
        for worker in workers:
            worker.stop()
        api.close()
