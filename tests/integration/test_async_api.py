"""What calling services rely on, over HTTP against real Redis and real Celery workers:
idempotency keys raced across two API processes (two ``sca serve``), ETags of a
running job, job pages under concurrent submissions, a 304 within the rate limit,
and ``/metrics`` describing every process."""

from __future__ import annotations

import threading
import time
from itertools import combinations

import numpy as np
import pytest
import requests

import sca_client as c
from sca_worker.celery_app import create_celery
from sca_worker.store import keys
from tests.conftest import BASEBALL_BODY, BASEBALL_S, DATA, load_csv, wait_for
from tests.integration.conftest import CHUNK_BYTES
from tests.service.async_api import samples
from tests.service.serving import sca_serve, serve

ROUNDS = 20
KEYS = ("race-key-01", "etag-key-02", "list-key-03", "metrics-key-04", "rate-key-05")


def auth(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def apis(redis_url, prefix, celery_worker, tmp_path_factory):
    """Two API processes (``sca serve`` in Redis mode, one gunicorn worker each)
    sharing the session's Redis and workers; their base URLs."""
    env = {
        "REDIS_URL": redis_url,
        "SCA_KEY_PREFIX": prefix,
        "SCA_API_KEYS": ",".join(KEYS),
        "SCA_CHUNK_BYTES": str(CHUNK_BYTES),
        "SCA_JOB_TTL": "600",
        "SCA_RATE_LIMIT": "0",
        "SCA_MAX_ACTIVE_JOBS": "0",
        "SCA_METRICS_CENSUS_SECONDS": "1",
    }
    directory = tmp_path_factory.mktemp("apis")
    with (
        sca_serve(env, ("--workers", "1"), directory / "api-0.log") as first,
        sca_serve(env, ("--workers", "1"), directory / "api-1.log") as second,
    ):
        yield first, second


def _listed(url: str, key: str) -> list[str]:
    return [job["id"] for job in c.Client(url, api_key=key).jobs(page_size=50)]


def test_simultaneous_repeats_on_two_api_processes_make_one_job(apis):
    """Each round two threads send the same key and body at the same moment, one
    to each API process: one job; every 202 is the same answer, the other request
    gets that answer or a 409 (the first still being accepted), and the client,
    which waits out a 409, gets the same job on both processes."""
    key, seen_409 = KEYS[0], 0
    for round_ in range(ROUNDS):
        name, barrier, answers = f"order-{round_}", threading.Barrier(2), [None, None]

        def send(i):
            barrier.wait()
            answers[i] = requests.post(
                apis[i] + "/v1/jobs",
                json=BASEBALL_BODY,
                timeout=60,
                headers={**auth(key), "Idempotency-Key": name},
            )

        threads = [threading.Thread(target=send, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        statuses = sorted(a.status_code for a in answers)
        assert statuses in ([202, 202], [202, 409]), [a.text for a in answers]
        seen_409 += statuses[1] == 409
        accepted = {a.content for a in answers if a.status_code == 202}
        assert len(accepted) == 1
        job_id = answers[statuses.index(202) if answers[0].status_code == 202 else 1].json()["id"]
        for url in apis:
            again = c.Client(url, api_key=key).submit(
                consensus=BASEBALL_S, ids=BASEBALL_BODY["ids"], idempotency_key=name
            )
            assert again.id == job_id
    assert len(_listed(apis[0], key)) == ROUNDS
    # Both at once through the client, which retries a 409 until the answer is stored.
    ids, barrier = [None, None], threading.Barrier(2)

    def submit(i):
        barrier.wait()
        ids[i] = (
            c.Client(apis[i], api_key=key)
            .submit(consensus=BASEBALL_S, options={"seed": 5}, idempotency_key="together")
            .id
        )

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert ids[0] == ids[1] and len(_listed(apis[1], key)) == ROUNDS + 1
    # Another body under a used key is refused by the other process too.
    response = requests.post(
        apis[1] + "/v1/jobs",
        json={"consensus": BASEBALL_S},
        timeout=60,
        headers={**auth(key), "Idempotency-Key": "order-0"},
    )
    assert response.status_code == 422 and "Idempotency-Key" in response.json()["errors"]
    print(f"{seen_409} of {ROUNDS} rounds answered one request 409")


def test_the_etag_changes_exactly_when_a_running_job_does(apis):
    key = KEYS[1]
    X = load_csv(DATA / "iris" / "X.csv")
    body = {
        "data": X.tolist(),
        "ensemble": [{"algorithm": "kmeans", "k": [2, 3, 4], "runs": 8}],
        "options": {"ensemble_seed": int(time.time())},
    }
    accepted = requests.post(apis[0] + "/v1/jobs", json=body, headers=auth(key), timeout=60)
    assert accepted.status_code == 202 and int(accepted.headers["Retry-After"]) >= 1
    path, pairs, conditional = accepted.headers["Location"], [], []
    while True:
        response = requests.get(apis[1] + path, headers=auth(key), timeout=30)
        document = response.json()
        pairs.append((response.headers["ETag"], document))
        active = document["status"] in ("queued", "running")
        assert ("Retry-After" in response.headers) == active
        again = requests.get(
            apis[0] + path,
            timeout=30,
            headers={**auth(key), "If-None-Match": response.headers["ETag"]},
        )
        conditional.append(again.status_code)
        if again.status_code == 304:
            assert again.headers["ETag"] == response.headers["ETag"] and not again.content
        if not active:
            break
        time.sleep(0.02)
    assert document["status"] == "succeeded"
    for (tag_a, doc_a), (tag_b, doc_b) in combinations(pairs, 2):
        assert (tag_a == tag_b) == (doc_a == doc_b)
    assert len({tag for tag, _ in pairs}) >= 3 and 304 in conditional
    print(
        f"{len(pairs)} polls, {len({t for t, _ in pairs})} documents, "
        f"{conditional.count(304)} answered 304"
    )


def test_pages_hold_still_while_another_process_takes_jobs(apis):
    key = KEYS[2]
    before = [
        requests.post(
            apis[1] + "/v1/jobs",
            headers=auth(key),
            timeout=60,
            json={"consensus": (np.array(BASEBALL_S) * (i + 1)).tolist()},
        ).json()["id"]
        for i in range(9)
    ]
    stop, added = threading.Event(), []

    def submit_meanwhile():
        while not stop.is_set():
            response = requests.post(
                apis[1] + "/v1/jobs", json=BASEBALL_BODY, headers=auth(key), timeout=60
            )
            added.append(response.json()["id"])

    lister = c.Client(apis[0], api_key=key)
    page = lister.list_jobs(limit=2)
    listed = [job["id"] for job in page["data"]]
    thread = threading.Thread(target=submit_meanwhile)  # from the first page on
    thread.start()
    try:
        while page["has_more"]:
            time.sleep(0.05)
            page = lister.list_jobs(limit=2, starting_after=page["next_cursor"])
            listed += [job["id"] for job in page["data"]]
    finally:
        stop.set()
        thread.join()
    assert added and listed == before[::-1]
    assert _listed(apis[0], key) == (before + added)[::-1]
    assert not set(_listed(apis[0], KEYS[3])) & set(before + added)


def test_a_304_counts_against_the_rate_limit(redis_url, prefix, celery_worker):
    from sca_service import create_app

    key = KEYS[4]
    app = create_app(
        {
            "REDIS_URL": redis_url,
            "SCA_KEY_PREFIX": prefix,
            "SCA_API_KEYS": key,
            "SCA_CHUNK_BYTES": CHUNK_BYTES,
            "SCA_JOB_TTL": 600,
            "SCA_RATE_LIMIT": 3,
        }
    )
    with serve(app) as url:
        job = c.Client(url, api_key=key).submit(consensus=BASEBALL_S)
        job.wait(timeout=60)
        path = f"{url}/v1/jobs/{job.id}"
        tag = requests.get(path, headers=auth(key), timeout=30).headers["ETag"]
        session = requests.Session()
        for condition in (tag, "*"):
            statuses = [
                session.get(
                    path, headers={**auth(key), "If-None-Match": condition}, timeout=30
                ).status_code
                for _ in range(30)
            ]
            assert 429 in statuses and set(statuses) <= {304, 429}, condition


def _scrape(url: str) -> dict:
    time.sleep(1.05)  # past the figures a process reuses for a second
    response = requests.get(url + "/metrics", timeout=60)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    return samples(response.text)


def _value(figures, name, **labels):
    return figures.get((name, frozenset(labels.items())), 0.0)


def test_metrics_describe_every_process(apis, redis_url, prefix):
    key = KEYS[3]
    before = _scrape(apis[0])
    job = c.Client(apis[0], api_key=key).submit(
        consensus=(np.array(BASEBALL_S) * 7).tolist(), options={"seed": int(time.time())}
    )
    job.wait(timeout=60)
    for _ in range(4):  # answered by the other API process
        c.Client(apis[1], api_key=key).similar(job.id, "3", limit=2)
    deadline = time.monotonic() + 10  # the other process adds its queries once a second
    while True:
        after = _scrape(apis[0])
        added = _value(after, "sca_query_duration_seconds_count", query="similar") - _value(
            before, "sca_query_duration_seconds_count", query="similar"
        )
        if added == 4 or time.monotonic() > deadline:
            break
    assert added == 4
    for stage in ("balancing", "spectral", "iteration"):  # observed by the Celery workers
        assert _value(after, "sca_stage_duration_seconds_count", stage=stage) > _value(
            before, "sca_stage_duration_seconds_count", stage=stage
        )
    assert _value(after, "sca_jobs", status="succeeded") >= 1
    assert _value(after, "sca_artifact_bytes", kind="P") > 0
    assert samples_equal(after, _scrape(apis[1]), "sca_stage_duration_seconds_count")
    assert samples_equal(after, _scrape(apis[1]), "sca_query_duration_seconds_count")

    # Workers stop taking tasks: what is submitted waits in the queue, and says so.
    celery = create_celery({"REDIS_URL": redis_url, "SCA_KEY_PREFIX": prefix})
    assert len(celery.control.cancel_consumer(prefix + keys.queue(), reply=True, timeout=5)) == 2
    try:
        ids = [
            c.Client(apis[1], api_key=key)
            .submit(consensus=(np.array(BASEBALL_S) * (11 + i)).tolist())
            .id
            for i in range(3)
        ]
        waiting = _scrape(apis[0])
        assert _value(waiting, "sca_queue_depth") >= 3
        assert _value(waiting, "sca_jobs", status="queued") >= 3
    finally:
        assert len(celery.control.add_consumer(prefix + keys.queue(), reply=True, timeout=5)) == 2
    for job_id in ids:
        assert (
            wait_for(
                lambda p: requests.get(apis[0] + p, headers=auth(key), timeout=30),
                job_id,
                interval=0.25,
            )["status"]
            == "succeeded"
        )
    assert _value(_scrape(apis[0]), "sca_queue_depth") == 0


def samples_equal(a: dict, b: dict, name: str) -> bool:
    """Whether two scrapes agree on every sample of ``name``."""
    return {k: v for k, v in a.items() if k[0] == name} == {
        k: v for k, v in b.items() if k[0] == name
    }
