"""Worker fixtures: jobs created directly in a real Redis store, tasks called directly."""

from __future__ import annotations

import numpy as np
import pytest

from sca_worker import celery_app
from sca_worker.jobs import content_hashes, new_job_id, new_record, normalise_options
from sca_worker.store import Store
from sca_worker.store.keys import artifact_keys
from tests.conftest import BASEBALL_S


def make_job(store, kind="consensus", arrays=None, source=None, options=None):
    """Create a queued job the way the API does; returns its record."""
    arrays = {"S": np.array(BASEBALL_S, dtype=float)} if arrays is None else arrays
    source = source or {}
    options = normalise_options(options)
    hashes = content_hashes(kind, arrays, source, options, scope=store.prefix)
    n = next(iter(arrays.values())).shape[0]
    record = new_record(new_job_id(), kind, n, source, options, hashes)
    store.save_arrays(artifact_keys(record)["input"], arrays)
    store.create_job(record["id"], record)
    return record


@pytest.fixture
def task_store(redis_store):
    """The Redis store the worker's tasks use during one test."""
    app = celery_app.app
    previous = app.sca_store
    app.sca_store = redis_store
    yield redis_store
    app.sca_store = previous


@pytest.fixture(params=["redis", "in_process"])
def store(request):
    """The store with 1000-byte chunks on the Redis server (under a prefix of its
    own) and in process (the embedded default's)."""
    if request.param == "in_process":
        return Store.in_process(ttl=600, chunk_bytes=1000)
    redis_store = request.getfixturevalue("redis_store")
    redis_store.chunk_bytes = 1000
    return redis_store
