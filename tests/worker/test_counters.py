"""Job counters: added to atomically, never re-creating a deleted job (either store)."""

from __future__ import annotations

import pytest


def test_counters_of_a_deleted_job_create_nothing(store):
    store.create_job("j1", {"status": "running"})
    assert store.incr_job("j1", "runs_done") == 1
    assert store.incr_job("j1", "runs_done", 2) == 3
    assert store.incr_job("j1", "t:balancing", 0.25) == pytest.approx(0.25)
    store.delete_job("j1")
    assert store.incr_job("j1", "runs_done") is None
    assert store.incr_job("j1", "t:balancing", 0.5) is None
    assert store.get_job("j1") is None
    assert store.incr_job("never", "takeovers") is None and store.get_job("never") is None


def test_a_redis_counter_keeps_the_job_ttl(redis_store):
    redis_store.create_job("j2", {"status": "running"})
    redis_store.incr_job("j2", "takeovers")
    assert 0 < redis_store.client.ttl(redis_store.key("job:j2")) <= redis_store.ttl
