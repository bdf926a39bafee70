"""Releasing a job's artifacts (:mod:`sca_worker.cleanup`) on a real Redis and in
process: what identical jobs share stays while one refers to it, and a release
costs the same whatever the number of twins (it once read every twin's record
under one lock per input: seconds per delete with thousands of twins)."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from sca_worker.cleanup import release, sweep, track, wrote
from sca_worker.jobs import new_job_id
from sca_worker.store.keys import artifact_keys, refs
from tests.conftest import Monitor
from tests.worker.conftest import make_job


def _twin(store, record, **changes) -> dict:
    """A job identical to ``record`` (or with other hashes), created and listed as the
    API does."""
    twin = dict(record, id=new_job_id(), **changes)
    store.create_job(twin["id"], twin)
    track(store, twin)
    return twin


def _finish(store, record) -> dict:
    """Write the artifacts every stage keeps, as a finished job has them."""
    keys = artifact_keys(record)
    for name in ("op", "P"):
        store.save_arrays(keys[name], {"a": [[1.0, 0.0], [0.0, 1.0]] * 400})  # chunked
    for name in ("balance", "spectrum", "result"):
        store.save_json(keys[name], {"k": 2})
    return keys


def test_shared_artifacts_live_while_a_job_refers_to_them(store):
    first = make_job(store)
    track(store, first)
    keys = _finish(store, first)
    other = _twin(store, first, hashes=dict(first["hashes"], result=uuid.uuid4().hex))
    twin = _twin(store, first)

    release(store, first)  # its twins still refer to everything it named
    assert all(store.has(keys[name]) for name in ("input", "op", "P", "result"))
    release(store, twin)  # the other job names every artifact but the result
    assert not store.has(keys["result"])
    assert all(store.has(keys[name]) for name in ("input", "op", "P", "spectrum"))
    release(store, other)
    assert not any(store.has(keys[name]) for name in ("input", "op", "P", "spectrum"))
    chunks = [k for k in store.client.keys(store.key("*")) if b":chunk:" in k]
    assert chunks == []  # chunked artifacts go with every chunk
    assert release(store, other) == [f"ids:{other['id']}"]  # twice: nothing more


def test_a_released_job_refers_to_nothing_it_writes_later(store):
    job = make_job(store)
    track(store, job)
    release(store, job)  # cancelled while a stage runs; the stage then writes
    keys = _finish(store, job)
    twin = _twin(store, job)  # a new identical job keeps what it finds
    release(store, job)  # the stage returned: its job releases again
    assert store.has(keys["result"])
    release(store, twin)
    assert not store.has(keys["result"])


def test_references_of_expired_jobs_are_dropped(store):
    job = make_job(store)
    track(store, job)
    keys = _finish(store, job)
    expired = dict(job, id=new_job_id())  # listed long ago, its record gone with its TTL
    store.refer(expired["id"], [refs(h) for h in set(job["hashes"].values())], 0.0, 60)
    release(store, job)
    assert not store.has(keys["result"]) and not store.has(keys["input"])


@pytest.mark.parametrize("twins", [2000])
def test_a_release_costs_the_same_whatever_the_number_of_twins(redis_store, redis_url, twins):
    first = make_job(redis_store)
    track(redis_store, first)
    with redis_store.client.pipeline(transaction=False) as pipe:  # the twins, in bulk
        for _ in range(twins):
            twin = dict(first, id=new_job_id())
            pipe.hset(redis_store.key(f"job:{twin['id']}"), "id", f'"{twin["id"]}"')
        pipe.execute()
    for member in redis_store.client.keys(redis_store.key("job:*")):
        twin = dict(first, id=member.decode().rsplit(":", 1)[1])
        if twin["id"] != first["id"]:
            track(redis_store, twin)
    monitor = Monitor(redis_url, redis_store.prefix)
    monitor.start()
    release(redis_store, first)
    commands = monitor.stop()
    assert len(commands) < 40, f"{len(commands)} commands, e.g. {commands[:5]}"
    assert redis_store.has(artifact_keys(first)["input"])  # the twins still use it


def test_sets_of_an_earlier_release_are_left_to_expire(store):
    job = make_job(store)
    store.sadd(f"refs:{job['hashes']['input']}", "an-older-job", 60)  # as once kept
    track(store, job)
    keys = _finish(store, job)
    release(store, job)
    assert not store.has(keys["input"])


def _stored(directory) -> dict:
    """A P that names the stacks written in ``directory`` (a job run on Dask)."""
    return {
        "kind": np.array("stored"),
        "input": np.array("/data/labels"),
        "scale": np.array(str(directory / "scale")),
        "labels": np.array(str(directory / "labels")),
    }


def test_written_stacks_go_with_the_last_artifact_that_reads_them(store, tmp_path):
    """A directory of stacks written for a job run on Dask stays while its result
    exists or its P names it, and is deleted by the release that ends both, or by
    a sweep once they expired (or P names another job's stacks)."""
    first = make_job(store)
    track(store, first)
    keys = _finish(store, first)
    twin = _twin(store, first)
    directory = tmp_path / "sca-results" / "r1"
    (directory / "labels").mkdir(parents=True)
    (directory / "labels" / "0.npy").write_bytes(b"x")
    store.save_arrays(keys["P"], _stored(directory))
    wrote(store, str(directory), keys["P"], keys["result"])

    release(store, first)
    assert directory.exists()  # the twin still reads it
    release(store, twin)
    assert not directory.exists()
    assert sweep(store) == []  # no longer listed

    expiring = make_job(store)
    track(store, expiring)
    keys = _finish(store, expiring)
    directory.mkdir()
    store.save_arrays(keys["P"], _stored(directory))
    wrote(store, str(directory), keys["P"], keys["result"])
    assert sweep(store) == [] and directory.exists()
    store.delete(keys["result"])  # what expiry does to it
    assert sweep(store) == [] and directory.exists()  # P still names it
    store.save_arrays(keys["P"], _stored(tmp_path / "another"))  # a twin balancing wrote P
    assert sweep(store) == [str(directory)] and not directory.exists()
