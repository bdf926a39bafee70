"""Latency and throughput of the embedded default (no Redis server), whatever store it uses.

Runs the API in this process as ``sca serve`` does without ``REDIS_URL`` (the
embedded runner, ``SCA_EMBEDDED_WORKERS`` threads) and times, through Flask's
test client:

* the latency of one job at a time (submission to its finished document,
  median of ``--jobs``): the paper's baseball consensus (distinct multiples
  of it, so that no job finds another's result cached), and a raw-data job
  of 120 points clustered by an ensemble of 4 k-means runs (the race tests' job);
* the throughput of ``--jobs`` baseball jobs submitted at once (jobs per second
  from the first submission to the last finished job);
* one store operation: reading a job record (median of 2,000), and how many
  store operations one baseball job makes.

``--default-jobs`` times instead the default job on raw data (no ensemble,
no options: what a new user sends first) at 1,000 x 20 and 5,000 x 50, rows
of Gaussian noise and five separated blobs, each new rows a repeat, beside
``sca.StochasticClustering().fit`` on the same rows in the same process,
alternately: median wall and CPU seconds (this process's and its worker
processes') and the job's ratio to the library's fit.

    python scripts/embedded_store.py --jobs 60
    python scripts/embedded_store.py --default-jobs --repeats 3

It uses nothing but the API, so the same file measures any version of the
service (the figures in :mod:`sca_worker.store` compare two).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from shared import timed

import sca
from sca_service import create_app

ROOT = Path(__file__).resolve().parent.parent
# The paper's baseball consensus (a header row of players).
BASEBALL_S = np.loadtxt(ROOT / "data" / "baseball" / "S.csv", delimiter=",", skiprows=1)


def baseball(i: int) -> dict:
    return {"consensus": (BASEBALL_S * (i + 1)).tolist()}


def raw(i: int) -> dict:
    X = np.random.default_rng(0).normal(size=(120, 3)) + np.repeat(np.eye(3) * 6, 40, axis=0)
    return {
        "data": X.round(4).tolist(),
        "ensemble": [{"algorithm": "kmeans", "k": 3, "runs": 4}],
        "options": {"ensemble_seed": i},
    }


def larger(i: int) -> dict:
    rng = np.random.default_rng(i)
    X = rng.normal(size=(2000, 10)) + np.repeat(np.eye(10)[:4] * 6, 500, axis=0)
    return {
        "data": X.round(4).tolist(),
        "ensemble": [{"algorithm": "kmeans", "k": 4, "runs": 20}],
        "options": {"ensemble_seed": i},
    }


def run(client, runner, body: dict) -> str:
    response = client.post("/v1/jobs", json=body)
    assert response.status_code == 202, response.get_json()
    return response.get_json()["id"]


def finish(client, runner, job_id: str) -> None:
    runner.wait(job_id, timeout=120)
    assert client.get(f"/v1/jobs/{job_id}").get_json()["status"] == "succeeded"


def latency(client, runner, make, count: int, offset: int) -> float:
    seconds = []
    for i in range(count):
        start = time.perf_counter()
        finish(client, runner, run(client, runner, make(offset + i)))
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def throughput(client, runner, count: int, offset: int) -> float:
    start = time.perf_counter()
    ids = [run(client, runner, baseball(offset + i)) for i in range(count)]
    for job_id in ids:
        finish(client, runner, job_id)
    return count / (time.perf_counter() - start)


def record_read(store) -> float:
    store.create_job("bench", {"id": "bench", "status": "queued", "n": 6, "stages": ["a", "b"]})
    seconds = []
    for _ in range(2000):
        start = time.perf_counter()
        store.get_job("bench")
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def operations_per_job(client, runner, store) -> int:
    """Store calls made while one baseball job is submitted and run (public methods)."""
    counted = [0]
    names = [n for n in dir(store) if not n.startswith("_") and callable(getattr(store, n))]
    originals = {n: getattr(store, n) for n in names}

    def counting(method):
        def call(*args, **kwargs):
            counted[0] += 1
            return method(*args, **kwargs)

        return call

    for name, method in originals.items():
        setattr(store, name, counting(method))
    try:
        finish(client, runner, run(client, runner, baseball(10**7)))
    finally:
        for name in originals:
            delattr(store, name)
    return counted[0]


#: The default job's inputs: rows x columns.
DEFAULT_SIZES = ((1000, 20), (5000, 50))


def default_rows(n: int, m: int, shape: str, seed: int) -> np.ndarray:
    """Gaussian noise, or five blobs six apart on the first five axes."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    if shape == "blobs":
        X[:, :5] += 6 * np.eye(5)[rng.integers(0, 5, n)]
    return X


def default_jobs(client, runner, repeats: int) -> None:
    """The default raw-data job beside the library's fit (see the module docstring)."""
    print("rows x columns, shape: job wall / CPU s, fit wall / CPU s (medians), job / fit")
    for n, m in DEFAULT_SIZES:
        for shape in ("noise", "blobs"):
            job, fit = [], []
            for seed in range(repeats):
                X = default_rows(n, m, shape, seed)
                body = {"data": X.round(6).tolist()}
                job.append(timed(lambda: finish(client, runner, run(client, runner, body))))
                fit.append(timed(lambda: sca.StochasticClustering().fit(X)))
            (jw, jc), (fw, fc) = (
                [statistics.median(t[i] for t in times) for i in (0, 1)] for times in (job, fit)
            )
            print(f"{n:,} x {m}, {shape}: {jw:.2f} / {jc:.2f}, {fw:.2f} / {fc:.2f}, {jw / fw:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=60)
    parser.add_argument("--default-jobs", action="store_true", help="the default raw-data job")
    parser.add_argument("--repeats", type=int, default=3, help="--default-jobs: rows per case")
    args = parser.parse_args()
    app = create_app(
        {"TESTING": True, "REDIS_URL": None, "SCA_RATE_LIMIT": 0, "SCA_MAX_ACTIVE_JOBS": 0}
    )
    client, runner = app.test_client(), app.extensions["sca"].queue
    if args.default_jobs:
        latency(client, runner, raw, 2, 10**6)  # warm up (imports, numba, worker processes)
        sca.StochasticClustering().fit(default_rows(1000, 20, "blobs", 10**6))
        default_jobs(client, runner, args.repeats)
        runner.shutdown()
        return
    latency(client, runner, baseball, 5, 10**6)  # warm up (imports, numba)
    latency(client, runner, raw, 2, 10**6)
    store = app.extensions["sca"].store
    print(f"store: {type(store).__name__} on {type(getattr(store, 'client', None)).__name__}")
    small = latency(client, runner, baseball, args.jobs, 0)
    print(f"baseball latency (median): {small * 1e3:.1f} ms")
    print(
        f"raw-data latency (median): {latency(client, runner, raw, args.jobs // 4, 0) * 1e3:.1f} ms"
    )
    print(f"larger raw-data latency (median): {latency(client, runner, larger, 3, 0):.2f} s")
    print(f"baseball throughput: {throughput(client, runner, args.jobs, 10**5):.1f} jobs/s")
    print(f"job record read (median): {record_read(store) * 1e6:.0f} us")
    print(f"store calls per baseball job: {operations_per_job(client, runner, store)}")
    runner.shutdown()


if __name__ == "__main__":
    main()
