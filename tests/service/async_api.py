"""Helpers for the tests of the calling services' API: idempotency keys, conditional
polls, job lists and metrics."""

from __future__ import annotations

import json

from prometheus_client.parser import text_string_to_metric_families

from sca_service.jobs import idempotency
from tests.conftest import BASEBALL_BODY, wait_for


def plant_pending(client, key: str, body: dict, headers: dict | None = None) -> None:
    """Put in the store the pending claim that a request with ``key`` and ``body``
    makes while it is being accepted (as another API process would)."""
    app = client.raw.application
    with app.test_request_context("/v1/jobs", method="POST", json=body, headers=headers or {}):
        app.preprocess_request()  # authentication: the claim is the caller's
        name, digest = idempotency._name(key), idempotency.fingerprint()
    marker = json.dumps({"state": "pending", "fingerprint": digest, "token": "elsewhere"})
    assert app.extensions["sca"].store.set_if(name, marker.encode(), 60)


def samples(text: str) -> dict:
    """``{(name, frozenset(labels.items())): value}`` of a Prometheus text exposition."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def hit_async_api(hit, client, make_client) -> None:
    """Produce, through ``hit`` of the contract test, every status these routes document."""
    job_id = hit(client, "post", "/v1/jobs", 202, json=BASEBALL_BODY).get_json()["id"]
    wait_for(client.get, job_id)
    tag = hit(client, "get", f"/v1/jobs/{job_id}", 200).headers["ETag"]
    hit(client, "get", f"/v1/jobs/{job_id}", 304, headers={"If-None-Match": tag})
    hit(client, "get", "/v1/jobs?limit=2", 200)
    hit(client, "get", "/v1/jobs?limit=0", 422)
    plant_pending(client, "contract-key", BASEBALL_BODY)
    hit(
        client,
        "post",
        "/v1/jobs",
        409,
        json=BASEBALL_BODY,
        headers={"Idempotency-Key": "contract-key"},
    )
    hit(client, "get", "/metrics", 200)
    guarded = make_client(SCA_API_KEYS="job-key", SCA_METRICS_KEY="metrics-key")
    hit(guarded, "get", "/metrics", 401)
    hit(guarded, "get", "/metrics", 403, headers={"Authorization": "Bearer job-key"})
    hit(guarded, "get", "/metrics", 200, headers={"Authorization": "Bearer metrics-key"})
