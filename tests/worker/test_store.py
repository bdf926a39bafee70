"""The store on a real Redis and in process: arrays, chunks, TTLs, job records."""

from __future__ import annotations

import io

import numpy as np
import pytest

from sca_worker.store import ArtifactMissing


def test_arrays_round_trip_in_chunks(store):
    rng = np.random.default_rng(0)
    arrays = {
        "S": rng.random((30, 30)),
        "labels": np.arange(30, dtype=np.int32),
        "kind": np.array("dense"),
    }
    size = store.save_arrays("a", arrays)
    assert size > store.chunk_bytes
    keys = store._artifact_keys("a")  # the head and its chunks
    chunks = -(-size // store.chunk_bytes)
    assert keys == [store.key("a")] + [store.key(f"a:chunk:{i}") for i in range(chunks)]
    assert len(keys) > 2 and all(store.client.get(key) is not None for key in keys)
    loaded = store.load_arrays("a")
    assert set(loaded) == set(arrays)
    np.testing.assert_array_equal(loaded["S"], arrays["S"])
    assert loaded["labels"].dtype == np.int32
    assert str(loaded["kind"]) == "dense"


def test_small_artifact_is_one_value(store):
    size = store.save_arrays("small", {"x": np.zeros(3)})
    assert size <= store.chunk_bytes
    assert store._artifact_keys("small") == [store.key("small")]  # no chunks
    np.testing.assert_array_equal(store.load_arrays("small")["x"], np.zeros(3))


def test_missing_and_deleted(store):
    with pytest.raises(ArtifactMissing):
        store.load_arrays("nothing")
    store.save_arrays("gone", {"x": np.ones(500)})
    assert store.has("gone")
    store.delete("gone")
    assert not store.has("gone")
    with pytest.raises(ArtifactMissing):
        store.load_bytes("gone")


def test_object_arrays_are_refused(store):
    with pytest.raises(ValueError, match="object dtype"):
        store.save_arrays("obj", {"x": np.array([{"a": 1}], dtype=object)})


def test_json_values(store):
    store.save_json("j", {"k": 2, "eigenvalues": [1.0, 0.5]})
    assert store.load_json("j") == {"k": 2, "eigenvalues": [1.0, 0.5]}


def test_job_records(store):
    store.create_job("j1", {"id": "j1", "status": "queued", "stage": None, "runs_done": 0})
    assert store.get_job("j1")["status"] == "queued"
    assert store.get_job("nope") is None
    assert store.update_job("j1", {"status": "running"}, expect=["queued", "running"])
    assert not store.update_job("j1", {"status": "queued"}, expect=["succeeded"])
    assert store.get_job("j1")["status"] == "running"
    assert not store.update_job("nope", {"status": "running"})
    assert store.get_job("nope") is None
    store.incr_job("j1", "runs_done")
    store.incr_job("j1", "runs_done", 2)
    store.incr_job("j1", "t:balancing", 0.25)
    record = store.get_job("j1")
    assert record["runs_done"] == 3 and record["t:balancing"] == pytest.approx(0.25)
    store.add_task("j1", "t-1")
    store.add_task("j1", "t-2")
    store.remove_task("j1", "t-1")
    assert store.job_tasks("j1") == {"t-2"}
    store.delete_job("j1")
    assert store.get_job("j1") is None and store.job_tasks("j1") == set()


def test_redis_chunks_and_ttl(redis_store, redis_client):
    redis_store.chunk_bytes = 4096
    redis_store.save_arrays("big", {"x": np.arange(5000, dtype=np.float64)})
    head = redis_store.prefix + "big"
    chunks = redis_client.keys(head + ":chunk:*")
    assert len(chunks) >= 40000 // 4096
    assert all(0 < redis_client.ttl(key) <= 600 for key in [head, *chunks])
    redis_store.touch("big", ttl=900)
    assert redis_client.ttl(head) > 600
    np.testing.assert_array_equal(redis_store.load_arrays("big")["x"], np.arange(5000.0))
    redis_store.delete("big")
    assert redis_client.keys(head + "*") == []


def test_pickled_artifacts_are_not_loaded(redis_store):
    buffer = io.BytesIO()
    np.savez(buffer, x=np.array([{"a": 1}], dtype=object))  # pickles the object array
    redis_store.save_bytes("pickled", buffer.getvalue())
    with pytest.raises(ValueError, match="allow_pickle"):
        redis_store.load_arrays("pickled")
