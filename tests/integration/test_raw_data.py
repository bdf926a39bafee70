"""Raw data alone, over HTTP against real Redis and real Celery workers: the default
ensemble fanned out on the standardised data, its record, the cache keyed by the
scale, and new elements scaled as the job's data was."""

from __future__ import annotations

import numpy as np
import requests

import sca
from sca.ensemble_spec import default_ensemble, ensemble_size
from tests.conftest import TWO_GROUPS, http_get, wait_for


def _run(api: str, body: dict) -> dict:
    response = requests.post(f"{api}/v1/jobs", json=body, timeout=30)
    assert response.status_code == 202, response.text
    job = wait_for(http_get(api), response.json()["id"], 120, interval=0.05)
    assert job["status"] == "succeeded", job.get("error")
    return job


def test_data_alone_runs_the_default_ensemble_on_the_workers(api, celery_worker, store):
    job = _run(api, {"data": TWO_GROUPS})
    spec = default_ensemble(len(TWO_GROUPS))
    assert job["ensemble"] == {"done": ensemble_size(spec), "total": ensemble_size(spec)}
    assert sorted(map(sorted, job["result"]["clusters"])) == [list(range(5)), list(range(5, 10))]
    record = store.get_job(job["id"])
    assert record["source"] == {"ensemble": spec, "ensemble_seed": 0, "scale": "standard"}
    h_input = record["hashes"]["input"]
    assert store.has(f"op:{h_input}") and store.has(f"scaling:{h_input}")

    # Another scale is another input: its own ensemble, not the cached one.
    other = _run(api, {"data": TWO_GROUPS, "options": {"scale": "none"}})
    other_record = store.get_job(other["id"])
    assert other_record["source"]["scale"] == "none"
    assert other_record["hashes"]["input"] != h_input
    assert not other["cached"] and other["ensemble"]["done"] == ensemble_size(spec)
    assert store.has(f"op:{other_record['hashes']['input']}")

    # New rows in raw units land with their group: scaled by the job's fit.
    labels = job["result"]["labels"]
    response = requests.post(
        f"{api}/v1/jobs/{job['id']}/queries",
        json={"elements": [{"data": [0.14, 11.0]}, {"data": [0.93, 98.0]}]},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    placed = [e["cluster"] for e in response.json()["elements"]]
    assert placed == [labels[0], labels[5]]
    assert np.isfinite([e["confidence"] for e in response.json()["elements"]]).all()


def test_the_workers_read_k_against_reference_data(api, celery_worker):
    """The spectral stage on the workers applies the core's reference null: noise is
    one cluster, three separated groups are three, each with the same answer as
    sca.cluster on the same rows."""
    rng = np.random.default_rng(0)
    noise = rng.uniform(size=(120, 2))
    groups = np.vstack([rng.standard_normal((40, 2)) + c for c in ([0, 0], [9, 0], [0, 9])])
    for X, k in ((noise, 1), (groups, 3)):
        result = _run(api, {"data": X.tolist()})["result"]
        core = sca.cluster(data=X)
        assert result["k"] == core["k"] == k
        assert result["notes"] == core["notes"]
        assert result["labels"] == core["labels"]
    assert "no cluster structure" in sca.cluster(data=noise)["notes"][0]
