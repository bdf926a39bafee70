"""The store's atomic operations on a real Redis and in process."""

from __future__ import annotations

import threading
import time

import numpy as np

from sca_worker import metrics


def test_set_if_absent_then_compare_and_set(store):
    assert store.set_if("k", b"pending-1", 60)
    assert not store.set_if("k", b"pending-2", 60)  # taken
    assert store.get_value("k") == b"pending-1"
    assert not store.set_if("k", b"done", 60, expected=b"pending-2")  # not what it holds
    assert store.set_if("k", b"done", 60, expected=b"pending-1")
    assert not store.delete_if("k", b"pending-1") and store.get_value("k") == b"done"
    assert store.delete_if("k", b"done") and store.get_value("k") is None
    assert store.set_if("short", b"x", 1)
    time.sleep(1.2)
    assert store.get_value("short") is None and store.set_if("short", b"y", 1)


def test_one_claim_wins_among_threads(store):
    wins, barrier = [], threading.Barrier(8)

    def claim(i):
        barrier.wait()
        if store.set_if("race", str(i).encode(), 60):
            wins.append(i)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(wins) == 1 and store.get_value("race") == str(wins[0]).encode()


def test_index_pages_newest_first(store):
    for i, member in enumerate("abcdefg"):
        store.index_add("idx", member, 100.0 + i, ttl=60)
    store.index_add("idx", "x", 103.0, ttl=60)  # a tie with "d": the higher member first
    assert store.index_page("idx", None, 3) == ["g", "f", "e"]
    assert store.index_page("idx", "e", 3) == ["x", "d", "c"]
    assert store.index_page("idx", "a", 3) == []
    assert store.index_page("idx", "nobody", 3) is None
    store.index_add("idx", "h", 200.0, ttl=60)  # above everything: later pages hold still
    assert store.index_page("idx", "e", 2) == ["x", "d"]


def test_removed_members_leave_the_index_and_keep_their_place(store):
    for i, member in enumerate("abcdefg"):
        store.index_add("idx", member, 100.0 + i, ttl=60)
    store.index_add("idx", "x", 103.0, ttl=60)
    store.index_add("idx", "y", 103.0, ttl=60)  # ties with "d": y, x, d
    for member in "fexd":
        assert store.index_remove("idx", "gone", member, ttl=60, drop_below=0.0)
    assert not store.index_remove("idx", "gone", "f", ttl=60, drop_below=0.0)  # once
    assert store.index_page("idx", None, 3, removed="gone") == ["g", "y", "c"]
    assert store.index_page("idx", "e", 2, removed="gone") == ["y", "c"]
    assert store.index_page("idx", "x", 2, removed="gone") == ["c", "b"]  # after y, as before
    assert store.index_page("idx", "nobody", 3, removed="gone") is None
    store.index_remove("idx", "gone", "c", ttl=60, drop_below=103.0)  # older removed ones go
    assert store.index_page("idx", "x", 2, removed="gone") == ["b", "a"]
    assert store.index_page("idx", "c", 2, removed="gone") is None  # dropped (below 103)


def test_counters_add_up(store):
    for _ in range(3):
        store.hincr_many("h", {"a|count": 1, "a|sum": 0.25})
    assert store.hnumbers("h") == {"a|count": 3.0, "a|sum": 0.75}
    assert store.hnumbers("missing") == {}


def test_census_counts_records_and_artifact_bytes(store):
    for i, status in enumerate(["queued", "running", "succeeded", "succeeded"]):
        store.create_job(f"j{i}", {"id": f"j{i}", "status": status})
    store.add_task("j0", "task-1")  # job:j0:tasks is no record
    size = store.save_arrays("input:h1", {"X": np.ones((40, 40))})  # chunked (1000 bytes)
    store.save_json("result:h2", {"k": 2})
    store.save_json("ids:j1", ["a", "b"])
    store.sadd("refs:h1", "j0", 60)  # a set, not an artifact
    jobs, artifacts = metrics.census(store)
    assert jobs == {"queued": 1, "running": 1, "succeeded": 2, "failed": 0, "cancelled": 0}
    assert artifacts["input"] >= size and artifacts["result"] == len(b'{"k":2}')
    assert artifacts["ids"] == len(b'["a","b"]') and artifacts["P"] == 0
