"""``GET /metrics`` on the embedded default (the same code reads the in-process store),
its access rules, and the client's use of the calling services' API over HTTP."""

from __future__ import annotations

import threading
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

import sca_client as c
from sca_service import create_app
from sca_service.cli import start_up_problem
from sca_worker.metrics import ARTIFACT_KINDS, STATUSES
from tests.conftest import BASEBALL_BODY, BASEBALL_IDS, BASEBALL_S, wait_for
from tests.service.async_api import samples
from tests.service.conftest import IdleQueue, problem
from tests.service.serving import serve


@pytest.fixture
def client(make_client):
    """The embedded default taking a new census at every scrape a second apart."""
    return make_client(SCA_METRICS_CENSUS_SECONDS=1)


def _scrape(client, **kwargs) -> dict:
    time.sleep(1.05)  # past the figures reused from the previous scrape
    response = client.get("/metrics", **kwargs)
    assert response.status_code == 200 and response.mimetype == "text/plain"
    return samples(response.get_data(as_text=True))


def _value(figures, name, **labels):
    return figures.get((name, frozenset(labels.items())), 0.0)


def test_metrics_follow_jobs_stages_queries_and_artifacts(client):
    before = _scrape(client)
    assert {_value(before, "sca_jobs", status=s) for s in STATUSES} == {0.0}
    assert {_value(before, "sca_artifact_bytes", kind=k) for k in ARTIFACT_KINDS} == {0.0}
    assert _value(before, "sca_queue_depth") == 0.0
    job_id = client.post("/v1/jobs", json=BASEBALL_BODY).get_json()["id"]
    assert wait_for(client.get, job_id)["status"] == "succeeded"
    for _ in range(3):
        assert client.get(f"/v1/jobs/{job_id}/elements/Ruth/similar").status_code == 200
    after = _scrape(client)
    assert _value(after, "sca_jobs", status="succeeded") == 1.0
    for kind in ("input", "P", "balance", "spectrum", "result", "ids"):
        assert _value(after, "sca_artifact_bytes", kind=kind) > 0, kind
    for stage in ("balancing", "spectral", "iteration"):
        count = _value(after, "sca_stage_duration_seconds_count", stage=stage)
        assert count == 1.0, stage
        assert _value(after, "sca_stage_duration_seconds_bucket", stage=stage, le="+Inf") == count
        assert _value(after, "sca_stage_duration_seconds_sum", stage=stage) > 0
    assert _value(after, "sca_query_duration_seconds_count", query="similar") == 3.0
    assert _value(after, "sca_query_duration_seconds_bucket", query="similar", le="+Inf") == 3.0
    client.delete(f"/v1/jobs/{job_id}")
    emptied = _scrape(client)
    assert _value(emptied, "sca_jobs", status="succeeded") == 0.0
    assert _value(emptied, "sca_artifact_bytes", kind="P") == 0.0


def test_buckets_are_cumulative_and_typed(client):
    client.post("/v1/jobs", json=BASEBALL_BODY)
    time.sleep(1.05)
    text = client.get("/metrics").get_data(as_text=True)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["sca_jobs"].type == "gauge"
    assert families["sca_stage_duration_seconds"].type == "histogram"
    assert families["sca_query_duration_seconds"].type == "histogram"
    buckets = [
        s.value
        for s in families["sca_stage_duration_seconds"].samples
        if s.name.endswith("_bucket") and s.labels["stage"] == "balancing"
    ]
    assert buckets == sorted(buckets) and buckets


def test_openmetrics_when_asked(client):
    response = client.get("/metrics", headers={"Accept": "application/openmetrics-text"})
    assert response.mimetype == "application/openmetrics-text"
    assert response.get_data(as_text=True).rstrip().endswith("# EOF")


def test_the_metrics_key_keeps_job_keys_out(make_client):
    guarded = make_client(SCA_API_KEYS="job-key", SCA_METRICS_KEY="metrics-key")
    response = guarded.get("/metrics")
    problem(response, 401, "Authorization")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    problem(guarded.get("/metrics", headers={"Authorization": "Bearer wrong"}), 401)
    problem(guarded.get("/metrics", headers={"Authorization": "Bearer job-key"}), 403)
    assert (
        guarded.get("/metrics", headers={"Authorization": "Bearer metrics-key"}).status_code == 200
    )
    # ... and the metrics key opens no job.
    problem(guarded.get("/v1/jobs", headers={"Authorization": "Bearer metrics-key"}), 401)
    assert "SCA_METRICS_KEY" in start_up_problem({"SCA_API_KEYS": "a,b", "SCA_METRICS_KEY": "b"})
    try:
        create_app({"TESTING": True, "SCA_API_KEYS": "a", "SCA_METRICS_KEY": "a"})
    except RuntimeError as exc:
        assert "SCA_METRICS_KEY" in str(exc)
    else:
        raise AssertionError("an API key as the metrics key was accepted")


def test_the_client_lists_retries_keys_and_polls_conditionally():
    app = create_app({"TESTING": True, "REDIS_URL": None})
    with serve(app) as url:
        api = c.Client(url)
        ids = [
            api.submit(consensus=BASEBALL_S, ids=BASEBALL_IDS, options={"seed": s}).id
            for s in range(5)
        ]
        assert [job["id"] for job in api.jobs(page_size=2)] == ids[::-1]
        page = api.list_jobs(limit=3)
        assert page["has_more"] and [j["id"] for j in page["data"]] == ids[::-1][:3]
        first = api.submit(consensus=BASEBALL_S, idempotency_key="client-key")
        assert api.submit(consensus=BASEBALL_S, idempotency_key="client-key").id == first.id
        try:
            api.submit(consensus=BASEBALL_S, options={"k": 2}, idempotency_key="client-key")
        except c.InvalidInput as exc:
            assert "Idempotency-Key" in exc.errors
        else:
            raise AssertionError("a key reused with another body was accepted")

    # Polls: conditional, and as often as Retry-After says (not every 0.01 s).
    idle = create_app({"TESTING": True, "REDIS_URL": None, "SCA_QUEUE": IdleQueue()})
    with serve(idle) as url:
        api = c.Client(url)
        job = api.submit(consensus=BASEBALL_S)
        store = idle.extensions["sca"].store
        timer = threading.Timer(2.5, store.update_job, (job.id, {"status": "cancelled"}))
        timer.start()
        polls, session_request = [], api.session.request

        def recording(method, address, **kwargs):
            response = session_request(method, address, **kwargs)
            polls.append(((kwargs.get("headers") or {}).get("If-None-Match"), response))
            return response

        api.session.request = recording
        start = time.monotonic()
        with pytest.raises(c.JobCancelled):
            job.wait(timeout=30, interval=0.01)
        timer.join()
        assert time.monotonic() - start >= 2.5 and 3 <= len(polls) <= 5
        assert [response.status_code for _, response in polls] == [200] + [304] * (
            len(polls) - 2
        ) + [200]
        assert polls[0][0] is None
        for (_, response), (tag, _) in zip(polls, polls[1:]):
            assert tag == response.headers["ETag"]


def test_without_a_key_metrics_answer_only_loopback_clients(make_client):
    client = make_client()
    assert client.get("/metrics").status_code == 200  # the test client is 127.0.0.1
    away = {"REMOTE_ADDR": "192.0.2.7"}
    problem(client.get("/metrics", environ_base=away), 403, "Authorization")
    mapped = {"REMOTE_ADDR": "::ffff:127.0.0.1"}
    assert client.get("/metrics", environ_base=mapped).status_code == 200
    opened = make_client(SCA_METRICS_NETWORKS="192.0.2.0/24")
    assert opened.get("/metrics", environ_base=away).status_code == 200
    problem(opened.get("/metrics"), 403, "Authorization")
    keyed = make_client(SCA_METRICS_KEY="metrics-key")
    bearer = {"Authorization": "Bearer metrics-key"}
    assert keyed.get("/metrics", environ_base=away, headers=bearer).status_code == 200


def test_scrapes_read_the_last_census_instead_of_walking_the_store(make_client):
    """However often /metrics is scraped, the jobs are counted at most once per
    SCA_METRICS_CENSUS_SECONDS, by one process; scrapes meanwhile read that count."""
    client = make_client(SCA_METRICS_CENSUS_SECONDS=60)
    first = _scrape(client)
    assert _value(first, "sca_jobs", status="succeeded") == 0.0
    wait_for(client.get, client.post("/v1/jobs", json=BASEBALL_BODY).get_json()["id"])
    for _ in range(2):
        again = _scrape(client)
        assert _value(again, "sca_jobs", status="succeeded") == 0.0  # the stored census
