"""Custom clusters and similar elements on finished jobs (embedded default)."""

from __future__ import annotations

import io

import pytest

from tests.conftest import BASEBALL_IDS, BASEBALL_S, DATA
from tests.service.conftest import wait_for

# The paper's Table "Custom Cluster for leukemia Patient 2" (1-based patients).
PATIENT2_EUCLIDEAN = [19, 16, 9, 3, 6, 18]
PATIENT2_COSINE = [16, 19, 9, 3, 18, 4]


@pytest.fixture
def baseball(client):
    job_id = client.post("/v1/jobs", json={"consensus": BASEBALL_S, "ids": BASEBALL_IDS}
                         ).get_json()["id"]
    assert wait_for(client, job_id)["status"] == "succeeded"
    return f"/v1/jobs/{job_id}"


def test_custom_cluster_of_rose(client, baseball):
    response = client.post(f"{baseball}/custom-clusters",
                           json={"element": "Rose", "min_size": 2, "max_size": 3})
    assert response.status_code == 200
    out = response.get_json()
    assert out["element"] == "Rose"
    assert out["cluster"][0] == "Rose" and sorted(out["cluster"]) == ["Cobb", "Fisk", "Rose"]
    assert [r["id"] for r in out["ranked"]][:2] in (["Cobb", "Fisk"], ["Fisk", "Cobb"])
    assert len(out["ranked"]) == 5 and out["iterations"] >= 1 and out["k"] == 2
    scores = [r["score"] for r in out["ranked"]]
    assert scores == sorted(scores, reverse=True)


def test_custom_cluster_by_index_with_limit(client, baseball):
    out = client.post(f"{baseball}/custom-clusters",
                      json={"element": 4, "max_size": 3, "limit": 2}).get_json()
    assert out["element"] == "Ruth" and sorted(out["cluster"]) == ["Mays", "Ott", "Ruth"]
    assert len(out["ranked"]) == 2


def test_similar_sca(client, baseball):
    out = client.get(f"{baseball}/elements/Fisk/similar?limit=3").get_json()
    assert out == {"element": "Fisk", "method": "sca", "ranked": out["ranked"]}
    assert [r["id"] for r in out["ranked"]] == ["Rose", "Cobb", "Mays"]
    out = client.get(f"{baseball}/elements/0/similar").get_json()
    assert out["element"] == "Rose" and len(out["ranked"]) == 5


@pytest.fixture(scope="module")
def leukemia_csv() -> bytes:
    return (DATA / "leukemia" / "X.csv").read_bytes()


def test_patient_two_neighbours(client, leukemia_csv):
    form = {"file": (io.BytesIO(leukemia_csv), "X.csv"), "input": "data",
            "ensemble": '[{"algorithm": "kmeans", "k": 2, "runs": 2}]',
            "ids": str([f"P{i}" for i in range(1, 39)]).replace("'", '"')}
    job_id = client.post("/v1/jobs", data=form, content_type="multipart/form-data"
                         ).get_json()["id"]
    assert wait_for(client, job_id)["status"] == "succeeded"
    base = f"/v1/jobs/{job_id}/elements/P2/similar"
    for method, expected in (("euclidean", PATIENT2_EUCLIDEAN), ("cosine", PATIENT2_COSINE)):
        out = client.get(f"{base}?method={method}&limit=6").get_json()
        assert out["element"] == "P2" and out["method"] == method
        assert [r["id"] for r in out["ranked"]] == [f"P{p}" for p in expected]
