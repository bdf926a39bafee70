"""n = 10^6 elements from label runs, end to end through Redis and the worker.

Artifacts are stored in 1 MB chunks here (``CHUNK_BYTES``), so the input
(40 MB) and the balanced operator (about 50 MB) each span dozens of values.
"""

from __future__ import annotations

import numpy as np
import requests

from sca.planted import planted_runs, planted_truth
from tests.conftest import http_get, npy, wait_for
from tests.integration.conftest import CHUNK_BYTES

N, RUNS = 1_000_000, 10


def test_a_million_elements_from_label_runs(api, celery_worker, store, redis_client):
    rng = np.random.default_rng(0)
    truth = planted_truth(N, [1, 1, 1], rng)
    labels = planted_runs(truth, RUNS, 0.1, rng)
    response = requests.post(
        f"{api}/v1/jobs",
        files={"file": ("runs.npy", npy(labels))},
        data={"input": "labels"},
        timeout=120,
    )
    assert response.status_code == 202, response.text
    job_id = response.json()["id"]
    job = wait_for(http_get(api), job_id, timeout=150, interval=0.05)
    assert job["status"] == "succeeded", job.get("error")
    result = job["result"]
    assert result["k"] == 3 and len(result["labels"]) == N
    found = np.asarray(result["labels"])
    # Each found cluster is (up to a few very noisy elements) one true cluster.
    for c in range(3):
        counts = np.bincount(truth[found == c], minlength=3)
        assert counts.max() >= 0.999 * counts.sum()

    record = store.get_job(job_id)
    head = f"{store.prefix}P:{record['hashes']['balance']}"
    chunks = redis_client.keys(head + ":chunk:*")
    assert len(chunks) > 10 and all(redis_client.strlen(k) <= CHUNK_BYTES for k in chunks)
    similar = requests.get(f"{api}/v1/jobs/{job_id}/elements/0/similar?limit=3", timeout=60)
    assert similar.status_code == 200 and len(similar.json()["ranked"]) == 3
