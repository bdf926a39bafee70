"""Redis at maxmemory, with a private ``redis-server`` of a few MB and real workers:
with ``noeviction`` the API answers 503 problem+json and the workers wait for
room; with an evicting policy ``/readyz`` says the setting is wrong."""

from __future__ import annotations

import signal
import time
import uuid

import pytest
import redis

from tests.conftest import BASEBALL_BODY, BASEBALL_TEAMS
from tests.integration.faults import Api, RedisProcess, Worker, leukemia_job, worker_env

# Room for a 30-run NMF ensemble of the leukemia data: its runs and the stacked
# models they give the job (6 x 5000 components each) are both held at collection.
MAXMEMORY = "48mb"


def _server(tmp_path, policy: str) -> RedisProcess:
    server = RedisProcess(tmp_path, ("--maxmemory", MAXMEMORY, "--maxmemory-policy", policy))
    server.start()
    return server


@pytest.fixture
def small_redis(tmp_path):
    server = _server(tmp_path, "noeviction")
    yield server
    server.stop()


class Filler:
    """Fills Redis to its maxmemory with keys of its own, and frees it again."""

    def __init__(self, client):
        self.client, self.keys = client, []

    def fill(self) -> None:
        """Write 1 MB keys until Redis refuses one; then lower maxmemory well below
        the memory used, so that Redis refuses every write, and what is freed
        meanwhile (expiring rate counters, a worker's reply buffer) leaves no room."""
        while True:
            key = f"filler:{len(self.keys)}"
            try:
                self.client.set(key, b"x" * 2**20)
            except redis.exceptions.OutOfMemoryError:
                break
            self.keys.append(key)
        self.client.config_set("maxmemory", self.client.info("memory")["used_memory"] * 3 // 4)

    def free(self) -> None:
        self.client.delete(*self.keys)
        self.client.config_set("maxmemory", MAXMEMORY)


def assert_store_full(response) -> None:
    assert response.status_code == 503, (response.status_code, response.text)
    assert response.headers["Content-Type"] == "application/problem+json"
    assert int(response.headers["Retry-After"]) > 0
    problem = response.json()
    assert problem["type"].endswith("/store-full") and "maxmemory" in problem["detail"]


def _alive(workers) -> bool:
    return all(worker.process.poll() is None for worker in workers)


def _wait_for_ensemble(api, job_id: str, runs: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        job = api.get(f"/v1/jobs/{job_id}").json()
        if job["stage"] == "ensemble" and 1 <= job["ensemble"]["done"] < runs:
            return
        assert job["status"] in ("queued", "running") and time.monotonic() < deadline, job
        time.sleep(0.02)


def test_full_redis_gives_503_and_workers_wait_for_room(small_redis, tmp_path):
    prefix = f"sca-full-{uuid.uuid4().hex[:6]}:"
    env = worker_env(small_redis.url, prefix, fast_takeover=False, SCA_STORE_FULL_WAIT=60)
    api = Api(small_redis.url, prefix)  # the rate limit is on: its counter writes too
    client = redis.Redis.from_url(small_redis.url)
    workers = [Worker(env, tmp_path / f"worker-{i}.log", f"full{i}") for i in range(2)]
    try:
        finished = api.request("post", "/v1/jobs", json=BASEBALL_BODY).json()["id"]
        assert api.wait(finished)["status"] == "succeeded"
        ensemble = leukemia_job(api, runs=30, seed=21)  # running until Redis has room
        _wait_for_ensemble(api, ensemble, 30)
        queued = [
            api.request("post", "/v1/jobs", json=dict(BASEBALL_BODY, options={"seed": s})).json()[
                "id"
            ]
            for s in (1, 2)
        ]
        filler = Filler(client)
        filler.fill()
        assert_store_full(
            api.request("post", "/v1/jobs", json=dict(BASEBALL_BODY, options={"seed": 3}))
        )
        assert_store_full(api.request("delete", f"/v1/jobs/{ensemble}"))  # cancelling writes
        # Reads need no room: they go on, past the rate limiter that cannot count them.
        for path in (
            f"/v1/jobs/{finished}",
            f"/v1/jobs/{finished}/elements/Rose/similar",
            f"/v1/jobs/{finished}/plots/consensus.png",
            f"/v1/jobs/{ensemble}",
        ):
            assert api.get(path).status_code == 200, path
        # Deleting a finished job needs no room either, and makes some.
        assert api.request("delete", f"/v1/jobs/{finished}").status_code == 204
        assert api.get(f"/v1/jobs/{finished}").status_code == 404
        ready = api.get("/readyz")
        assert ready.status_code == 503 and "full" in ready.json()["checks"]["redis"]
        assert any("of maxmemory" in warning for warning in ready.json()["warnings"])

        time.sleep(2)  # the workers meet the full Redis: they take tasks and wait for room
        assert _alive(workers)
        filler.free()

        after = api.request("post", "/v1/jobs", json=dict(BASEBALL_BODY, options={"seed": 4}))
        assert after.status_code == 202, after.text
        # Memory came back well within SCA_STORE_FULL_WAIT: every accepted job succeeds.
        for job_id in [ensemble, *queued, after.json()["id"]]:
            job = api.wait(job_id, timeout=120)
            assert job["status"] == "succeeded", (job.get("error"), job)
        assert sorted(map(sorted, job["result"]["clusters"])) == BASEBALL_TEAMS
        assert _alive(workers)
        logs = "".join((tmp_path / f"worker-{i}.log").read_text() for i in range(2))
        assert "Unrecoverable error" not in logs
    finally:
        for worker in workers:
            worker.stop()
        api.close()
        client.close()


def test_a_task_taken_off_the_queue_of_a_full_redis_is_not_lost(small_redis, tmp_path):
    """A worker takes a task (``BRPOP``) just as Redis fills up: recording it as
    unacknowledged is refused, and the worker must neither exit nor drop it.  Redis
    stays full longer than SCA_STORE_FULL_WAIT: the job fails saying so."""
    prefix = f"sca-taken-{uuid.uuid4().hex[:6]}:"
    env = worker_env(small_redis.url, prefix, fast_takeover=False, SCA_STORE_FULL_WAIT=1)
    api = Api(small_redis.url, prefix)
    client = redis.Redis.from_url(small_redis.url)
    workers = [Worker(env, tmp_path / f"worker-{i}.log", f"taken{i}") for i in range(2)]
    try:
        for worker in workers:
            worker.signal(signal.SIGSTOP)
        job_id = api.request("post", "/v1/jobs", json=BASEBALL_BODY).json()["id"]
        filler = Filler(client)
        filler.fill()
        for worker in workers:
            worker.signal(signal.SIGCONT)
        time.sleep(3)
        assert _alive(workers)
        filler.free()
        job = api.wait(job_id, timeout=120)
        assert job["status"] == "failed" and job["error"]["status"] == 503, job
        assert job["error"]["type"].endswith("/store-full")
        assert "maxmemory" in job["error"]["detail"]
        assert _alive(workers)
        logs = "".join((tmp_path / f"worker-{i}.log").read_text() for i in range(2))
        assert "Unrecoverable error" not in logs
        assert "received without its redelivery record" in logs
    finally:
        for worker in workers:
            worker.signal(signal.SIGCONT)
            worker.stop()
        api.close()
        client.close()


def test_readyz_and_the_worker_name_an_evicting_policy(tmp_path):
    server = _server(tmp_path, "allkeys-lru")
    prefix = f"sca-lru-{uuid.uuid4().hex[:6]}:"
    api = Api(server.url, prefix)
    worker = Worker(worker_env(server.url, prefix), tmp_path / "worker.log", "lru")
    try:
        response = api.get("/readyz")
        assert response.status_code == 503
        assert response.headers["Content-Type"] == "application/problem+json"
        body = response.json()
        assert "maxmemory-policy is allkeys-lru" in body["checks"]["redis"]
        assert "maxmemory-policy" in body["detail"] and body["checks"]["store"] == "ok"
        assert "warnings" not in body  # appendonly is on, memory nearly empty
        log = (tmp_path / "worker.log").read_text()
        assert "WARNING/MainProcess] Redis: maxmemory-policy is allkeys-lru" in log
    finally:
        worker.stop()
        api.close()
        server.stop()
