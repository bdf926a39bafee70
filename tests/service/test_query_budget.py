"""Queries do not tie up the API: custom clusters run within a time budget (422
naming ``max_iterations`` beyond it) and few long ones run at once (503 with
``Retry-After`` beyond), so ``similar`` stays fast under hostile requests."""

from __future__ import annotations

import itertools
import threading
import time

import numpy as np
import requests

from sca.planted import planted_runs, planted_truth
from tests.conftest import http_get, wait_for
from tests.service.conftest import finished_job, problem
from tests.service.serving import sca_serve

#: A size the element's cluster never has, and a cap of minutes of steps.
HOSTILE = {"element": 0, "min_size": 5, "max_size": 5, "max_iterations": 100_000}


def test_a_query_over_the_budget_is_422_naming_max_iterations(make_client):
    client = make_client(SCA_QUERY_TIME_BUDGET=0.3)
    base = f"/v1/jobs/{finished_job(client)}"
    start = time.monotonic()
    body = problem(client.post(f"{base}/custom-clusters", json=HOSTILE), 422, "max_iterations")
    assert time.monotonic() - start < 1.5
    assert body["type"].endswith("/time-budget-exceeded")
    assert "of 100000 iterations that fit in the time budget" in body["detail"]
    # A query that finds its cluster is unaffected.
    response = client.post(f"{base}/custom-clusters", json={"element": 0, "max_size": 3})
    assert response.status_code == 200


def test_a_long_query_without_a_free_slot_is_503_with_retry_after(make_client):
    client = make_client(SCA_QUERY_TIME_BUDGET=5, SCA_MAX_LONG_QUERIES=0)
    base = f"/v1/jobs/{finished_job(client)}"
    start = time.monotonic()
    response = client.post(f"{base}/custom-clusters", json=HOSTILE)
    body = problem(response, 503)
    assert time.monotonic() - start < 1
    assert body["type"].endswith("/long-queries-busy") and response.headers["Retry-After"] == "5"
    # Short queries need no slot.
    assert client.post(f"{base}/custom-clusters", json={"element": 0}).status_code == 200
    assert client.get(f"{base}/elements/0/similar").status_code == 200


def _labels(n: int) -> list:
    rng = np.random.default_rng(0)
    return planted_runs(planted_truth(n, [1] * 3, rng), 10, 0.1, rng).tolist()


def _similar_until(base: str, job: str, done: threading.Event, latencies: list) -> None:
    with requests.Session() as session:
        for i in itertools.count():
            if done.is_set():
                return
            start = time.perf_counter()
            response = session.get(f"{base}/v1/jobs/{job}/elements/{i % 3000}/similar", timeout=30)
            latencies.append((response.status_code, time.perf_counter() - start))


def test_similar_stays_fast_during_16_hostile_custom_clusters():
    """A real ``sca serve``: 16 custom clusters asking for ~100 s each (n = 3000)
    at once are all answered by the budget, while ``similar`` keeps answering."""
    budget, slots = 2, 2
    env = {
        "SCA_QUERY_TIME_BUDGET": str(budget),
        "SCA_MAX_LONG_QUERIES": str(slots),
        "SCA_RATE_LIMIT": "0",
    }
    with sca_serve(env=env) as base:
        response = requests.post(f"{base}/v1/jobs", json={"labels": _labels(3000)}, timeout=30)
        job = wait_for(http_get(base), response.json()["id"])
        assert job["status"] == "succeeded", job
        hostile = dict(HOSTILE, min_size=1234, max_size=1234)
        answers: list = []

        def attack():
            start = time.monotonic()
            try:
                answer = requests.post(
                    f"{base}/v1/jobs/{job['id']}/custom-clusters", json=hostile, timeout=budget + 10
                )
            except requests.RequestException as exc:  # an answer too late fails below
                answers.append((None, repr(exc), {}, time.monotonic() - start))
                return
            answers.append(
                (answer.status_code, answer.json(), answer.headers, time.monotonic() - start)
            )

        done, latencies = threading.Event(), []
        similar = [
            threading.Thread(target=_similar_until, args=(base, job["id"], done, latencies))
            for _ in range(2)
        ]
        attackers = [threading.Thread(target=attack) for _ in range(16)]
        for thread in similar + attackers:
            thread.start()
        for thread in attackers:
            thread.join(budget + 15)
        done.set()
        for thread in similar:
            thread.join(30)

    assert len(answers) == 16
    for status, body, headers, seconds in answers:
        assert status in (422, 503), (status, body)
        assert seconds < budget + 2, (status, seconds)
        if status == 422:
            assert body["type"].endswith("/time-budget-exceeded")
            assert "max_iterations" in body["errors"]
        else:
            assert body["type"].endswith("/long-queries-busy") and headers["Retry-After"]
    # The first to pass the short deadline took the slots; the rest were refused at once.
    statuses = [status for status, *_ in answers]
    assert statuses.count(422) == slots and statuses.count(503) == 16 - slots
    assert len(latencies) >= 20 and {status for status, _ in latencies} == {200}
    p99 = np.percentile([seconds for _, seconds in latencies], 99)
    assert p99 < 1.0, p99
