"""Polling on the embedded default: ``Retry-After`` while a job runs, ``ETag`` and ``304``,
and a 304 that counts against the request rate as any request."""

from __future__ import annotations

import pytest

from sca_worker.jobs import now
from sca_worker.store.keys import artifact_keys
from tests.conftest import BASEBALL_BODY, BASEBALL_S
from tests.service.conftest import IdleQueue, finished_job, problem

KEY = {"Authorization": "Bearer poll-key"}


def _store(client):
    return client.raw.application.extensions["sca"].store


def test_a_queued_then_running_job_carries_retry_after_and_a_changing_etag(idle_client):
    accepted = idle_client.post("/v1/jobs", json=BASEBALL_BODY)
    assert accepted.headers["Retry-After"] == "1"
    path = accepted.headers["Location"]
    first = idle_client.get(path)
    assert first.headers["Retry-After"] == "1" and first.headers["ETag"]
    unchanged = idle_client.get(path, headers={"If-None-Match": first.headers["ETag"]})
    assert unchanged.status_code == 304 and unchanged.get_data() == b""
    assert unchanged.headers["ETag"] == first.headers["ETag"]
    assert unchanged.headers["Retry-After"] == "1"
    # Every change of what the document shows changes the tag.
    store, job_id, tags = _store(idle_client), accepted.get_json()["id"], {first.headers["ETag"]}
    for fields in (
        {"status": "running", "stage": "balancing"},
        {"stage": "spectral"},
        {"t:spectral": 0.5},
        {"updated": "2030-01-01T00:00:00.000Z"},
    ):
        store.update_job(job_id, fields)
        changed = idle_client.get(path, headers={"If-None-Match": ", ".join(tags)})
        assert changed.status_code == 200, fields
        assert changed.headers["ETag"] not in tags
        tags.add(changed.headers["ETag"])
        assert 1 <= int(changed.headers["Retry-After"]) <= 10


def test_retry_after_grows_with_the_time_a_job_has_run(idle_client):
    job_id = idle_client.post("/v1/jobs", json=BASEBALL_BODY).get_json()["id"]
    store = _store(idle_client)
    store.update_job(
        job_id, {"status": "running", "stage": "iteration", "created": "2000-01-01T00:00:00.000Z"}
    )
    assert idle_client.get(f"/v1/jobs/{job_id}").headers["Retry-After"] == "10"
    store.update_job(job_id, {"created": now(), "stage": "ensemble"})
    assert idle_client.get(f"/v1/jobs/{job_id}").headers["Retry-After"] == "2"


def test_a_finished_job_has_an_etag_and_no_retry_after(client):
    job_id = finished_job(client)
    path = f"/v1/jobs/{job_id}"
    response = client.get(path)
    tag = response.headers["ETag"]
    assert "Retry-After" not in response.headers and response.get_json()["result"]["k"] == 2
    for match in (tag, f"W/{tag}", '"other", ' + tag, "*"):
        assert client.get(path, headers={"If-None-Match": match}).status_code == 304, match
    assert client.get(path, headers={"If-None-Match": '"other"'}).status_code == 200
    # A cached submission finishes at once: 202 with Retry-After 0.
    again = client.post("/v1/jobs", json=BASEBALL_BODY)
    assert again.get_json()["status"] == "succeeded" and again.headers["Retry-After"] == "0"
    # The result expiring turns the document into a failure: a new tag.
    record = _store(client).get_job(job_id)
    _store(client).delete(artifact_keys(record)["result"])
    gone = client.get(path, headers={"If-None-Match": tag})
    assert gone.status_code == 200 and gone.headers["ETag"] != tag
    assert gone.get_json()["status"] == "failed"


def test_an_unknown_job_stays_404(client):
    problem(client.get("/v1/jobs/nope", headers={"If-None-Match": "*"}), 404, "id")


@pytest.mark.parametrize("match", ["tag", "*"])
def test_304s_count_against_the_request_rate(make_client, match):
    client = make_client(SCA_API_KEYS="poll-key", SCA_RATE_LIMIT=2, SCA_QUEUE=IdleQueue())
    job_id = client.post("/v1/jobs", json={"consensus": BASEBALL_S}, headers=KEY).get_json()["id"]
    tag = client.get(f"/v1/jobs/{job_id}", headers=KEY).headers["ETag"]
    condition = tag if match == "tag" else "*"
    statuses = [
        client.get(f"/v1/jobs/{job_id}", headers={**KEY, "If-None-Match": condition}).status_code
        for _ in range(40)
    ]
    assert 429 in statuses and set(statuses) <= {304, 429}
    unknown = [
        client.get("/v1/jobs/nope", headers={**KEY, "If-None-Match": "*"}).status_code
        for _ in range(8)
    ]
    assert 429 in unknown and set(unknown) <= {404, 429}
