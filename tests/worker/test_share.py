"""A key's share of the workers (sca_worker.share) on a real Redis."""

from __future__ import annotations

import time

from sca_worker import share
from sca_worker.config import resolve
from tests.worker.conftest import make_job

SETTINGS = resolve(
    {"SCA_MAX_RUNNING_PER_KEY": 1, "SCA_HEARTBEAT_INTERVAL": 1, "SCA_HEARTBEAT_TIMEOUT": 2}
)


def _job(store, owner):
    record = make_job(store)
    store.update_job(record["id"], {"owner": owner})
    return record["id"]


def test_a_key_runs_its_cap_and_its_other_tasks_wait(redis_store):
    first, second = _job(redis_store, "a"), _job(redis_store, "a")
    other = _job(redis_store, "b")
    held = share.Slot(redis_store, first, "t1", SETTINGS)
    assert held.take()
    waiting = share.Slot(redis_store, second, "t2", SETTINGS)
    assert not waiting.take()
    assert share.RETRY / 2 <= waiting.countdown <= share.RETRY * 1.5
    assert share.Slot(redis_store, other, "t3", SETTINGS).take()  # another key: its own share
    held.release()
    assert waiting.take()
    waiting.release()


def test_the_countdown_grows_with_the_keys_waiting_tasks(redis_store):
    job_id = _job(redis_store, "a")
    assert share.Slot(redis_store, job_id, "running", SETTINGS).take()
    slots = [share.Slot(redis_store, job_id, f"w{i}", SETTINGS) for i in range(40)]
    assert not any(slot.take() for slot in slots)
    assert 40 / 4 * 0.5 <= slots[-1].countdown <= 40 / 4 * 1.5  # 4 tries a second in all


def test_a_slot_whose_task_died_lapses(redis_store):
    job_id = _job(redis_store, "a")
    lost = share.Slot(redis_store, job_id, "lost", SETTINGS)
    assert lost.take()
    lost.done.set()  # its process is gone: no renewal, no release
    later = share.Slot(redis_store, job_id, "later", SETTINGS)
    assert not later.take()
    time.sleep(2.2)
    assert later.take()
    later.release()


def test_jobs_without_a_key_and_an_uncapped_service_take_no_slot(redis_store):
    anonymous = _job(redis_store, None)
    assert all(share.Slot(redis_store, anonymous, f"t{i}", SETTINGS).take() for i in range(3))
    keyed = _job(redis_store, "a")
    uncapped = resolve({})
    assert all(share.Slot(redis_store, keyed, f"u{i}", uncapped).take() for i in range(3))
    assert not redis_store.client.exists(redis_store.key("share:a"))
