"""Held-out elements placed back into a job (real Redis, real Celery workers).

1,200 points in four overlapping Gaussian blobs: 1,000 are clustered by an
ensemble of k-means and NMF runs fanned out over the workers, which keep each
run's model; the other 200 are then sent as new elements (their rows of
features) and must land in their true cluster as often as the job's own
elements do.
"""

from __future__ import annotations

import numpy as np
import requests
from sklearn.datasets import make_blobs

from sca import matching
from sca_client import Client, InvalidInput
from tests.conftest import http_get, wait_for

ENSEMBLE = [
    {"algorithm": "kmeans", "k": [3, 4, 5], "runs": 4},
    {"algorithm": "nmf", "k": 4, "runs": 4},
]


def blobs():
    X, truth = make_blobs(
        n_samples=1200, centers=4, n_features=8, cluster_std=4.0, random_state=5, center_box=(0, 20)
    )
    return X - X.min() + 0.1, truth  # nonnegative, for NMF


def test_held_out_elements_land_in_their_true_cluster(api, celery_worker, store):
    X, truth = blobs()
    keep, held = slice(0, 1000), slice(1000, 1200)
    client = Client(api, timeout=120)
    job = client.submit(
        data=X[keep],
        ensemble=ENSEMBLE,
        options={"k": 4, "scale": "none"},  # the blobs' features share one unit
        upload=True,
        ids=[f"p{i}" for i in range(1000)],
    )
    document = wait_for(http_get(api), job.id, 180, interval=0.1)
    assert document["status"] == "succeeded", document.get("error")
    assert document["ensemble"] == {"done": 16, "total": 16}
    before = document["result"]
    labels = np.array(before["labels"])
    mapping = matching(labels, truth[keep])
    in_job = float(np.mean(mapping[labels] == truth[keep]))

    placed, confidence = [], []
    for start in range(1000, 1200, 100):
        out = job.query(
            X[start : start + 100],
            kind="data",
            custom=start == 1000,
            min_size=5,
            max_size=400,
            limit=5,
        )
        assert out["n"] == 1000 and out["k"] == 4
        placed += [e["cluster"] for e in out["elements"]]
        confidence += [e["confidence"] for e in out["elements"]]
        if start == 1000:
            first = out["elements"][0]
            assert first["id"] == "new-0" and first["custom_cluster"]["cluster"][0] == "new-0"
            assert 5 <= len(first["custom_cluster"]["cluster"]) <= 400
            assert all(r["id"].startswith("p") for r in first["similar"])
    held_rate = float(np.mean(mapping[np.array(placed)] == truth[held]))
    print(f"true-cluster rate: in the job {in_job:.3f}, held out and placed {held_rate:.3f}")
    assert in_job > 0.9, in_job
    assert held_rate >= in_job - 0.03, (in_job, held_rate)
    assert all(0 < c <= 1 for c in confidence)
    assert wait_for(http_get(api), job.id)["result"] == before  # the job is unchanged
    # The runs' models were kept beside the job's other artifacts.
    assert store.has(f"models:{store.get_job(job.id)['hashes']['input']}")

    bad = requests.post(
        f"{api}/v1/jobs/{job.id}/queries", json={"elements": [{"data": [1.0] * 7}]}, timeout=30
    )
    assert bad.status_code == 422 and "elements[0].data" in bad.json()["errors"]
    try:
        job.query([{"data": [-1.0] * 8}])
    except InvalidInput as exc:
        assert "elements[0].data" in exc.errors  # NMF runs need nonnegative rows
    else:
        raise AssertionError("a negative row was accepted by NMF runs")
