"""Custom clusters and similar elements on finished jobs (embedded default)."""

from __future__ import annotations

import io
import json

import pytest

from tests.conftest import BASEBALL_TEAMS, DATA, LEUKEMIA_PAPER, baseball_paper_ranking, wait_for
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
