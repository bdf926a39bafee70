"""Jobs through the service on a real Dask cluster: a ``dask scheduler`` and two
``dask worker`` processes started here, a real ``celery -A worker worker`` with
``SCA_DASK_SCHEDULER`` set, and the API over HTTP (docs/scale.md, "Through the
service").  The labels are named by reference under a storage root."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dask.array as da
import numpy as np
import pytest

import sca
from sca.planted import planted_runs, planted_truth
from sca_worker import events
from sca_worker.store import Store
from sca_worker.store.keys import artifact_keys
from tests.conftest import ROOT, free_port, stop_process
from tests.integration.faults import Api, Worker, worker_env

pytestmark = pytest.mark.slow

N, RUNS = 3000, 20
#: Uploaded labels of at least this many elements go to the Dask cluster too.
THRESHOLD = 2000
#: Referenced jobs of more elements than this have a paged result.
LIST_MAX = 3500
#: Elements of the referenced input whose result is paged.
WIDE = 4000


def planted(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return planted_runs(planted_truth(n, [1, 1, 1], rng), RUNS, 0.3, rng)


class DaskCluster:
    """``dask scheduler`` and two ``dask worker`` processes (one thread each)."""

    def __init__(self, directory: Path):
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
        self.log = directory / "dask.log"
        out = open(self.log, "w")  # noqa: SIM115 - the children keep it
        self.scheduler = subprocess.Popen(
            [*dask, "--host", "127.0.0.1", "--port", str(self.port), "--dashboard-address", ":0"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.workers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_worker",
                    self.address,
                    "--nthreads",
                    "1",
                    "--nworkers",
                    "1",
                    "--no-dashboard",
                    "--memory-limit",
                    "1GiB",
                    "--death-timeout",
                    "5",
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            for _ in range(2)
        ]
        out.close()
        from dask.distributed import Client

        try:
            with Client(self.address, timeout=30) as client:
                client.wait_for_workers(2, timeout=60)
        except BaseException:  # leave no scheduler or worker behind
            self.stop()
            raise

    def tasks(self) -> int:
        """Tasks the scheduler holds for any client."""
        from dask.distributed import Client

        with Client(self.address, timeout=10) as client:
            return client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))

    def kill_scheduler(self) -> None:
        os.killpg(self.scheduler.pid, signal.SIGKILL)
        self.scheduler.wait(10)

    def stop(self) -> None:
        for process in (*self.workers, self.scheduler):
            if process.poll() is None:
                stop_process(process, 10)


class Stack:
    """A Dask cluster, one Celery worker that hands jobs to it, and the API."""

    def __init__(self, directory: Path, redis_url: str, data: Path):
        self.prefix = f"sca-dask-{uuid.uuid4().hex[:8]}:"
        self.cluster = DaskCluster(directory)
        roots = f"cohorts={data}"
        env = worker_env(
            redis_url,
            self.prefix,
            fast_takeover=False,
            SCA_DATA_ROOTS=roots,
            SCA_DASK_SCHEDULER=self.cluster.address,
            SCA_DASK_MIN_ELEMENTS=THRESHOLD,
            SCA_DASK_TIMEOUT=3,
            SCA_WARM="false",
            SCA_RESULT_LIST_MAX=LIST_MAX,
            SCA_HEARTBEAT_INTERVAL=1,  # each watchdog round sweeps the expired jobs' stacks
            SCA_HEARTBEAT_TIMEOUT=60,
        )
        try:
            self.worker = Worker(env, directory / "celery.log", f"dask-{uuid.uuid4().hex[:6]}")
        except BaseException:
            self.cluster.stop()
            raise
        self.api = Api(redis_url, self.prefix, SCA_DATA_ROOTS=roots)
        self.store = Store.from_url(redis_url, ttl=600, prefix=self.prefix)

    def submit(self, path: str | None = None, labels=None, **options) -> str:
        given = labels.tolist() if path is None else {"root": "cohorts", "path": path}
        response = self.api.request("post", "/v1/jobs", json={"labels": given, "options": options})
        assert response.status_code == 202, response.text
        return response.json()["id"]

    def wait_for_stage(self, job_id: str, stage: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = self.api.get(f"/v1/jobs/{job_id}").json()
            if job["status"] == "running" and job["stage"] == stage:
                return
            assert job["status"] in ("queued", "running"), job
            time.sleep(0.05)
        raise AssertionError(f"job {job_id} never reached {stage}")

    def close(self) -> None:
        self.api.close()
        self.worker.stop()
        self.cluster.stop()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A storage root: the planted labels as an npy stack and as a .npy file, and a
    larger matrix for the jobs that are stopped midway."""
    root = tmp_path_factory.mktemp("cohorts")
    labels = planted(N, 0)
    da.to_npy_stack(root / "stack", da.from_array(labels, chunks=(1000, -1)))
    np.save(root / "labels.npy", labels)
    big = planted(40_000, 1)
    da.to_npy_stack(root / "big", da.from_array(big, chunks=(10_000, -1)))
    wide = planted(WIDE, 2)
    da.to_npy_stack(root / "wide", da.from_array(wide, chunks=(1000, -1)))
    yield root, labels
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_url, data):
    running = Stack(tmp_path_factory.mktemp("dask"), redis_url, data[0])
    yield running
    running.close()


def test_a_job_named_by_reference_runs_on_the_cluster(stack, data):
    root, labels = data
    job_id = stack.submit("stack")
    job = stack.api.wait(job_id, timeout=180)
    assert job["status"] == "succeeded", (job, stack.worker.log.read_text()[-3000:])
    expected = sca.cluster(labels=labels)
    result = job["result"]
    assert result["k"] == expected["k"] == 3
    assert result["clusters"] == expected["clusters"]
    assert result["cluster_confidence"] == expected["cluster_confidence"]
    assert "on the Dask cluster" in stack.worker.log.read_text()

    # Each stage started and finished in the job's event stream.
    seen = [
        (json["stage"], json["state"])
        for _, name, json in _events(stack, job_id)
        if name == "stage"
    ]
    for stage in ("balancing", "spectral", "iteration"):
        assert (stage, "started") in seen and (stage, "finished") in seen, seen

    # Redis holds the reference and the names of the written files, not the labels.
    record = stack.store.get_job(job_id)
    keys = artifact_keys(record)
    assert set(stack.store.load_arrays(keys["input"])) == {"reference"}
    P = stack.store.load_arrays(keys["P"])
    assert set(P) == {"kind", "input", "scale", "labels", "spans"}
    assert str(P["kind"]) == "stored"

    # The labels were written beside the input, as an npy stack.
    written = list((root / "sca-results").glob("*/labels"))
    assert len(written) == 1
    assert np.array_equal(sca.storage.load_stack(str(written[0])), result["labels"])

    # An element's cluster: its custom cluster on P (rebuilt from the input and the
    # written balancing vector) and a new element with its labels, placed by the
    # labels read back from the written array.
    custom = stack.api.request("post", f"/v1/jobs/{job_id}/custom-clusters", json={"element": "0"})
    assert custom.status_code == 200, custom.text
    members = custom.json()["cluster"]
    home = next(c for c in expected["clusters"] if 0 in c)
    assert 0 in members and set(members) <= set(home)
    placed = stack.api.request(
        "post",
        f"/v1/jobs/{job_id}/queries",
        json={"elements": [{"labels": labels[0].tolist()}], "custom": False},
    )
    assert placed.status_code == 200, placed.text
    assert placed.json()["elements"][0]["cluster"] == result["labels"][0]


def _events(stack: Stack, job_id: str) -> list:
    import json

    return [(i, name, json.loads(data)) for i, name, data in events.read(stack.store, job_id)]


def test_uploaded_labels_go_to_the_cluster_from_the_threshold(stack, data):
    _, labels = data
    small = labels[:1500]
    left_out = labels.copy()
    left_out[::7, 0] = -1  # runs that leave elements out have no Dask form
    jobs = {
        "large": stack.submit(labels=labels),
        "small": stack.submit(labels=small),
        "left_out": stack.submit(labels=left_out),
    }
    found = {name: stack.api.wait(job_id, timeout=180) for name, job_id in jobs.items()}
    assert all(job["status"] == "succeeded" for job in found.values()), found
    assert found["large"]["result"]["clusters"] == sca.cluster(labels=labels)["clusters"]
    assert found["small"]["result"]["clusters"] == sca.cluster(labels=small)["clusters"]
    log = stack.worker.log.read_text()
    on_dask = {name for name, job_id in jobs.items() if f"job {job_id}: on the Dask" in log}
    assert on_dask == {"large"}


def test_cancelling_a_job_stops_its_work_on_the_cluster(stack):
    job_id = stack.submit("big")
    stack.wait_for_stage(job_id, "spectral")
    response = stack.api.request("delete", f"/v1/jobs/{job_id}")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    deadline = time.monotonic() + 30
    while stack.cluster.tasks() and time.monotonic() < deadline:
        time.sleep(0.2)
    # A job still running would keep sending products (several a second).
    counts = []
    for _ in range(10):
        counts.append(stack.cluster.tasks())
        time.sleep(0.2)
    assert counts == [0] * 10
    assert stack.api.get(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
    # The worker takes the next job.
    again = stack.api.wait(stack.submit("labels.npy"), timeout=180)
    assert again["status"] == "succeeded" and again["result"]["k"] == 3


def test_a_block_gone_before_it_is_read_fails_the_job_naming_the_path(stack, data):
    root, labels = data
    shutil.copytree(root / "stack", root / "doomed")
    # The one Celery process is busy with a long job, so the next one waits in the queue.
    busy = stack.api.request(
        "post",
        "/v1/jobs",
        json={"labels": {"root": "cohorts", "path": "big"}, "options": {"seed": 7}},
    ).json()["id"]
    stack.wait_for_stage(busy, "balancing")
    doomed = stack.submit("doomed")
    (root / "doomed" / "1.npy").unlink()
    job = stack.api.wait(doomed, timeout=240)
    assert job["status"] == "failed", job
    assert job["error"]["status"] == 422 and "labels.path" in job["error"]["errors"], job
    assert stack.api.wait(busy, timeout=240)["status"] == "succeeded"


def test_a_job_whose_scheduler_dies_fails_with_a_reason(tmp_path, redis_url, data):
    lost = Stack(tmp_path, redis_url, data[0])
    try:
        job_id = lost.submit("big")
        lost.wait_for_stage(job_id, "spectral")
        lost.cluster.kill_scheduler()
        job = lost.api.wait(job_id, timeout=90)
        assert job["status"] == "failed", job
        error = job["error"]
        assert error["type"].endswith("/dask-unavailable"), error
        assert lost.cluster.address in error["detail"]
        assert error["stage"] in ("spectral", "iteration")
        # With the scheduler gone, the next job fails at once, saying so.
        unreachable = lost.api.wait(lost.submit("labels.npy"), timeout=60)
        assert unreachable["status"] == "failed"
        assert unreachable["error"]["type"].endswith("/dask-unavailable")
        assert "could not be reached" in unreachable["error"]["detail"]
    finally:
        lost.close()


def _pages(stack: Stack, job_id: str, limit: int) -> dict:
    """Every element's labels and confidence, read a page of ``limit`` at a time."""
    read: dict = {"labels": [], "confidence": []}
    for offset in range(0, WIDE + 1, limit):
        response = stack.api.get(f"/v1/jobs/{job_id}/labels?offset={offset}&limit={limit}")
        assert response.status_code == 200, response.text
        page = response.json()
        assert page["offset"] == offset and page["n"] == WIDE
        assert len(page["labels"]) == min(limit, WIDE - offset)
        for name in read:
            read[name] += page[name]
    return read


def test_a_large_job_is_paged_queried_and_its_stacks_deleted_with_it(stack, data):
    """Above SCA_RESULT_LIST_MAX the result lists no element: its k and cluster sizes
    are the listed form's, its elements are read a page at a time, its queries read
    the written files, and its stacks go when the job is deleted or expires."""
    root = data[0]
    wide = np.concatenate([np.load(root / "wide" / f"{i}.npy") for i in range(WIDE // 1000)])
    job_id = stack.submit("wide", starts=2)
    # Runs while the first is read; an input of its own, so no shared P names the
    # first's stacks once it is deleted (one does keep them: tests/worker/test_cleanup.py).
    shutil.copytree(root / "wide", root / "wide-copy")
    expiring = stack.submit("wide-copy", starts=2)
    listed = sca.cluster(labels=wide, options={"starts": 2})
    job = stack.api.wait(job_id, timeout=180)
    assert job["status"] == "succeeded", (job, stack.worker.log.read_text()[-3000:])
    result = job["result"]
    assert result["per_element"] == "paged"
    assert not {"clusters", "labels", "confidence", "membership"} & set(result)
    assert result["k"] == listed["k"] == 3
    assert result["cluster_sizes"] == [len(members) for members in listed["clusters"]]
    assert np.allclose(result["cluster_confidence"], listed["cluster_confidence"], atol=1e-5)
    assert all("labels" not in s and sum(s["cluster_sizes"]) == WIDE for s in result["solutions"])
    written = result["written"]
    assert written["root"] == "cohorts" and written["path"].startswith("sca-results/")
    assert written["arrays"] == ["labels", "confidence", "membership"]
    directory = root / written["path"]

    # Paged in blocks that straddle the written stacks' blocks: the listed form's lists.
    read = _pages(stack, job_id, 700)
    assert read["labels"] == listed["labels"]
    assert np.allclose(read["confidence"], listed["confidence"], atol=1e-5)
    bad = stack.api.get(f"/v1/jobs/{job_id}/labels?offset={WIDE + 1}")
    assert bad.status_code == 422 and list(bad.json()["errors"]) == ["offset"]

    # Queries on P read from the input and the written balancing vector.
    custom = stack.api.request("post", f"/v1/jobs/{job_id}/custom-clusters", json={"element": "0"})
    assert custom.status_code == 200, custom.text
    home = set(next(c for c in listed["clusters"] if 0 in c))
    assert set(custom.json()["cluster"]) <= home
    similar = stack.api.get(f"/v1/jobs/{job_id}/elements/0/similar?limit=5")
    assert similar.status_code == 200, similar.text
    assert {int(r["id"]) for r in similar.json()["ranked"]} <= home
    placed = stack.api.request(
        "post",
        f"/v1/jobs/{job_id}/queries",
        json={"elements": [{"labels": wide[0].tolist()}], "custom": False},
    )
    assert placed.status_code == 200, placed.text
    assert placed.json()["elements"][0]["cluster"] == listed["labels"][0]
    assert stack.api.get(f"/v1/jobs/{job_id}/plots/consensus.png").status_code == 404

    # Deleted: its stacks go with it.
    assert directory.is_dir()
    assert stack.api.request("delete", f"/v1/jobs/{job_id}").status_code == 204
    assert not directory.exists()

    # Expired (its artifacts' TTL run out): a watchdog round deletes them.
    again = stack.api.wait(expiring, timeout=180)
    assert again["status"] == "succeeded"
    directory = root / again["result"]["written"]["path"]
    assert directory.is_dir()
    keys = artifact_keys(stack.store.get_job(again["id"]))
    stack.store.touch(keys["P"], keys["result"], ttl=1)
    deadline = time.monotonic() + 30
    while directory.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not directory.exists()
