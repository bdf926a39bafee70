"""API keys, job ownership and the per-key limits (embedded default, real stages)."""

from __future__ import annotations

import json
import logging

import pytest

import sca_service.auth
from tests.conftest import BASEBALL_S, wait_for
from tests.service.conftest import KEY_A, KEY_B, A, B, finished_job, keyed_get, problem

BODY = {"consensus": BASEBALL_S}

V1 = [
    ("get", "/v1/jobs/x", {}),
    ("delete", "/v1/jobs/x", {}),
    ("post", "/v1/jobs", {"json": BODY}),
    ("post", "/v1/jobs/x/custom-clusters", {"json": {"element": 0}}),
    ("get", "/v1/jobs/x/elements/0/similar", {}),
]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer wrong-key"},
        {"Authorization": f"Basic {KEY_A}"},
        {"Authorization": KEY_A},
        {"Authorization": f"Bearer {KEY_A}x"},
    ],
)
def test_every_v1_route_needs_a_valid_key(keyed, headers):
    for method, path, kwargs in V1:
        response = keyed.open(method, path, headers=headers, **kwargs)
        body = problem(response, 401, "Authorization")
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="sca"'
        assert KEY_A not in json.dumps(body)
    problem(keyed.raw.get("/v1/nowhere", headers=headers), 401)


def test_health_and_spec_stay_open(keyed):
    assert keyed.get("/healthz").status_code == 200
    assert keyed.get("/readyz").status_code == 200
    assert keyed.get("/openapi.yaml").status_code == 200


def test_jobs_belong_to_their_key(keyed):
    job_id = finished_job(keyed, BODY, A)
    base = f"/v1/jobs/{job_id}"
    for method, path, kwargs in [
        ("get", base, {}),
        ("post", f"{base}/custom-clusters", {"json": {"element": 0}}),
        ("get", f"{base}/elements/0/similar", {}),
        ("delete", base, {}),
    ]:
        body = problem(keyed.open(method, path, headers=B, **kwargs), 404, "id")
        assert "result" not in body and "clusters" not in json.dumps(body)
    # The other key's identical request is not answered from the first key's cache.
    other = keyed.post("/v1/jobs", json=BODY, headers=B).get_json()
    assert other["status"] == "queued"
    assert wait_for(keyed_get(keyed, B), other["id"])["cached"] is False
    again = keyed.post("/v1/jobs", json=BODY, headers=A).get_json()
    assert again["status"] == "succeeded"  # the owner's own cache still answers
    assert keyed.get(base, headers=A).status_code == 200
    assert keyed.delete(base, headers=A).status_code == 204


def test_keys_file_and_variable_together(make_client, tmp_path):
    path = tmp_path / "keys"
    path.write_text(f"# team keys\n\n{KEY_B}\n")
    client = make_client(SCA_API_KEYS=KEY_A, SCA_API_KEYS_FILE=str(path))
    for headers in (A, B):
        assert client.get("/v1/jobs/x", headers=headers).status_code == 404
    assert (
        client.get("/v1/jobs/x", headers={"Authorization": "Bearer # team keys"}).status_code == 401
    )


def test_keys_are_compared_in_constant_time(keyed, monkeypatch):
    calls = []
    real = sca_service.auth.hmac.compare_digest

    def counting(a, b):
        calls.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(sca_service.auth.hmac, "compare_digest", counting)
    for headers in (A, B, {"Authorization": "Bearer a"}, {"Authorization": "Bearer " + "z" * 999}):
        calls.clear()
        keyed.get("/v1/jobs/x", headers=headers)
        # Every known key is compared, digest against digest (fixed length), whatever matched.
        assert calls == [(32, 32), (32, 32)]


def test_keys_are_never_logged_or_stored(keyed, caplog):
    caplog.set_level(logging.DEBUG)
    job_id = finished_job(keyed, BODY, A)
    keyed.get("/v1/jobs/x", headers={"Authorization": f"Bearer {KEY_A}-wrong"})
    assert KEY_A not in caplog.text and KEY_B not in caplog.text
    store = keyed.raw.application.extensions["sca"].store
    record = store.get_job(job_id)
    assert record["owner"] and KEY_A not in json.dumps(record)


def test_rate_limit_is_per_key(make_client):
    client = make_client(SCA_API_KEYS=f"{KEY_A},{KEY_B}", SCA_RATE_LIMIT=3)
    responses = [client.get("/v1/jobs/x", headers=A) for _ in range(10)]
    statuses = [response.status_code for response in responses]
    assert statuses.count(429) >= 4 and statuses[:3] == [404] * 3
    limited = next(response for response in responses if response.status_code == 429)
    body = problem(limited, 429, "Authorization")
    assert limited.headers["Retry-After"] == "1" and "3 requests" in body["detail"]
    assert client.get("/v1/jobs/x", headers=B).status_code == 404  # another key's quota


def test_active_jobs_limit_is_per_key(make_client, idle_queue):
    client = make_client(
        SCA_API_KEYS=f"{KEY_A},{KEY_B}", SCA_MAX_ACTIVE_JOBS=2, SCA_QUEUE=idle_queue
    )
    first, _ = (
        client.post("/v1/jobs", json=dict(BODY, options={"seed": s}), headers=A).get_json()["id"]
        for s in (1, 2)
    )
    third = client.post("/v1/jobs", json=dict(BODY, options={"seed": 3}), headers=A)
    body = problem(third, 429, "jobs")
    assert third.headers["Retry-After"] == "5" and "2 jobs" in body["detail"]
    assert client.post("/v1/jobs", json=BODY, headers=B).status_code == 202
    assert client.delete(f"/v1/jobs/{first}", headers=A).status_code == 200  # cancelled
    assert (
        client.post("/v1/jobs", json=dict(BODY, options={"seed": 3}), headers=A).status_code == 202
    )


@pytest.mark.parametrize("on", ["redis", "embedded"])
def test_storage_quota_is_per_key(make_client, idle_queue, request, on):
    """Each job's input bytes count against its key until it is cancelled or
    deleted (once, however often), or expires; beyond SCA_MAX_KEY_BYTES a
    submission is a 413 naming the input."""
    size = len(BASEBALL_S) ** 2 * 8  # stored as floats
    store = {"SCA_STORE": request.getfixturevalue("redis_store")} if on == "redis" else {}
    client = make_client(
        SCA_API_KEYS=f"{KEY_A},{KEY_B}",
        SCA_MAX_KEY_BYTES=2 * size + size // 2,
        SCA_MAX_ACTIVE_JOBS=0,
        SCA_QUEUE=idle_queue,
        **store,
    )

    def post(seed, headers=A):
        return client.post("/v1/jobs", json=dict(BODY, options={"seed": seed}), headers=headers)

    first, second = (post(seed).get_json()["id"] for seed in (1, 2))
    refused = post(3)
    body = problem(refused, 413, "consensus")
    assert body["type"].endswith("/storage-quota-exceeded")
    assert f"hold {2 * size} bytes" in body["detail"] and f"has {size}" in body["detail"]
    assert post(3, headers=B).status_code == 202  # another key's quota
    assert client.delete(f"/v1/jobs/{first}", headers=A).status_code == 200  # cancelled
    assert post(3).status_code == 202
    for _ in range(2):  # cancelled, then deleted: one refund
        client.delete(f"/v1/jobs/{second}", headers=A)
    client.delete(f"/v1/jobs/{first}", headers=A)  # deleted: nothing more to refund
    assert post(4).status_code == 202
    problem(post(5), 413, "consensus")


def test_anonymous_embedded_default_says_so(make_client, caplog):
    caplog.set_level(logging.WARNING)
    make_client()
    assert "no API keys configured" in caplog.text
