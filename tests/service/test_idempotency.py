"""``Idempotency-Key`` on ``POST /v1/jobs`` on the embedded default (in-process store)."""

from __future__ import annotations

import io
import json
import threading
import time

import numpy as np
import requests

import sca_client as c
from sca_service import create_app
from tests.conftest import BASEBALL_BODY, BASEBALL_S, npy
from tests.service.async_api import plant_pending
from tests.service.conftest import KEY_A, KEY_B, A, B, IdleQueue, problem
from tests.service.serving import serve

OTHER = dict(BASEBALL_BODY, options={"k": 3})


def _listed(client, headers=None) -> list[str]:
    page = client.get("/v1/jobs?limit=100", headers=headers or {}).get_json()
    return [job["id"] for job in page["data"]]


def _post(client, body, key, headers=None):
    return client.post("/v1/jobs", json=body, headers={"Idempotency-Key": key, **(headers or {})})


def test_a_repeat_gets_the_first_answer_and_makes_no_job(idle_client, idle_queue):
    first = _post(idle_client, BASEBALL_BODY, "order-1")
    assert first.status_code == 202 and "Idempotent-Replayed" not in first.headers
    again = _post(idle_client, BASEBALL_BODY, "order-1")
    assert again.status_code == 202 and again.headers["Idempotent-Replayed"] == "true"
    assert again.get_data() == first.get_data()
    for header in ("Location", "Retry-After"):
        assert again.headers[header] == first.headers[header]
    assert idle_queue.submitted == [first.get_json()["id"]]
    assert _listed(idle_client) == [first.get_json()["id"]]
    # The quoted form of the draft's structured-field string is the same key.
    assert _post(idle_client, BASEBALL_BODY, '"order-1"').get_data() == first.get_data()
    # Another key, or none, is another submission.
    assert _post(idle_client, BASEBALL_BODY, "order-2").get_json()["id"] != first.get_json()["id"]
    assert len(idle_queue.submitted) == 2
    assert idle_client.post("/v1/jobs", json=BASEBALL_BODY).status_code == 202
    assert len(idle_queue.submitted) == 3


def test_the_same_key_with_another_body_is_422(idle_client, idle_queue):
    assert _post(idle_client, BASEBALL_BODY, "k").status_code == 202
    body = problem(_post(idle_client, OTHER, "k"), 422, "Idempotency-Key")
    assert body["type"].endswith("idempotency-key-reused")
    # Bytes count: the same JSON spelled otherwise is another body.
    spelled = json.dumps(BASEBALL_BODY, indent=1)
    response = idle_client.post(
        "/v1/jobs", data=spelled, content_type="application/json", headers={"Idempotency-Key": "k"}
    )
    problem(response, 422, "Idempotency-Key")
    assert len(idle_queue.submitted) == 1


def test_a_key_in_use_is_409_with_retry_after(idle_client, idle_queue):
    plant_pending(idle_client, "busy", BASEBALL_BODY)
    response = _post(idle_client, BASEBALL_BODY, "busy")
    body = problem(response, 409, "Idempotency-Key")
    assert body["type"].endswith("idempotency-key-in-use")
    assert int(response.headers["Retry-After"]) >= 1
    problem(_post(idle_client, OTHER, "busy"), 422, "Idempotency-Key")
    assert idle_queue.submitted == []


def test_keys_are_per_api_key(make_client):
    queue = IdleQueue()
    client = make_client(SCA_API_KEYS=f"{KEY_A},{KEY_B}", SCA_QUEUE=queue)
    a = _post(client, BASEBALL_BODY, "shared", A).get_json()["id"]
    b = _post(client, BASEBALL_BODY, "shared", B).get_json()["id"]
    assert a != b and queue.submitted == [a, b]
    assert _post(client, BASEBALL_BODY, "shared", A).get_json()["id"] == a
    assert _listed(client, A) == [a] and _listed(client, B) == [b]


def test_an_error_is_not_kept(idle_client, idle_queue):
    bad = {"consensus": [[1, 2], [3, 1]]}
    problem(_post(idle_client, bad, "retry-me"), 422, "consensus")
    problem(_post(idle_client, bad, "retry-me"), 422, "consensus")  # judged afresh
    assert _post(idle_client, BASEBALL_BODY, "retry-me").status_code == 202  # the key is free
    assert len(idle_queue.submitted) == 1


def test_active_job_limit_429_frees_the_key(make_client):
    queue = IdleQueue()
    client = make_client(SCA_QUEUE=queue, SCA_MAX_ACTIVE_JOBS=1)
    assert client.post("/v1/jobs", json=BASEBALL_BODY).status_code == 202
    problem(_post(client, BASEBALL_BODY, "later"), 429)
    client.delete(f"/v1/jobs/{queue.submitted[0]}")  # cancelled: room for one more
    assert _post(client, BASEBALL_BODY, "later").status_code == 202


def test_malformed_keys_are_400(idle_client):
    for key in ("", "x" * 256, "caf\u00e9"):
        response = idle_client.post(
            "/v1/jobs",
            json=BASEBALL_BODY,
            headers={"Idempotency-Key": key.encode().decode("latin-1")},
        )
        problem(response, 400, "Idempotency-Key")


def test_multipart_repeats_match_across_boundaries(idle_client, idle_queue):
    def form():
        return {
            "file": (io.BytesIO(npy(np.array(BASEBALL_S, float))), "S.npy"),
            "input": "consensus",
            "options": '{"split": "gaps"}',
        }

    first = idle_client.post(
        "/v1/jobs",
        data=form(),
        content_type="multipart/form-data",
        headers={"Idempotency-Key": "upload"},
    )
    again = idle_client.post(
        "/v1/jobs",
        data=form(),
        content_type="multipart/form-data",
        headers={"Idempotency-Key": "upload"},
    )
    assert first.status_code == again.status_code == 202
    assert again.get_data() == first.get_data() and len(idle_queue.submitted) == 1
    other = form()
    other["options"] = '{"split": "kmeans"}'
    problem(
        idle_client.post(
            "/v1/jobs",
            data=other,
            content_type="multipart/form-data",
            headers={"Idempotency-Key": "upload"},
        ),
        422,
        "Idempotency-Key",
    )


def test_keys_expire_after_their_ttl(make_client):
    queue = IdleQueue()
    client = make_client(SCA_QUEUE=queue, SCA_IDEMPOTENCY_TTL=1)
    first = _post(client, BASEBALL_BODY, "short").get_json()["id"]
    assert _post(client, BASEBALL_BODY, "short").get_json()["id"] == first
    time.sleep(1.2)
    assert _post(client, BASEBALL_BODY, "short").get_json()["id"] != first


def test_simultaneous_repeats_make_one_job_over_http():
    """Two threads send the same key and body at once to the embedded default,
    20 rounds: one job per round; a 202 is the same answer; the other is the
    same 202 or a 409, after which the client's retry gets that answer."""
    app = create_app({"TESTING": True, "REDIS_URL": None, "SCA_MAX_ACTIVE_JOBS": 0})
    with serve(app) as url:
        for round_ in range(20):
            key, barrier, answers = f"race-{round_}", threading.Barrier(2), [None, None]

            def send(i):
                barrier.wait()
                answers[i] = requests.post(
                    url + "/v1/jobs",
                    json=BASEBALL_BODY,
                    timeout=30,
                    headers={"Idempotency-Key": key},
                )

            threads = [threading.Thread(target=send, args=(i,)) for i in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            statuses = sorted(a.status_code for a in answers)
            assert statuses in ([202, 202], [202, 409]), statuses
            bodies = {a.content for a in answers if a.status_code == 202}
            assert len(bodies) == 1
            replay = c.Client(url).submit(
                consensus=BASEBALL_S, ids=BASEBALL_BODY["ids"], idempotency_key=key
            )
            assert replay.accepted == json.loads(bodies.pop())
        assert len(list(c.Client(url).jobs(page_size=7))) == 20
