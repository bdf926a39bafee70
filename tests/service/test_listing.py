"""``GET /v1/jobs`` on the embedded default: the caller's jobs only, newest first,
cursor pages that hold still while jobs are submitted."""

from __future__ import annotations

from tests.conftest import BASEBALL_BODY, Monitor
from tests.service.conftest import KEY_A, KEY_B, A, B, IdleQueue, problem


def _client(make_client):
    return make_client(
        SCA_API_KEYS=f"{KEY_A},{KEY_B}", SCA_QUEUE=IdleQueue(), SCA_MAX_ACTIVE_JOBS=0
    )


def _submit(client, headers, count: int) -> list[str]:
    return [
        client.post("/v1/jobs", json=BASEBALL_BODY, headers=headers).get_json()["id"]
        for _ in range(count)
    ]


def _pages(client, headers, limit: int, between=None) -> list[list[str]]:
    pages, after = [], None
    while True:
        query = f"/v1/jobs?limit={limit}" + (f"&starting_after={after}" if after else "")
        page = client.get(query, headers=headers).get_json()
        pages.append([job["id"] for job in page["data"]])
        assert page["object"] == "list" and page["url"] == "/v1/jobs"
        assert all("result" not in job for job in page["data"])
        if not page["has_more"]:
            assert page["next_cursor"] is None
            return pages
        assert page["next_cursor"] == pages[-1][-1]
        after = page["next_cursor"]
        if between is not None:
            between()


def test_each_key_lists_its_own_jobs_newest_first(make_client):
    client = _client(make_client)
    mine, theirs = _submit(client, A, 5), _submit(client, B, 2)
    assert _pages(client, A, 2) == [mine[::-1][:2], mine[::-1][2:4], mine[::-1][4:]]
    assert _pages(client, B, 10) == [theirs[::-1]]
    # A page never starts after another key's job.
    problem(client.get(f"/v1/jobs?starting_after={theirs[0]}", headers=A), 422, "starting_after")
    default = client.get("/v1/jobs", headers=A).get_json()
    assert len(default["data"]) == 5 and default["has_more"] is False


def test_pages_hold_still_while_jobs_are_submitted(make_client):
    client = _client(make_client)
    before = _submit(client, A, 7)
    added = []
    pages = _pages(client, A, 2, between=lambda: added.extend(_submit(client, A, 2)))
    listed = [job for page in pages for job in page]
    assert listed == before[::-1]  # every job once, in order; the new ones above page 1
    assert len(added) == 6
    assert _pages(client, A, 100)[0] == (before + added)[::-1]


def test_deleted_jobs_are_left_out_and_still_hold_their_place(make_client):
    client = _client(make_client)
    jobs = _submit(client, A, 5)[::-1]  # newest first
    first = client.get("/v1/jobs?limit=2", headers=A).get_json()
    for job_id in (first["next_cursor"], jobs[2]):  # the cursor's job and the next one
        assert client.delete(f"/v1/jobs/{job_id}", headers=A).status_code == 200  # cancelled
        assert client.delete(f"/v1/jobs/{job_id}", headers=A).status_code == 204  # deleted
    rest = client.get(f"/v1/jobs?starting_after={first['next_cursor']}", headers=A).get_json()
    assert [job["id"] for job in rest["data"]] == jobs[3:]
    assert [job["id"] for job in client.get("/v1/jobs", headers=A).get_json()["data"]] == [
        jobs[0],
        jobs[3],
        jobs[4],
    ]


def test_bad_queries_are_422(make_client):
    client = _client(make_client)
    for query, field in (
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=x", "limit"),
        ("starting_after=", "starting_after"),
        ("starting_after=nope", "starting_after"),
        ("order=asc", "order"),
    ):
        problem(client.get(f"/v1/jobs?{query}", headers=A), 422, field)


def test_without_keys_everyone_is_the_anonymous_caller(idle_client):
    ids = [idle_client.post("/v1/jobs", json=BASEBALL_BODY).get_json()["id"] for _ in range(3)]
    page = idle_client.get("/v1/jobs").get_json()
    assert [job["id"] for job in page["data"]] == ids[::-1]
    assert {job["status"] for job in page["data"]} == {"queued"}


def test_a_page_reads_no_deleted_job(make_client, redis_store, redis_url):
    """Deleted jobs above the newest live one: the page reads that job's record only
    (deleted jobs were markers in the index, each record looked up and skipped)."""
    client = make_client(
        SCA_API_KEYS=f"{KEY_A},{KEY_B}",
        SCA_QUEUE=IdleQueue(),
        SCA_MAX_ACTIVE_JOBS=0,
        SCA_RATE_LIMIT=0,
        SCA_STORE=redis_store,
    )
    kept = _submit(client, A, 1)[0]
    for job_id in _submit(client, A, 150):
        client.delete(f"/v1/jobs/{job_id}", headers=A)  # cancelled
        assert client.delete(f"/v1/jobs/{job_id}", headers=A).status_code == 204
    monitor = Monitor(redis_url, redis_store.prefix)
    monitor.start()
    page = client.get("/v1/jobs?limit=1", headers=A).get_json()
    reads = [c for c in monitor.stop() if c.upper().startswith("HGETALL ")]
    assert [job["id"] for job in page["data"]] == [kept] and page["has_more"] is False
    assert len(reads) <= 2, f"{len(reads)} records read for a page of one"
