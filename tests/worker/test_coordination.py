"""What processes share besides jobs (liveness, per-key limits, the broker's queue),
on a real Redis and in process."""

from __future__ import annotations

import time

from sca_worker.store import keys


def test_beats_are_claimed_once(store):
    store.beat({"j1|a", "j2|b"})
    assert store.held_jobs() == {"j1", "j2"}
    assert set(store.silent_jobs(time.time() + 1)) == {"j1", "j2"}  # beats mark jobs alive
    store.beat({"j3|c"}, jobs=False)
    assert "j3" not in store.silent_jobs(time.time() + 1)
    store.beat((), finished={"j1|a", "j3|c"})
    assert store.held_jobs() == {"j2"}
    assert store.stale_beats(time.time() - 60) == []
    assert store.stale_beats(time.time() + 1) == ["j2|b"]
    assert store.claim_beat("j2|b") and not store.claim_beat("j2|b")
    assert store.claim_silent("j1") and not store.claim_silent("j1")
    store.alive("j4")
    store.forget_alive("j4")
    assert set(store.silent_jobs(time.time() + 1)) == {"j2"}


def test_per_key_counters(store):
    second = int(time.time())
    assert [store.count_request("k", second) for _ in range(3)] == [1, 2, 3]
    assert store.count_request("other", second) == 1
    assert store.add_active("k", "j1") == 1 and store.add_active("k", "j2") == 2
    assert store.add_active("k", "j2") == 2
    store.remove_active("k", "j1")
    assert store.active_jobs("k") == {"j2"} and store.active_jobs("nobody") == set()


def test_active_jobs_pruned_of_finished_and_gone_ones_but_the_new_one(store):
    for job_id, status in (("run", "running"), ("wait", "queued"), ("done", "succeeded")):
        store.create_job(job_id, {"id": job_id, "status": status})
        store.add_active("k", job_id)
    store.add_active("k", "gone")  # deleted, or expired
    store.add_active("k", "new")  # its record is made after the count
    assert store.prune_active("k", ("queued", "running"), keep="new") == 3
    assert store.active_jobs("k") == {"run", "wait", "new"}
    assert store.prune_active("nobody", ("queued",)) == 0


def test_queue_depth_reads_the_brokers_lists(store):
    assert store.queue_depth()[0] == 0  # (kombu's unacked hash is outside the prefix)
    store.client.rpush(store.key(keys.queue()), b"m1", b"m2")
    assert store.queue_depth()[0] == 2
    assert store.waiting_messages() == [b"m1", b"m2"]
