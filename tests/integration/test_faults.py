"""Faults with real processes: a worker SIGKILLed mid-stage, Redis restarted while
jobs wait and the API serves, a cancelled job's artifacts, a pickled message."""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest
import redis
import requests

from sca_worker.store import Store
from tests.conftest import BASEBALL_BODY, BASEBALL_TEAMS, DATA, http_get, wait_for
from tests.integration.faults import Api, RedisProcess, Worker, leukemia_job, worker_env


@pytest.fixture
def private_redis(tmp_path):
    server = RedisProcess(tmp_path)
    server.start()
    yield server
    server.stop()


def test_worker_killed_mid_stage_job_completes_on_a_restarted_worker(private_redis, tmp_path):
    prefix = f"sca-kill-{uuid.uuid4().hex[:6]}:"
    env = worker_env(private_redis.url, prefix)
    api = Api(private_redis.url, prefix)
    first = Worker(env, tmp_path / "first.log", "first")
    second = None
    beats = redis.Redis.from_url(private_redis.url)
    try:
        job_id = leukemia_job(api, runs=24, seed=11)
        deadline = time.monotonic() + 60
        while True:  # kill while the ensemble stage is half done and the worker holds a run
            job = api.request("get", f"/v1/jobs/{job_id}").json()
            holding = any(
                m.decode().startswith(f"{job_id}|")
                for m in beats.zrange(f"{prefix}heartbeats", 0, -1)
            )
            if job["stage"] == "ensemble" and 2 <= job["ensemble"]["done"] < 20 and holding:
                break
            assert job["status"] in ("queued", "running") and time.monotonic() < deadline, job
            time.sleep(0.05)
        killed_at = time.monotonic()
        first.kill()
        assert api.request("get", f"/v1/jobs/{job_id}").json()["status"] == "running"
        second = Worker(env, tmp_path / "second.log", "second")
        job = api.wait(job_id, timeout=120)
        assert job["status"] == "succeeded", job.get("error")
        assert time.monotonic() - killed_at < 120
        assert job["ensemble"] == {"done": 24, "total": 24}
        assert len(job["result"]["labels"]) == 38
        log = (tmp_path / "second.log").read_text()
        assert "stopped beating; resuming the job" in log and "sca.ensemble_collect" in log
    finally:
        beats.close()
        for worker in (first, second):
            if worker is not None:
                worker.stop()
        api.close()


def _timed(api, method, path, **kwargs):
    start = time.monotonic()
    response = api.request(method, path, timeout=20, **kwargs)
    return response, time.monotonic() - start


def test_redis_restarted_while_jobs_wait_and_the_api_serves(private_redis, tmp_path):
    prefix = f"sca-restart-{uuid.uuid4().hex[:6]}:"
    api = Api(private_redis.url, prefix)
    worker = Worker(worker_env(private_redis.url, prefix), tmp_path / "worker.log", "restart")
    try:
        long_job = leukemia_job(api, runs=12, seed=3)  # keeps the one worker busy
        waiting = [
            api.request("post", "/v1/jobs", json=dict(BASEBALL_BODY, options={"seed": s})).json()[
                "id"
            ]
            for s in range(3)
        ]
        private_redis.stop()
        for method, path, kwargs in (
            ("get", "/readyz", {}),
            ("post", "/v1/jobs", {"json": BASEBALL_BODY}),
            ("get", f"/v1/jobs/{waiting[0]}", {}),
            ("get", f"/v1/jobs/{long_job}/elements/0/similar", {}),
        ):
            response, took = _timed(api, method, path, **kwargs)
            assert response.status_code == 503, (path, response.status_code, response.text)
            assert response.headers["Content-Type"] == "application/problem+json"
            assert response.headers["Retry-After"] and took < 10, (path, took)
        ready = api.request("get", "/readyz").json()
        assert ready["checks"]["store"].startswith("unreachable")
        time.sleep(2)
        private_redis.start()
        deadline = time.monotonic() + 30
        while api.request("get", "/readyz").status_code != 200:
            assert time.monotonic() < deadline, "the API did not recover by itself"
            time.sleep(0.2)
        after = api.request("post", "/v1/jobs", json=dict(BASEBALL_BODY, options={"seed": 9}))
        assert after.status_code == 202, after.text
        for job_id in [long_job, *waiting, after.json()["id"]]:
            job = api.wait(job_id, timeout=120)
            assert job["status"] == "succeeded", (job_id, job.get("error"))
        assert sorted(map(sorted, job["result"]["clusters"])) == BASEBALL_TEAMS
    finally:
        worker.stop()
        api.close()


def test_cancel_stops_tasks_and_leaves_no_artifacts(api, celery_worker, store, redis_client):
    files = {"file": ("X.csv", (DATA / "leukemia" / "X.csv").read_bytes(), "text/csv")}
    form = {
        "input": "data",
        "ensemble": json.dumps([{"algorithm": "nmf", "k": 6, "runs": 30}]),
        "options": json.dumps({"ensemble_seed": 77}),
    }
    job_id = requests.post(f"{api}/v1/jobs", files=files, data=form, timeout=60).json()["id"]
    deadline = time.monotonic() + 30
    while (
        requests.get(f"{api}/v1/jobs/{job_id}", timeout=30)
        .json()
        .get("ensemble", {"done": 0})["done"]
        < 2
    ):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    record = store.get_job(job_id)
    response = requests.delete(f"{api}/v1/jobs/{job_id}", timeout=30)
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    time.sleep(2)  # tasks already running finish or are terminated, then clean up
    done = requests.get(f"{api}/v1/jobs/{job_id}", timeout=30).json()["ensemble"]["done"]
    time.sleep(1.5)
    job = requests.get(f"{api}/v1/jobs/{job_id}", timeout=30).json()
    assert job["status"] == "cancelled" and "result" not in job
    assert job["ensemble"]["done"] == done < job["ensemble"]["total"] == 30  # stopped
    h = record["hashes"]["input"]
    assert not store.has(f"op:{h}")  # no consensus was built
    leftovers = [
        k.decode()
        for k in redis_client.scan_iter(f"{store.prefix}*")
        if h.encode() in k or job_id.encode() in k
    ]
    # only the record saying "cancelled", and its events (deleted with it)
    record_key = f"{store.prefix}job:{job_id}"
    assert sorted(leftovers) == [record_key, f"{record_key}:events"]
    assert requests.delete(f"{api}/v1/jobs/{job_id}", timeout=30).status_code == 204
    assert not [k for k in redis_client.scan_iter(f"{store.prefix}*") if job_id.encode() in k]


def test_a_pickled_task_message_is_refused(celery_worker, redis_url, prefix, api):
    from sca_worker.celery_app import create_celery

    client = create_celery({"REDIS_URL": redis_url, "SCA_KEY_PREFIX": prefix})
    client.send_task("sca.start", kwargs={"job_id": "pickled"}, serializer="pickle")
    deadline = time.monotonic() + 20
    while "untrusted content of type pickle" not in celery_worker.read_text():
        assert time.monotonic() < deadline, "the worker did not refuse the pickled message"
        time.sleep(0.1)
    # The worker is still serving.
    accepted = requests.post(
        f"{api}/v1/jobs", json=dict(BASEBALL_BODY, options={"seed": 5}), timeout=30
    ).json()
    assert wait_for(http_get(api), accepted["id"], 120, interval=0.05)["status"] == "succeeded"


def test_redis_password_is_required_and_used(tmp_path):
    server = RedisProcess(tmp_path, ("--requirepass", "s3cret-pass"))
    url = f"redis://:s3cret-pass@127.0.0.1:{server.port}/0"
    server.start(wait_url=url)
    try:
        with pytest.raises(redis.exceptions.AuthenticationError):
            redis.Redis.from_url(server.url).ping()
        prefix = f"sca-auth-{uuid.uuid4().hex[:6]}:"
        worker = Worker(worker_env(url, prefix), tmp_path / "worker.log", "password")
        api = Api(url, prefix)
        try:
            job_id = api.request("post", "/v1/jobs", json=BASEBALL_BODY).json()["id"]
            job = api.wait(job_id, timeout=60)
            assert sorted(map(sorted, job["result"]["clusters"])) == BASEBALL_TEAMS
            assert "s3cret-pass" not in (tmp_path / "worker.log").read_text()
        finally:
            api.close()
            worker.stop()
    finally:
        server.stop()


class _Stuck:
    """Where a dying API process stops for good: its request thread waits forever,
    leaving Redis as a SIGKILL there would (the record made, nothing after)."""

    forever = threading.Event()

    def submit(self, job_id, task_id=None):
        self.forever.wait()

    def revoke(self, job_id, task_ids=()):
        pass

    def ping(self):
        return True


class _StuckStore(Store):
    """A store whose writes of inputs never end (the API dies while storing one)."""

    def save_arrays(self, name, arrays, ttl=None):
        if name.startswith("input:"):
            _Stuck.forever.wait()
        return super().save_arrays(name, arrays, ttl)


def _post(api, body, headers):
    return api.request("post", "/v1/jobs", json=body, headers=headers)


def _post_quietly(api, body, headers):
    """A request to an API that never answers it (its process died)."""
    try:
        _post(api, body, headers)
    except requests.RequestException:
        pass


@pytest.mark.parametrize("dies", ["before enqueueing", "while storing the input"])
def test_a_job_whose_api_died_after_creating_it_is_taken_over_or_failed(redis_url, tmp_path, dies):
    """Before, the record stayed queued for good (no task, no sign of life, so no
    takeover), and its Idempotency-Key answered 409 for 300 s."""
    prefix = f"sca-orphan-{uuid.uuid4().hex[:6]}:"
    worker = Worker(worker_env(redis_url, prefix), tmp_path / "worker.log", "orphans")
    if dies == "before enqueueing":
        dying = Api(redis_url, prefix, SCA_QUEUE=_Stuck())
    else:
        dying = Api(redis_url, prefix, SCA_STORE=_StuckStore.from_url(redis_url, prefix=prefix))
    survivor = Api(redis_url, prefix)
    body = dict(BASEBALL_BODY, options={"seed": 41})
    headers = {"Idempotency-Key": "orphan-1"}
    try:
        threading.Thread(target=_post_quietly, args=(dying, body, headers), daemon=True).start()
        deadline = time.monotonic() + 30
        while not (listed := survivor.get("/v1/jobs").json()["data"]):
            assert time.monotonic() < deadline, "the dying API made no record"
            time.sleep(0.05)
        job_id, died = listed[0]["id"], time.monotonic()
        while (
            retry := survivor.request("post", "/v1/jobs", json=body, headers=headers)
        ).status_code == 409:
            # SCA_HEARTBEAT_TIMEOUT 4 s plus an interval, and room for a loaded machine
            assert time.monotonic() - died < 20, "the key still blocks"
            time.sleep(0.2)
        assert retry.status_code == 202 and retry.json()["id"] == job_id, retry.text
        assert retry.headers["Idempotent-Replayed"] == "true"
        job = survivor.wait(job_id, timeout=60)
        if dies == "before enqueueing":  # taken over: it runs
            assert job["status"] == "succeeded", job.get("error")
            assert sorted(map(sorted, job["result"]["clusters"])) == BASEBALL_TEAMS
        else:  # nothing to run: failed, saying why
            assert job["status"] == "failed" and job["error"]["status"] == 410, job
            assert "input:" in job["error"]["detail"]
        again = survivor.request("post", "/v1/jobs", json=body, headers=headers)
        assert again.json()["id"] == job_id  # the stored answer
        assert [listed["status"] for listed in survivor.get("/v1/jobs").json()["data"]] == [
            job["status"]
        ]
    finally:
        dying.close()
        survivor.close()
        worker.stop()
