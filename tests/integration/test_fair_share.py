"""A fair share of the workers between API keys (SCA_MAX_RUNNING_PER_KEY), against
real Redis and a real ``celery -A worker worker`` with two processes."""

from __future__ import annotations

import time
import uuid

import pytest
import requests

from tests.conftest import BASEBALL_BODY
from tests.integration.faults import KEY, Api, Worker, leukemia_job, worker_env

KEY_B = "fair-share-second-key-51c0"


@pytest.fixture(scope="module")
def api(redis_url, tmp_path_factory):
    prefix = f"sca-share-{uuid.uuid4().hex[:8]}:"
    worker = Worker(
        worker_env(redis_url, prefix, fast_takeover=False, SCA_MAX_RUNNING_PER_KEY=1),
        tmp_path_factory.mktemp("share") / "worker.log",
        f"share-{uuid.uuid4().hex[:6]}",
        concurrency=2,
    )
    service = Api(redis_url, prefix, SCA_API_KEYS=f"{KEY},{KEY_B}", SCA_RATE_LIMIT=0)
    try:
        yield service
    finally:
        service.close()
        worker.stop()


@pytest.mark.slow
def test_one_keys_long_jobs_leave_a_process_to_another_key(api):
    """Key A's two ensembles of 16 runs fill the queue; with one running task per key,
    key B's tiny job, queued behind them, runs on the other process at once; A's
    jobs still finish."""
    a_ids = [leukemia_job(api, runs=16, seed=seed) for seed in (1, 2)]
    headers = {"Authorization": f"Bearer {KEY_B}"}
    start = time.monotonic()
    response = requests.post(
        f"{api.base}/v1/jobs",
        json={**BASEBALL_BODY, "options": {"seed": 7}},
        headers=headers,
        timeout=30,
    )
    assert response.status_code == 202, response.text
    url = f"{api.base}/v1/jobs/{response.json()['id']}"
    while (document := requests.get(url, headers=headers, timeout=10).json())["status"] in (
        "queued",
        "running",
    ):
        assert time.monotonic() - start < 5, "key B's job waited behind key A's runs"
        time.sleep(0.05)
    assert document["status"] == "succeeded"
    assert api.get(f"/v1/jobs/{a_ids[0]}").json()["status"] in ("queued", "running")
    for job_id in a_ids:
        assert api.wait(job_id, timeout=120)["status"] == "succeeded"
