"""Raw data over multipart: the ensemble fans out across worker processes; the
neighbours of patient 2 are the paper's."""

from __future__ import annotations

import json
import time

import requests

from tests.conftest import DATA
from tests.integration.conftest import wait_job

PATIENT2_EUCLIDEAN = [19, 16, 9, 3, 6, 18]
PATIENT2_COSINE = [16, 19, 9, 3, 18, 4]
IDS = [f"patient-{i}" for i in range(1, 39)]


def upload(api, ensemble, options=None):
    files = {"file": ("X.csv", (DATA / "leukemia" / "X.csv").read_bytes(), "text/csv")}
    form = {"input": "data", "ensemble": json.dumps(ensemble), "ids": json.dumps(IDS),
            "options": json.dumps(options or {})}
    response = requests.post(f"{api}/v1/jobs", files=files, data=form, timeout=60)
    assert response.status_code == 202, response.text
    return response.json()["id"]


def test_leukemia_neighbours_of_patient_two(api, celery_worker):
    job_id = upload(api, [{"algorithm": "kmeans", "k": [2, 3], "runs": 4}])
    job = wait_job(api, job_id)
    assert job["status"] == "succeeded", job.get("error")
    assert job["ensemble"] == {"done": 8, "total": 8}
    assert set(job["timings"]) == {"ensemble", "balancing", "spectral", "iteration"}
    assert len(job["result"]["labels"]) == 38
    log = celery_worker.read_text()
    assert log.count("sca.ensemble_run[") >= 8 and "sca.ensemble_collect" in log
    # The runs fanned out over both worker processes.
    assert all("sca.ensemble_run[" in path.read_text() for path in celery_worker.logs)
    base = f"{api}/v1/jobs/{job_id}/elements/patient-2/similar"
    for method, expected in (("euclidean", PATIENT2_EUCLIDEAN), ("cosine", PATIENT2_COSINE)):
        out = requests.get(base, params={"method": method, "limit": 6}, timeout=30).json()
        assert out["element"] == "patient-2" and out["method"] == method
        assert [r["id"] for r in out["ranked"]] == [f"patient-{p}" for p in expected]
    sca_ranked = requests.get(base, params={"limit": 6}, timeout=30).json()["ranked"]
    assert len(sca_ranked) == 6 and "patient-2" not in [r["id"] for r in sca_ranked]


def test_cancel_a_running_job(api, celery_worker, store):
    job_id = upload(api, [{"algorithm": "nmf", "k": 6, "runs": 40}], {"ensemble_seed": 5})
    deadline = time.monotonic() + 30
    while requests.get(f"{api}/v1/jobs/{job_id}", timeout=30).json()["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    response = requests.delete(f"{api}/v1/jobs/{job_id}", timeout=30)
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    time.sleep(1.5)
    job = requests.get(f"{api}/v1/jobs/{job_id}", timeout=30).json()
    assert job["status"] == "cancelled" and "result" not in job
    assert job["ensemble"]["done"] < job["ensemble"]["total"]
    record = store.get_job(job_id)
    assert not store.has(f"op:{record['hashes']['input']}")
    assert requests.delete(f"{api}/v1/jobs/{job_id}", timeout=30).status_code == 204
