"""openapi.yaml is a valid OpenAPI 3.1 document and real responses conform to it.

The ``client`` fixture checks every response of every route test against the
spec; here each documented (route, status) pair is produced at least once.
"""

from __future__ import annotations

import io
import re

import pytest
import redis
from openapi_spec_validator import validate

from sca_worker.store import Store
from sca_worker.store.keys import artifact_keys
from tests.conftest import BASEBALL_BODY, BASEBALL_S, DATA, free_port, wait_for
from tests.service.async_api import hit_async_api
from tests.service.conftest import ContractError, finished_job


def test_spec_is_valid_openapi_31(spec):
    validate(spec)
    assert spec["openapi"].startswith("3.1")


def test_spec_is_served(client, spec):
    import yaml

    response = client.get("/openapi.yaml")
    assert response.status_code == 200
    assert yaml.safe_load(response.get_data(as_text=True)) == spec


def test_documented_routes_match_the_app(app, spec):
    rules = {
        (rule.rule, method.lower())
        for rule in app.url_map.iter_rules()
        for method in rule.methods - {"HEAD", "OPTIONS"}
        if rule.endpoint != "static"
    }
    flask_paths = {(re.sub(r"<[^>]+>", "{}", path), method) for path, method in rules}
    documented = {
        (re.sub(r"\{[^}]+\}", "{}", path), method)
        for path, item in spec["paths"].items()
        for method in item
        if method in ("get", "post", "delete", "put", "patch")
    }
    assert documented == flask_paths


def test_every_documented_status(client, idle_client, make_client, spec):
    seen = set()

    def hit(c, method, path, status, **kwargs):
        response = c.open(method, path, **kwargs)
        assert response.status_code == status, response.get_data(as_text=True)
        template = next(p for p in spec["paths"] if _matches(p, path.split("?")[0]))
        seen.add((template, method, str(status)))
        return response

    hit(client, "get", "/", 200)
    hit(client, "get", "/healthz", 200)
    hit(client, "get", "/readyz", 200)
    hit(client, "get", "/openapi.yaml", 200)
    body = BASEBALL_BODY
    job = hit(client, "post", "/v1/jobs", 202, json=body).get_json()
    wait_for(client.get, job["id"])
    base = f"/v1/jobs/{job['id']}"
    hit(client, "post", "/v1/jobs", 400, data="{", content_type="application/json")
    hit(make_client(SCA_MAX_N=3), "post", "/v1/jobs", 413, json=body)
    away = {"Sec-Fetch-Site": "cross-site"}
    hit(client, "post", "/v1/jobs", 403, json=body, headers=away)
    hit(client, "delete", base, 403, headers=away)
    for path in ("custom-clusters", "queries"):
        hit(client, "post", f"{base}/{path}", 403, json={}, headers=away)
    tight = make_client(SCA_MAX_JSON_BYTES=64)
    for path in ("custom-clusters", "queries"):
        hit(tight, "post", f"{base}/{path}", 413, data=" " * 65, content_type="application/json")
    hit(client, "post", "/v1/jobs", 415, data="x", content_type="text/plain")
    hit(client, "post", "/v1/jobs", 422, json={"consensus": [[1, 2], [3, 1]]})
    hit(client, "get", base, 200)
    hit(client, "get", "/v1/jobs/nope", 404)
    hit(client, "post", f"{base}/custom-clusters", 200, json={"element": "Ott", "max_size": 3})
    hit(client, "post", f"{base}/custom-clusters", 400, data="{", content_type="application/json")
    hit(client, "post", "/v1/jobs/nope/custom-clusters", 404, json={"element": 0})
    hit(client, "post", f"{base}/custom-clusters", 415, data="x", content_type="text/plain")
    hit(client, "post", f"{base}/custom-clusters", 422, json={"element": 0, "min_size": 0})
    hit(client, "get", f"{base}/elements/Ott/similar", 200)
    new = {"elements": [{"consensus": BASEBALL_S[0]}]}
    hit(client, "post", f"{base}/queries", 200, json=new)
    hit(client, "post", f"{base}/queries", 400, data="{", content_type="application/json")
    hit(client, "post", "/v1/jobs/nope/queries", 404, json=new)
    hit(client, "post", f"{base}/queries", 415, data="x", content_type="text/plain")
    hit(client, "post", f"{base}/queries", 422, json={"elements": [{"consensus": [1]}]})
    hit(client, "get", f"{base}/elements/Nobody/similar", 404)
    hit(client, "get", f"{base}/elements/Ott/similar?limit=0", 422)
    page = hit(client, "get", f"{base}/labels?offset=3&limit=4", 200).get_json()
    assert page["offset"] == 3 and len(page["labels"]) == len(page["ids"]) == page["n"] - 3
    hit(client, "get", f"{base}/labels?limit=0", 422)
    hit(client, "get", "/v1/jobs/nope/labels", 404)
    hit(client, "get", f"{base}/plots/spectrum.png", 200)
    hit(client, "get", f"{base}/plots/consensus.svg", 200)
    hit(client, "get", f"{base}/plots/nope.png", 404)
    hit(client, "get", "/v1/jobs/nope/plots/spectrum.png", 404)
    hit(client, "get", f"{base}/plots/custom.png", 422)
    hit(client, "get", f"{base}/events", 200)
    hit(client, "get", f"{base}/events", 422, headers={"Last-Event-ID": "yesterday"})
    hit(client, "get", "/v1/jobs/nope/events", 404)
    busy = make_client(SCA_MAX_EVENT_STREAMS=0)
    busy_job = busy.post("/v1/jobs", json=body).get_json()["id"]
    assert hit(busy, "get", f"/v1/jobs/{busy_job}/events", 503).headers["Retry-After"]
    hit(client, "get", f"{base}/view", 200)
    hit(client, "get", "/v1/jobs/nope/view", 200)  # a static shell, the same for any id
    queued = hit(idle_client, "post", "/v1/jobs", 202, json=body).get_json()["id"]
    hit(idle_client, "post", f"/v1/jobs/{queued}/custom-clusters", 409, json={"element": 0})
    hit(idle_client, "get", f"/v1/jobs/{queued}/elements/0/similar", 409)
    hit(idle_client, "get", f"/v1/jobs/{queued}/labels", 409)
    hit(
        idle_client,
        "post",
        f"/v1/jobs/{queued}/queries",
        409,
        json={"elements": [{"consensus": BASEBALL_S[0]}]},
    )
    hit(idle_client, "get", f"/v1/jobs/{queued}/plots/spectrum.png", 409)
    hit(idle_client, "delete", f"/v1/jobs/{queued}", 200)
    hit(client, "delete", base, 204)
    hit(client, "delete", base, 404)

    # 410: the job's cached matrices expired.
    gone = _finished_job(make_client, body)
    hit(gone.client, "post", f"/v1/jobs/{gone.id}/custom-clusters", 410, json={"element": 0})
    hit(gone.client, "get", f"/v1/jobs/{gone.id}/elements/0/similar", 410)
    hit(
        gone.client,
        "post",
        f"/v1/jobs/{gone.id}/queries",
        410,
        json={"elements": [{"consensus": BASEBALL_S[0]}]},
    )
    hit(gone.client, "get", f"/v1/jobs/{gone.id}/plots/trace.png", 410)
    gone_store = gone.client.raw.application.extensions["sca"].store
    gone_store.delete(artifact_keys(gone_store.get_job(gone.id))["result"])
    hit(gone.client, "get", f"/v1/jobs/{gone.id}/labels", 410)

    # 503: Redis unreachable.
    down = make_client(SCA_STORE=_DeadStore(), SCA_QUEUE=_DeadQueue())
    for method, path, kwargs in (
        ("get", "/readyz", {}),
        ("post", "/v1/jobs", {"json": body}),
        ("get", "/v1/jobs", {}),
        ("get", "/v1/jobs/x", {}),
        ("delete", "/v1/jobs/x", {}),
        ("post", "/v1/jobs/x/custom-clusters", {"json": {"element": 0}}),
        ("post", "/v1/jobs/x/queries", {"json": {"elements": [{"labels": [0]}]}}),
        ("get", "/v1/jobs/x/elements/0/similar", {}),
        ("get", "/v1/jobs/x/labels", {}),
        ("get", "/v1/jobs/x/plots/spectrum.png", {}),
        ("get", "/v1/jobs/x/events", {}),
    ):
        response = hit(down, method, path, 503, **kwargs)
        assert response.headers["Retry-After"]
    # The page's shell touches no job and counts against no limit: Redis down, it still loads.
    dead_redis = Store.from_url(f"redis://127.0.0.1:{free_port()}/0", timeout=0.5)
    hit(make_client(SCA_STORE=dead_redis, SCA_QUEUE=_DeadQueue()), "get", "/v1/jobs/x/view", 200)

    # 401 without a valid key, 429 over the per-key request rate.
    keyed = make_client(SCA_API_KEYS="key-1", SCA_RATE_LIMIT=1)
    for method, path, kwargs in V1_CALLS:
        response = hit(keyed, method, path, 401, **kwargs)
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        auth = {"Authorization": "Bearer key-1"}
        statuses = [
            keyed.open(method, path, headers=auth, **kwargs).status_code for _ in range(4)
        ]  # at most one second boundary in between
        assert 429 in statuses, statuses
        template = next(p for p in spec["paths"] if _matches(p, path))
        seen.add((template, method, "429"))
    # The page's shell needs no key and is no API call: no request-rate limit.
    assert {keyed.get("/v1/jobs/x/view").status_code for _ in range(4)} == {200}

    hit_async_api(hit, client, make_client)  # idempotency keys, 304, job lists, /metrics

    documented = {
        (path, method, status)
        for path, item in spec["paths"].items()
        for method, op in item.items()
        if method in ("get", "post", "delete")
        for status in op["responses"]
    }
    assert documented - seen == set()


V1_CALLS = (
    ("post", "/v1/jobs", {"json": {"consensus": BASEBALL_S}}),
    ("get", "/v1/jobs", {}),
    ("get", "/v1/jobs/x", {}),
    ("delete", "/v1/jobs/x", {}),
    ("post", "/v1/jobs/x/custom-clusters", {"json": {"element": 0}}),
    ("post", "/v1/jobs/x/queries", {"json": {"elements": [{"labels": [0]}]}}),
    ("get", "/v1/jobs/x/elements/0/similar", {}),
    ("get", "/v1/jobs/x/labels", {}),
    ("get", "/v1/jobs/x/plots/spectrum.png", {}),
    ("get", "/v1/jobs/x/events", {}),
)


def test_raw_data_queries_conform(client):
    raw = (DATA / "iris" / "X.csv").read_bytes()
    form = {
        "file": (io.BytesIO(raw), "X.csv"),
        "input": "data",
        "snn": '{"kappa": 10}',
        "options": '{"k": 3, "trace": true, "starts": 2}',
    }
    job_id = client.post("/v1/jobs", data=form, content_type="multipart/form-data").get_json()["id"]
    assert wait_for(client.get, job_id)["status"] == "succeeded"
    for method in ("sca", "euclidean", "cosine"):
        assert (
            client.get(f"/v1/jobs/{job_id}/elements/3/similar?method={method}").status_code == 200
        )


def test_the_checker_catches_a_wrong_response(client):
    class Fake:
        status_code = 200
        mimetype = "application/json"
        headers = {}

        def get_json(self):
            return {"id": "x"}

        def get_data(self, as_text=False):
            return "{}"

    with pytest.raises(ContractError):
        client.check("get", "/v1/jobs/x", Fake())

    class Unauthorised(Fake):  # a documented 401 without its WWW-Authenticate header
        status_code = 401
        mimetype = "application/problem+json"

        def get_json(self):
            return {
                "type": "about:blank",
                "title": "Unauthorized",
                "status": 401,
                "detail": "no key",
                "errors": {"Authorization": ["missing"]},
            }

    with pytest.raises(ContractError, match="WWW-Authenticate"):
        client.check("get", "/v1/jobs/x", Unauthorised())


def _matches(template: str, path: str) -> bool:
    return re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), path) is not None


class _Finished:
    def __init__(self, client, job_id):
        self.client, self.id = client, job_id


def _finished_job(make_client, body):
    client = make_client()
    job_id = finished_job(client, body)
    store = client.raw.application.extensions["sca"].store
    store.delete(artifact_keys(store.get_job(job_id))["P"])
    return _Finished(client, job_id)


class _DeadStore:
    prefix = "dead:"

    def __getattr__(self, name):
        def fail(*args, **kwargs):
            raise redis.exceptions.ConnectionError("Connection refused")

        return fail


class _DeadQueue:
    def submit(self, job_id, task_id=None):
        raise redis.exceptions.ConnectionError("Connection refused")

    def revoke(self, *args):
        raise redis.exceptions.ConnectionError("Connection refused")

    def ping(self):
        raise redis.exceptions.ConnectionError("Connection refused")


def test_home_points_to_the_spec_the_jobs_and_the_page(client, keyed):
    answer = client.get("/")  # checked against openapi.yaml by the contract client
    assert answer.status_code == 200 and "Accept" in answer.headers["Vary"]
    body = answer.get_json()
    assert body["links"]["openapi"] == "/openapi.yaml"
    assert body["links"]["job_page"] == "/v1/jobs/{id}/view"
    assert "make docs" in body["documentation"]
    assert client.get(body["links"]["openapi"]).status_code == 200
    # a browser gets the same links as a page; no key needed, even where keys are set
    page = keyed.get("/", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert '<a href="/openapi.yaml">' in html and "/v1/jobs/{id}/view" in html
