"""A small job's own writes to Redis go in few round trips (issue: four stages made
59 of them for the baseball job, each its own record, event, liveness and metric;
then 28, with events and artifact reads apart), and so do a submission's."""

from __future__ import annotations

import json

import redis

from sca_service import create_app
from sca_worker import events
from sca_worker.embedded import run_job
from sca_worker.store import Store
from tests.conftest import BASEBALL_BODY, BASEBALL_S
from tests.service.conftest import IdleQueue
from tests.worker.conftest import make_job


class Pipeline(redis.client.Pipeline):
    def execute(self, *args, **kwargs):
        self.trips[0] += 1
        return super().execute(*args, **kwargs)


class CountingRedis(redis.Redis):
    """A Redis client that counts its round trips (a command, or a pipeline)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.trips = [0]

    def execute_command(self, *args, **options):
        self.trips[0] += 1
        return super().execute_command(*args, **options)

    def pipeline(self, transaction=True, shard_hint=None):
        pipe = Pipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)
        pipe.trips = self.trips
        return pipe


def test_the_baseball_job_in_few_round_trips_with_every_event(redis_store):
    client = CountingRedis(connection_pool=redis_store.client.connection_pool)
    store = Store(client, ttl=600, prefix=redis_store.prefix)
    record = make_job(store)
    client.trips[0] = 0
    run_job(store, record["id"])
    trips = client.trips[0]
    job = store.get_job(record["id"])
    assert job["status"] == "succeeded"
    # planning 2 (the record; the artifacts found and touched), then per stage 2
    # (the record before with its started event, after with its finished one),
    # the artifacts read and written (4 in all: the next stage reads them from
    # memory), and the success with its event 1
    assert trips <= 14, trips
    seen = [(name, json.loads(data)) for _, name, data in events.read(store, record["id"])]
    stages = [(data["stage"], data["state"]) for name, data in seen if name == "stage"]
    assert stages == [
        (stage, state)
        for stage in ("balancing", "spectral", "iteration")
        for state in ("started", "finished")
    ]
    assert [name for name, _ in seen][-1] == "succeeded"
    finished = [data for name, data in seen if name == "stage" and data["state"] == "finished"]
    assert all(data["seconds"] > 0 for data in finished)
    assert [data["progress"] for data in finished] == [0.3333, 0.6667, 1.0]


def test_a_submission_in_few_round_trips(redis_store):
    """POST /v1/jobs of the baseball consensus with an API key: its own round trips to
    Redis, the task it sends apart (the queue's connection)."""
    client = CountingRedis(connection_pool=redis_store.client.connection_pool)
    store = Store(client, ttl=600, prefix=redis_store.prefix)
    queue = IdleQueue()
    app = create_app(
        {"TESTING": True, "REDIS_URL": None, "SCA_API_KEYS": "trips", "SCA_STORE": store}
        | {"SCA_QUEUE": queue}
    )
    http = app.test_client()
    headers = {"Authorization": "Bearer trips"}
    assert http.post("/v1/jobs", json=BASEBALL_BODY, headers=headers).status_code == 202
    body = {**BASEBALL_BODY, "consensus": [[2 * v for v in row] for row in BASEBALL_S]}
    client.trips[0] = 0
    response = http.post("/v1/jobs", json=body, headers=headers)  # new content: no cache hit
    assert response.status_code == 202
    trips = client.trips[0]
    job = store.get_job(response.get_json()["id"])
    assert job["status"] == "queued" and job["task_id"] == queue.tasks[job["id"]]
    # the request counted against the key's rate 1, the input charged to its storage
    # 1, the job reserved among its active ones 1 and listed 1, the record made 1,
    # its artifacts tracked 1, found and touched 1, the input stored 1, the
    # elements' ids 1, and the task named with the queued event and the sign of
    # life 1 (11 when the task's id was written apart, after the task was sent)
    assert trips <= 10, trips
