"""Webhooks and event streams against real Redis and real ``celery -A worker worker``
processes: the workers deliver signed webhooks to a real receiver on 127.0.0.1 (allowed
by SCA_WEBHOOK_ALLOW), retry them with backoff, and write the events that
``GET /v1/jobs/{id}/events`` serves over HTTP."""

from __future__ import annotations

import time
import uuid

import pytest
import redis
import requests

from sca_client.events import parse
from tests.conftest import BASEBALL_BODY, free_port
from tests.integration.faults import AUTH, KEY, Api, Worker, leukemia_job, worker_env
from tests.receiver import Receiver, verify

SECRET = "integration-secret-0123456789"
#: A second caller's API key (the module's requests use ``KEY``).
KEY_B = "hooks-second-key-8d1e0b"
WEBHOOKS = {
    "SCA_WEBHOOK_ALLOW": "127.0.0.1",
    "SCA_WEBHOOK_BACKOFF": 0.3,
    "SCA_WEBHOOK_RETRIES": 2,
    "SCA_WEBHOOK_TIMEOUT": 1.5,
}


@pytest.fixture(scope="module")
def api(redis_url, tmp_path_factory):
    prefix = f"sca-hooks-{uuid.uuid4().hex[:8]}:"
    log = tmp_path_factory.mktemp("hooks") / "worker.log"
    worker = Worker(
        worker_env(redis_url, prefix, fast_takeover=False, **WEBHOOKS),
        log,
        f"hooks-{uuid.uuid4().hex[:6]}",
        concurrency=2,
    )
    service = Api(redis_url, prefix, SCA_API_KEYS=f"{KEY},{KEY_B}", **WEBHOOKS)
    service.prefix, service.worker_log = prefix, log
    try:
        yield service
    finally:
        service.close()
        worker.stop()


def _submit(api, body) -> str:
    response = api.request("post", "/v1/jobs", json=body)
    assert response.status_code == 202, response.text
    return response.json()["id"]


def _callback(api, job_id: str, state: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        callback = api.get(f"/v1/jobs/{job_id}").json().get("callback")
        if callback and callback["state"] == state:
            return callback
        assert time.monotonic() < deadline, callback
        time.sleep(0.1)


def test_signed_webhook_after_a_retry(api):
    """The receiver answers 500 first, then 200: two signed attempts, the second after
    the backoff, one delivery id; the job says delivered after 2 attempts."""
    receiver = Receiver(statuses=(500, 200))
    try:
        body = {
            **BASEBALL_BODY,
            "options": {"seed": 11},
            "callback_url": receiver.url,
            "callback_secret": SECRET,
        }
        job_id = _submit(api, body)
        assert api.wait(job_id)["status"] == "succeeded"
        first, second = receiver.wait(2)
        assert second["at"] - first["at"] >= 0.25
        for request in (first, second):
            assert verify(SECRET, request["headers"]["SCA-Signature"], request["body"])
            assert request["headers"]["SCA-Delivery"] == f"{job_id}:succeeded"
            assert request["headers"]["Content-Type"] == "application/json"
        assert not verify(
            "some-other-secret-0000", second["headers"]["SCA-Signature"], second["body"]
        )
        payload = receiver.payload(1)
        assert payload["type"] == "job.succeeded"
        assert payload["job"]["id"] == job_id and payload["job"]["k"] == 2
        assert payload["job"]["links"]["self"] == f"/v1/jobs/{job_id}"
        assert _callback(api, job_id, "delivered")["attempts"] == 2
        time.sleep(1)
        assert len(receiver.requests) == 2  # delivered once, never again

        # The same request again: answered from the cache by the API, announced by a worker.
        cached_id = _submit(api, body)
        third = receiver.wait(3)[2]
        assert verify(SECRET, third["headers"]["SCA-Signature"], third["body"])
        assert receiver.payload(2)["job"]["id"] == cached_id
        assert receiver.payload(2)["job"]["cached"] is True
    finally:
        receiver.close()


def test_webhooks_of_failed_and_cancelled_jobs(api):
    receiver = Receiver()
    try:
        failing = {
            **BASEBALL_BODY,
            "options": {"max_iterations": 1, "stable": 6},
            "callback_url": receiver.url,
            "callback_secret": SECRET,
        }
        failed_id = _submit(api, failing)
        assert api.wait(failed_id)["status"] == "failed"
        receiver.wait(1)
        failed = receiver.payload(0)
        assert failed["type"] == "job.failed"
        assert failed["job"]["error"]["type"].endswith("iteration-not-converged")

        # a long ensemble, cancelled while it runs
        job_id = leukemia_job_with_callback(api, receiver.url)
        deadline = time.monotonic() + 60
        while api.get(f"/v1/jobs/{job_id}").json()["status"] != "running":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        cancelled = api.request("delete", f"/v1/jobs/{job_id}")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        second = receiver.wait(2)[1]
        assert verify(SECRET, second["headers"]["SCA-Signature"], second["body"])
        assert receiver.payload(1)["type"] == "job.cancelled"
        assert receiver.payload(1)["job"]["id"] == job_id
    finally:
        receiver.close()


def leukemia_job_with_callback(api, url: str) -> str:
    import json

    from tests.conftest import DATA

    files = {"file": ("X.csv", (DATA / "leukemia" / "X.csv").read_bytes(), "text/csv")}
    form = {
        "input": "data",
        "ensemble": json.dumps([{"algorithm": "nmf", "k": 6, "runs": 60}]),
        "options": json.dumps({"ensemble_seed": 7}),
        "callback_url": url,
        "callback_secret": SECRET,
    }
    response = api.request("post", "/v1/jobs", files=files, data=form, timeout=60)
    assert response.status_code == 202, response.text
    return response.json()["id"]


def test_a_receiver_down_or_silent_costs_the_job_nothing(api):
    """No receiver on the port, or one that never answers within SCA_WEBHOOK_TIMEOUT:
    the job succeeds, the deliveries are retried then given up, and the workers go on."""
    silent = Receiver(delay=30)
    try:
        down = f"http://127.0.0.1:{free_port()}/hook"
        ids = [
            _submit(
                api,
                {
                    **BASEBALL_BODY,
                    "options": {"seed": seed},
                    "callback_url": url,
                    "callback_secret": SECRET,
                },
            )
            for seed, url in ((21, down), (22, silent.url))
        ]
        for job_id in ids:
            assert api.wait(job_id)["status"] == "succeeded"
        for job_id, errors in zip(
            ids, (("ConnectionRefusedError",), ("TimeoutError", "RemoteDisconnected"))
        ):
            callback = _callback(api, job_id, "failed", timeout=90)
            assert callback["attempts"] == 3
            assert callback["error"].startswith(errors), callback
        assert len(silent.requests) == 3
        later = _submit(api, {**BASEBALL_BODY, "options": {"seed": 23}})
        assert api.wait(later, timeout=60)["status"] == "succeeded"
    finally:
        silent.close()


def test_event_stream_over_http_written_by_the_workers(api, redis_url):
    job_id = leukemia_job(api, runs=12, seed=5)
    with requests.get(
        f"{api.base}/v1/jobs/{job_id}/events", headers=AUTH, stream=True, timeout=120
    ) as response:
        assert response.status_code == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        stream = [e for e in parse(response.iter_lines(decode_unicode=True)) if e.id]
    kinds = [(e.event, e.data.get("stage"), e.data.get("state")) for e in stream]
    assert kinds[0] == ("queued", None, None) and kinds[-1][0] == "succeeded"
    for stage in ("ensemble", "balancing", "spectral", "iteration"):
        assert kinds.index(("stage", stage, "started")) < kinds.index(("stage", stage, "finished"))
    done = [e.data["done"] for e in stream if e.event == "progress"]
    assert max(done) == 12  # runs of two worker processes may report out of order
    assert len({e.id for e in stream}) == len(stream)
    client = redis.Redis.from_url(redis_url)
    assert client.xlen(f"{api.prefix}job:{job_id}:events") == len(stream)

    middle = stream[len(stream) // 2]
    with requests.get(
        f"{api.base}/v1/jobs/{job_id}/events",
        stream=True,
        timeout=60,
        headers={**AUTH, "Last-Event-ID": middle.id},
    ) as response:
        resumed = [e for e in parse(response.iter_lines(decode_unicode=True)) if e.id]
    assert [e.id for e in resumed] == [e.id for e in stream[len(stream) // 2 + 1 :]]
    api.request("delete", f"/v1/jobs/{job_id}")
    assert client.exists(f"{api.prefix}job:{job_id}:events") == 0


def test_a_silent_receiver_delays_only_its_own_callers_deliveries(api):
    """Key A's 8 jobs call a receiver that never answers (3 attempts of
    SCA_WEBHOOK_TIMEOUT each): key B's tiny job still runs at once on the worker's
    two processes, and its webhook arrives while A's deliveries hang."""
    silent, receiver = Receiver(delay=30), Receiver()
    b_headers = {"Authorization": f"Bearer {KEY_B}"}
    try:
        a_ids = [
            _submit(
                api,
                {
                    **BASEBALL_BODY,
                    "options": {"seed": 300 + seed},
                    "callback_url": silent.url,
                    "callback_secret": SECRET,
                },
            )
            for seed in range(8)
        ]
        for job_id in a_ids:
            assert api.wait(job_id)["status"] == "succeeded"
        silent.wait(2, timeout=10)  # A's deliveries are hanging now
        start = time.monotonic()
        response = requests.post(
            f"{api.base}/v1/jobs",
            json={
                **BASEBALL_BODY,
                "options": {"seed": 399},
                "callback_url": receiver.url,
                "callback_secret": SECRET,
            },
            headers=b_headers,
            timeout=30,
        )
        assert response.status_code == 202, response.text
        b_id = response.json()["id"]
        while requests.get(f"{api.base}/v1/jobs/{b_id}", headers=b_headers, timeout=10).json()[
            "status"
        ] in ("queued", "running"):
            assert time.monotonic() - start < 4, "key B's job waited behind A's webhooks"
            time.sleep(0.05)
        receiver.wait(1, timeout=4)
        assert receiver.payload(0)["job"]["id"] == b_id
        assert time.monotonic() - start < 5
        # at most SCA_WEBHOOK_PER_SENDER (2) of A's deliveries hang at once
        assert len(silent.requests) <= 4
    finally:
        silent.close()
        receiver.close()
