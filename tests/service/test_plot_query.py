"""The custom plot takes the custom-cluster query with the same configured limits."""

from __future__ import annotations

import time

from tests.service.conftest import finished_job, problem


def test_custom_plot_iterations_are_limited(make_client):
    client = make_client(SCA_MAX_ITERATIONS=50)
    base = f"/v1/jobs/{finished_job(client)}"
    problem(
        client.post(f"{base}/custom-clusters", json={"element": 0, "max_iterations": 51}),
        422,
        "max_iterations",
    )
    problem(
        client.get(f"{base}/plots/custom.svg?element=0&max_iterations=51"), 422, "max_iterations"
    )
    response = client.get(f"{base}/plots/custom.svg?element=0&max_iterations=50")
    assert response.status_code == 200 and response.mimetype == "image/svg+xml"


def test_plot_query_numbers_are_checked(make_client):
    client = make_client()
    base = f"/v1/jobs/{finished_job(client)}"
    problem(client.get(f"{base}/plots/custom.svg?element=0&min_size=two"), 422, "min_size")
    problem(client.get(f"{base}/plots/custom.svg?element=0&min_size=3&max_size=2"), 422, "max_size")
    problem(client.get(f"{base}/plots/spectrum.svg?limit=2"), 422, "limit")


def test_custom_plot_shares_the_query_time_budget(make_client):
    client = make_client(SCA_QUERY_TIME_BUDGET=0.3)
    base = f"/v1/jobs/{finished_job(client)}"
    start = time.monotonic()
    body = problem(
        client.get(
            f"{base}/plots/custom.svg?element=0&min_size=5&max_size=5&max_iterations=100000"
        ),
        422,
        "max_iterations",
    )
    assert time.monotonic() - start < 1.5 and body["type"].endswith("/time-budget-exceeded")
