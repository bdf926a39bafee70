"""One job through the service on a Dask cluster, timed (docs/scale.md, "Through the service").

Writes planted label runs (``--n`` elements, ``--runs`` runs, three equal
clusters) as an npy stack under a temporary storage root, starts a ``dask
scheduler``, ``--workers`` ``dask worker`` processes (one thread each, held to
``--memory-limit``) and one ``celery -A worker worker`` with
``SCA_DASK_SCHEDULER`` set, and submits the labels by reference through the
API (in this process, Flask's test client, on Redis ``--redis``).  For each of
``--repeats`` rounds it times the job (submission to its finished document)
and, alternately, the same labels clustered in memory in this process
(:func:`sca.cluster`), and prints, as JSON: wall seconds, CPU seconds (all
threads of every process of the cluster and the Celery worker, from psutil;
this process's for the in-memory run), the stages' timings, k, the ARI
against the planted clusters, and the peak resident memory (VmHWM) of the
Celery worker's process that ran the job and of each Dask worker.

    python scripts/dask_service.py --n 200000 --runs 20 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import dask.array as da
import numpy as np
import psutil
from sklearn.metrics import adjusted_rand_score

import sca
from sca.planted import planted_runs, planted_truth
from sca_service import create_app

ROOT = Path(__file__).resolve().parent.parent


def start(command: list[str], env: dict, log: Path) -> subprocess.Popen:
    with open(log, "a") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)


def tree(processes: list[subprocess.Popen]) -> list[psutil.Process]:
    found = []
    for process in processes:
        parent = psutil.Process(process.pid)
        found += [parent, *parent.children(recursive=True)]
    return found


def cpu(processes: list[subprocess.Popen]) -> float:
    total = 0.0
    for p in tree(processes):
        try:
            times = p.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def peak_mib(process: psutil.Process) -> float:
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--chunk-rows", type=int, default=50_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="2GiB")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/15")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    truth = planted_truth(args.n, [1, 1, 1], rng)
    labels = planted_runs(truth, args.runs, 0.3, rng)
    data = Path(tempfile.mkdtemp(prefix="sca-dask-"))
    da.to_npy_stack(data / "labels", da.from_array(labels, chunks=(args.chunk_rows, -1)))

    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    log = data / "processes.log"
    port = 20000 + os.getpid() % 20000
    address = f"tcp://127.0.0.1:{port}"
    py = sys.executable
    cluster = [
        start(
            [
                py,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--dashboard-address",
                ":0",
            ],
            env,
            log,
        )
    ]
    time.sleep(2)
    cluster += [
        start(
            [
                py,
                "-m",
                "distributed.cli.dask_worker",
                address,
                "--nthreads",
                "1",
                "--memory-limit",
                args.memory_limit,
                "--no-dashboard",
            ],
            env,
            log,
        )
        for _ in range(args.workers)
    ]
    prefix = f"sca-bench-{uuid.uuid4().hex[:8]}:"
    settings = {
        "REDIS_URL": args.redis,
        "SCA_KEY_PREFIX": prefix,
        "SCA_DATA_ROOTS": f"bench={data}",
        "SCA_DASK_SCHEDULER": address,
        "SCA_JOB_TTL": 3600,
    }
    celery = start(
        [
            py,
            "-m",
            "celery",
            "-A",
            "worker",
            "worker",
            "--concurrency",
            "1",
            "--loglevel",
            "INFO",
            "--without-mingle",
            "--without-gossip",
        ],
        {**env, **{name: str(value) for name, value in settings.items()}},
        log,
    )
    processes = [*cluster, celery]
    client = create_app({**settings, "SCA_ALLOW_ANONYMOUS": 1, "SCA_RATE_LIMIT": 0}).test_client()
    rounds = []
    try:
        while "ready." not in log.read_text():
            time.sleep(0.2)
        for i in range(args.repeats):
            options = {"seed": i}  # a new result each round, never the cache
            before, clock = cpu(processes), time.perf_counter()
            answer = client.post(
                "/v1/jobs",
                json={"labels": {"root": "bench", "path": "labels"}, "options": options},
            ).get_json()
            job = client.get(f"/v1/jobs/{answer['id']}").get_json()
            while job["status"] in ("queued", "running"):
                time.sleep(0.2)
                job = client.get(f"/v1/jobs/{answer['id']}").get_json()
            wall, used = time.perf_counter() - clock, cpu(processes) - before
            assert job["status"] == "succeeded", job
            clock, own = time.perf_counter(), time.process_time()
            memory = sca.cluster(labels=labels, options=options)
            rounds.append(
                {
                    "service_wall": wall,
                    "service_cpu": used,
                    "timings": job["timings"],
                    "k": job["result"]["k"],
                    "ari": adjusted_rand_score(truth, job["result"]["labels"]),
                    "same_as_memory": job["result"]["clusters"] == memory["clusters"],
                    "memory_wall": time.perf_counter() - clock,
                    "memory_cpu": time.process_time() - own,
                }
            )
        pool = [p for p in tree([celery]) if p.pid != celery.pid]
        workers = {c.pid for c in cluster[1:]}
        peaks = {  # the processes that ran the job (not the nannies' resource trackers)
            "celery_pool_mib": max(peak_mib(p) for p in pool),
            "dask_worker_mib": max(peak_mib(p) for p in tree(cluster[1:]) if p.ppid() in workers),
        }
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(30)
        shutil.rmtree(data, ignore_errors=True)
    median = {
        name: round(statistics.median(r[name] for r in rounds), 2)
        for name in ("service_wall", "service_cpu", "memory_wall", "memory_cpu")
    }
    print(
        json.dumps(
            {
                "n": args.n,
                "runs": args.runs,
                "workers": args.workers,
                "median": median,
                "rounds": rounds,
                "peak": peaks,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
