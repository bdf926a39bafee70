"""The plots resource (every response checked against openapi.yaml); the job page's
shell is tested in test_view.py."""

from __future__ import annotations

import struct
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from sca.plots import NAMES
from tests.conftest import BASEBALL_BODY, BASEBALL_IDS, BASEBALL_S, BASEBALL_TEAMS, wait_for
from tests.service.conftest import finished_job, problem


@pytest.fixture
def finished(client):
    """A succeeded baseball job with several starts (so it has a membership)."""
    return f"/v1/jobs/{finished_job(client, dict(BASEBALL_BODY, options={'starts': 4}))}"


@pytest.mark.parametrize("fmt,media_type", [("png", "image/png"), ("svg", "image/svg+xml")])
def test_every_plot_renders_for_a_finished_job(client, finished, fmt, media_type):
    for name in NAMES:
        query = "?element=Rose&max_size=3" if name == "custom" else ""
        response = client.get(f"{finished}/plots/{name}.{fmt}{query}")
        assert response.status_code == 200, (name, response.get_data(as_text=True)[:300])
        assert response.mimetype == media_type
        body = response.get_data()
        if fmt == "png":
            assert body[:8] == b"\x89PNG\r\n\x1a\n"
            assert struct.unpack(">I", body[16:20])[0] == 800
        else:
            assert b"<svg" in body[:2000]


def test_plots_name_the_elements(client, finished):
    svg = client.get(f"{finished}/plots/custom.svg?element=Rose&max_size=3").get_data(True)
    assert all(name in svg for name in BASEBALL_TEAMS[0])
    svg = client.get(f"{finished}/plots/consensus.svg").get_data(as_text=True)
    assert all(name in svg for name in BASEBALL_IDS)


def test_a_plot_is_drawn_once_and_then_served_from_the_store(app, client, finished):
    first = client.get(f"{finished}/plots/spectrum.png").get_data()
    job_id = finished.rsplit("/", 1)[1]
    store = app.extensions["sca"].store
    assert store.load_bytes(f"plot:{job_id}:spectrum.png") == first
    store.save_bytes(f"plot:{job_id}:spectrum.png", b"\x89PNG\r\n\x1a\nstored")
    assert client.get(f"{finished}/plots/spectrum.png").get_data().endswith(b"stored")


def test_unknown_plot_format_or_job_is_404(client, finished):
    for path in (
        f"{finished}/plots/pie.png",
        f"{finished}/plots/spectrum.gif",
        "/v1/jobs/nope/plots/spectrum.png",
    ):
        response = client.get(path)
        assert response.status_code == 404
        assert response.mimetype == "application/problem+json"
        assert response.get_json()["status"] == 404


def test_membership_of_a_single_start_job_is_404(client):
    job = client.post("/v1/jobs", json={"consensus": BASEBALL_S}).get_json()
    wait_for(client.get, job["id"])
    response = client.get(f"/v1/jobs/{job['id']}/plots/membership.png")
    assert response.status_code == 404
    assert "starts > 1" in response.get_json()["detail"]
    # Without a stored trace the trace plot is computed from the cached P.
    assert client.get(f"/v1/jobs/{job['id']}/plots/trace.png").status_code == 200


def test_unfinished_job_is_409(idle_client):
    job = idle_client.post("/v1/jobs", json={"consensus": BASEBALL_S}).get_json()
    response = idle_client.get(f"/v1/jobs/{job['id']}/plots/spectrum.svg")
    assert response.status_code == 409
    assert response.get_json()["errors"] == {"status": ["queued"]}


def test_custom_plot_query_is_validated(client, finished):
    for query, field in (
        ("", "element"),
        ("?element=Rose&min_size=0", "min_size"),
        ("?element=Rose&min_size=3&max_size=2", "max_size"),
        ("?element=Rose&colour=red", "colour"),
    ):
        response = client.get(f"{finished}/plots/custom.png{query}")
        assert response.status_code == 422, query
        assert field in response.get_json()["errors"]
    assert client.get(f"{finished}/plots/custom.png?element=Nobody").status_code == 404
    response = client.get(f"{finished}/plots/spectrum.png?element=Rose")
    assert response.status_code == 422


def test_job_links_name_the_page_and_plots(client, finished):
    links = client.get(finished).get_json()["links"]
    assert links["view"] == f"{finished}/view"
    assert links["plots"] == finished + "/plots/{name}.{format}"


def test_ids_are_drawn_literally_not_as_math_text(client):
    """``$x^$`` and ``$\\foo$`` are mathtext errors; as ids they are text like any other
    (every plot that names elements: the trace's legend, the membership's and the
    consensus's axes, the custom plot)."""
    ids = ["$x^$", "$\\foo$", "a$b", "Ott", "Ruth", "Mays"]
    job = "/v1/jobs/" + finished_job(
        client, {"consensus": BASEBALL_S, "ids": ids, "options": {"starts": 4}}
    )
    for path in (
        f"{job}/plots/trace.png",
        f"{job}/plots/membership.png",
        f"{job}/plots/consensus.svg",
        f"{job}/plots/custom.svg?element=%24x%5E%24",
    ):
        response = client.get(path)
        assert response.status_code == 200, (path, response.get_data(as_text=True)[:300])
        if ".svg" in path:
            assert all(i in response.get_data(as_text=True) for i in ids[:3]), path


def test_a_plot_past_its_time_budget_is_stopped_and_503(make_client):
    """Each drawing runs in a process of its own, killed at SCA_PLOT_TIME_BUDGET."""
    client = make_client(SCA_PLOT_TIME_BUDGET=0.001)
    job = "/v1/jobs/" + finished_job(client, dict(BASEBALL_BODY, options={"starts": 4}))
    start = time.monotonic()
    body = problem(client.get(f"{job}/plots/consensus.png"), 503)
    assert time.monotonic() - start < 5
    assert body["type"].endswith("/plot-budget-exceeded")
    assert "SCA_PLOT_TIME_BUDGET" in body["detail"]


def test_drawing_slots_are_bounded_per_process(make_client):
    client = make_client(SCA_MAX_PLOT_RENDERS=0)
    job = "/v1/jobs/" + finished_job(client)
    answer = client.get(f"{job}/plots/spectrum.svg")
    assert problem(answer, 503)["type"].endswith("/plot-renders-busy")
    assert answer.headers["Retry-After"]


def test_plots_are_drawn_side_by_side(make_client):
    """No lock between drawings: four plots at once, each in its own process."""
    client = make_client(SCA_MAX_PLOT_RENDERS=4)
    job = "/v1/jobs/" + finished_job(client, dict(BASEBALL_BODY, options={"starts": 4}))
    names = ["consensus.png", "membership.svg", "trace.png", "histogram.svg"]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda name: client.get(f"{job}/plots/{name}"), names))
    assert [a.status_code for a in answers] == [200] * 4
    assert answers[0].get_data()[:8] == b"\x89PNG\r\n\x1a\n"
