"""Races between identical jobs, with real Redis and real worker processes (and the
embedded default): jobs submitted together, and a job deleted while its twin is
submitted.  Each race runs 30 rounds; before run artifacts belonged to their job
and release took the input's lock, most rounds lost a job ("artifact missing").
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import requests

from tests.conftest import BASEBALL_S, http_get, wait_for

ROUNDS = 30


def raw_job(seed: int) -> dict:
    X = np.random.default_rng(0).normal(size=(120, 3)) + np.repeat(np.eye(3) * 6, 40, axis=0)
    return {
        "data": X.round(4).tolist(),
        "ensemble": [{"algorithm": "kmeans", "k": 3, "runs": 4}],
        "options": {"ensemble_seed": seed},
    }


def consensus_job(seed: int) -> dict:
    return {"consensus": (np.array(BASEBALL_S) * (seed + 1)).tolist()}


@pytest.fixture
def http(api):
    session = requests.Session()

    def post(body):
        response = session.post(api + "/v1/jobs", json=body, timeout=60)
        assert response.status_code == 202, response.text
        return response.json()["id"]

    def delete(job_id):
        return session.delete(f"{api}/v1/jobs/{job_id}", timeout=60).status_code

    return post, delete, http_get(api)


@pytest.fixture
def app():
    from sca_service import create_app

    # As the Redis-mode API of these tests: polling every 20 ms for rounds of jobs
    # that take a few milliseconds passes the per-key rate limit (tested on its own).
    app = create_app({"TESTING": True, "REDIS_URL": None, "SCA_RATE_LIMIT": 0})
    yield app
    app.extensions["sca"].queue.shutdown()


@pytest.fixture
def embedded(app):
    def post(body):
        response = app.test_client().post("/v1/jobs", json=body)
        assert response.status_code == 202, response.get_json()
        return response.get_json()["id"]

    def delete(job_id):
        return app.test_client().delete(f"/v1/jobs/{job_id}").status_code

    return post, delete, lambda path: app.test_client().get(path)


@pytest.fixture(params=["redis", "embedded"])
def service(request):
    return request.getfixturevalue("http" if request.param == "redis" else "embedded")


def test_identical_jobs_submitted_together_all_succeed(service):
    post, _, get = service
    failures = []
    with ThreadPoolExecutor(3) as pool:
        for seed in range(ROUNDS):
            ids = list(pool.map(post, [raw_job(1000 + seed)] * 3))
            for job_id in ids:
                job = wait_for(get, job_id, timeout=120)
                if job["status"] != "succeeded":
                    failures.append((seed, job.get("error")))
    assert not failures, failures


def test_deleting_a_job_while_its_twin_is_submitted_loses_nothing(service):
    post, delete, get = service
    failures = []
    with ThreadPoolExecutor(2) as pool:
        for seed in range(ROUNDS):
            body = consensus_job(seed)
            first = post(body)
            wait_for(get, first)
            deleted, second = pool.map(lambda f: f(), [lambda: delete(first), lambda: post(body)])
            assert deleted in (200, 204)
            job = wait_for(get, second, timeout=60)
            if job["status"] != "succeeded" or job["result"]["k"] != 2:
                failures.append((seed, job.get("error")))
            for _ in range(2):  # the result stays readable after the twin is gone
                again = get(f"/v1/jobs/{second}")
                document = again.get_json() if hasattr(again, "get_json") else again.json()
                if document["status"] != "succeeded":
                    failures.append((seed, "later", document.get("error")))
    assert not failures, failures
