"""Custom clusters and similar elements on finished jobs (embedded default)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from sca.planted import planted_runs, planted_truth
from tests.conftest import (
    BASEBALL_S,
    BASEBALL_TEAMS,
    DATA,
    LEUKEMIA_PAPER,
    baseball_paper_ranking,
    wait_for,
)
from tests.service.conftest import finished_job


@pytest.fixture
def baseball(client):
    return f"/v1/jobs/{finished_job(client)}"


def test_custom_cluster_of_rose(client, baseball):
    response = client.post(
        f"{baseball}/custom-clusters", json={"element": "Rose", "min_size": 2, "max_size": 3}
    )
    assert response.status_code == 200
    out = response.get_json()
    assert out["element"] == "Rose"
    assert out["cluster"][0] == "Rose" and sorted(out["cluster"]) == BASEBALL_TEAMS[0]
    assert [r["id"] for r in out["ranked"]][:2] in (["Cobb", "Fisk"], ["Fisk", "Cobb"])
    assert len(out["ranked"]) == 5 and out["iterations"] >= 1 and out["k"] == 2
    scores = [r["score"] for r in out["ranked"]]
    assert scores == sorted(scores, reverse=True)


def test_custom_cluster_by_index_with_limit(client, baseball):
    out = client.post(
        f"{baseball}/custom-clusters", json={"element": 4, "max_size": 3, "limit": 2}
    ).get_json()
    assert out["element"] == "Ruth" and sorted(out["cluster"]) == BASEBALL_TEAMS[1]
    assert len(out["ranked"]) == 2


def test_similar_sca(client, baseball):
    out = client.get(f"{baseball}/elements/Fisk/similar?limit=3").get_json()
    assert out == {"element": "Fisk", "method": "sca", "ranked": out["ranked"]}
    # The "sca" method ranks by the element's row of P: the paper's P, to four places.
    paper = baseball_paper_ranking("Fisk")[:3]
    assert [r["id"] for r in out["ranked"]] == [name for name, _ in paper]
    assert [round(r["score"], 4) for r in out["ranked"]] == [score for _, score in paper]
    out = client.get(f"{baseball}/elements/0/similar").get_json()
    assert out["element"] == "Rose" and len(out["ranked"]) == 5


@pytest.fixture(scope="module")
def leukemia_csv() -> bytes:
    return (DATA / "leukemia" / "X.csv").read_bytes()


def test_patient_two_neighbours(client, leukemia_csv):
    form = {
        "file": (io.BytesIO(leukemia_csv), "X.csv"),
        "input": "data",
        "ensemble": '[{"algorithm": "kmeans", "k": 2, "runs": 2}]',
        "ids": json.dumps([f"P{i}" for i in range(1, 39)]),
    }
    job_id = client.post("/v1/jobs", data=form, content_type="multipart/form-data").get_json()["id"]
    assert wait_for(client.get, job_id)["status"] == "succeeded"
    base = f"/v1/jobs/{job_id}/elements/P2/similar"
    for method, expected in LEUKEMIA_PAPER["neighbours"].items():
        out = client.get(f"{base}?method={method}&limit=6").get_json()
        assert out["element"] == "P2" and out["method"] == method
        assert [r["id"] for r in out["ranked"]] == [f"P{p}" for p in expected]


def test_every_query_defaults_to_the_jobs_k(client):
    """The job's k is the one the result reports: here the iteration chose 3 of the
    spectrum's candidates 3 and 4, and a custom cluster and a new element's custom
    cluster both split into 3 unless told otherwise."""
    rng = np.random.default_rng(3)
    labels = planted_runs(planted_truth(400, [1, 2, 3, 6], rng), 20, 0.6, rng)
    posted = client.post("/v1/jobs", json={"labels": labels.tolist()})
    job = wait_for(client.get, posted.get_json()["id"])
    assert job["status"] == "succeeded"
    result = job["result"]
    assert (result["k"], result["k_signal"]) == (3, 4)  # the case this test is about
    base = f"/v1/jobs/{job['id']}"
    custom = client.post(f"{base}/custom-clusters", json={"element": 0, "max_size": 400})
    assert custom.status_code == 200, custom.get_json()
    assert custom.get_json()["k"] == 3
    placed = client.post(
        f"{base}/queries", json={"elements": [{"labels": labels[0].tolist()}], "max_size": 401}
    )
    assert placed.status_code == 200, placed.get_json()
    assert placed.get_json()["elements"][0]["custom_cluster"]["k"] == 3


def test_a_new_element_keeps_its_answer_when_its_custom_bounds_cannot_be_met(client, baseball):
    """Placement and similar elements stay; the unmet custom cluster is explained
    with the element's own id and the bound to change."""
    body = {
        "elements": [{"consensus": BASEBALL_S[0], "id": "newcomer"}],
        "min_size": 5,
        "max_size": 5,
        "max_iterations": 50,
    }
    answer = client.post(f"{baseball}/queries", json=body)
    assert answer.status_code == 200, answer.get_json()
    element = answer.get_json()["elements"][0]
    assert element["id"] == "newcomer" and element["similar"] and "cluster" in element
    assert "custom_cluster" not in element
    unmet = element["custom_cluster_unmet"]
    assert unmet["field"] in ("min_size", "max_size") and unmet["k"] == 2
    assert unmet["detail"].startswith("newcomer: no cluster of the element with size in [5, 5]")
    assert "element 6" not in unmet["detail"]


@pytest.mark.parametrize("given", ["Rose", "twice"])
def test_a_new_elements_id_must_be_its_own(client, baseball, given):
    elements = [{"consensus": BASEBALL_S[0], "id": "Rose" if given == "Rose" else "new"}]
    if given == "twice":
        elements.append({"consensus": BASEBALL_S[1], "id": "new"})
    answer = client.post(f"{baseball}/queries", json={"elements": elements, "custom": False})
    assert answer.status_code == 422
    problem = answer.get_json()
    field = "elements[0].id" if given == "Rose" else "elements[1].id"
    assert field in problem["errors"], problem


def test_a_listed_result_is_read_a_page_at_a_time(client):
    """Pages of a listed result are its lists cut at offset and limit, across page
    boundaries and to the end; bad paging is a 422 naming the parameter."""
    rng = np.random.default_rng(4)
    labels = planted_runs(planted_truth(250, [1, 2, 3], rng), 10, 0.3, rng)
    ids = [f"e{i}" for i in range(250)]
    posted = client.post(
        "/v1/jobs", json={"labels": labels.tolist(), "ids": ids, "options": {"starts": 2}}
    )
    job = wait_for(client.get, posted.get_json()["id"])
    result, base = job["result"], f"/v1/jobs/{job['id']}"
    assert job["links"]["labels"] == f"{base}/labels"
    pages = [client.get(f"{base}/labels?offset={lo}&limit=100").get_json() for lo in (0, 100, 200)]
    assert [len(p["labels"]) for p in pages] == [100, 100, 50]
    assert all(p["n"] == 250 and p["limit"] == 100 for p in pages)
    for field in ("labels", "confidence", "membership", "ids"):
        whole = ids if field == "ids" else result[field]
        assert [value for p in pages for value in p[field]] == whole, field
    assert client.get(f"{base}/labels?offset=250").get_json()["labels"] == []
    first = client.get(f"{base}/labels").get_json()
    assert (first["offset"], first["limit"], first["labels"]) == (0, 1000, result["labels"])
    for query, field in (
        ("offset=251", "offset"),
        ("offset=-1", "offset"),
        ("offset=x", "offset"),
        ("limit=0", "limit"),
        ("limit=10001", "limit"),
        ("limit=2.5", "limit"),
    ):
        response = client.get(f"{base}/labels?{query}")
        assert response.status_code == 422, query
        assert response.content_type == "application/problem+json"
        assert list(response.get_json()["errors"]) == [field], query
