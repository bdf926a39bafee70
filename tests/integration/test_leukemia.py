"""Raw data over multipart: the ensemble fans out across worker processes; the
neighbours of patient 2 are the paper's."""

from __future__ import annotations

import json

import requests

from tests.conftest import DATA, LEUKEMIA_PAPER, http_get, wait_for

IDS = [f"patient-{i}" for i in range(1, 39)]


def upload(api, ensemble):
    files = {"file": ("X.csv", (DATA / "leukemia" / "X.csv").read_bytes(), "text/csv")}
    form = {"input": "data", "ensemble": json.dumps(ensemble), "ids": json.dumps(IDS)}
    response = requests.post(f"{api}/v1/jobs", files=files, data=form, timeout=60)
    assert response.status_code == 202, response.text
    return response.json()["id"]


def test_leukemia_neighbours_of_patient_two(api, celery_worker):
    job_id = upload(api, [{"algorithm": "kmeans", "k": [2, 3], "runs": 4}])
    job = wait_for(http_get(api), job_id, 120, interval=0.05)
    assert job["status"] == "succeeded", job.get("error")
    assert job["ensemble"] == {"done": 8, "total": 8}
    assert set(job["timings"]) == {"ensemble", "balancing", "spectral", "iteration"}
    assert len(job["result"]["labels"]) == 38
    log = celery_worker.read_text()
    assert log.count("sca.ensemble_run[") >= 8 and "sca.ensemble_collect" in log
    # The runs fanned out over both worker processes.
    assert all("sca.ensemble_run[" in path.read_text() for path in celery_worker.logs)
    base = f"{api}/v1/jobs/{job_id}/elements/patient-2/similar"
    for method, expected in LEUKEMIA_PAPER["neighbours"].items():
        out = requests.get(base, params={"method": method, "limit": 6}, timeout=30).json()
        assert out["element"] == "patient-2" and out["method"] == method
        assert [r["id"] for r in out["ranked"]] == [f"patient-{p}" for p in expected]
    sca_ranked = requests.get(base, params={"limit": 6}, timeout=30).json()["ranked"]
    assert len(sca_ranked) == 6 and "patient-2" not in [r["id"] for r in sca_ranked]
