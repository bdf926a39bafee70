"""The webhook deliverer (sca_worker.webhooks.deliverer) on a real Redis, delivering to
real receivers on 127.0.0.1."""

from __future__ import annotations

import time

from sca_worker import webhooks
from sca_worker.config import resolve
from tests.receiver import Receiver
from tests.worker.conftest import make_job

SECRET = "a-secret-of-sixteen-chars"


def _settings(**extra):
    return resolve(
        {"SCA_WEBHOOK_ALLOW": "127.0.0.1", "SCA_WEBHOOK_RETRIES": 0, "SCA_WEBHOOK_TIMEOUT": 3}
        | extra
    )


def _finished(store, url: str, owner: str | None) -> dict:
    record = make_job(store)
    record.update(owner=owner, callback={"url": url, "secret": SECRET})
    webhooks.dispatch(store, record, "succeeded")
    return record


def test_one_senders_silent_receiver_leaves_the_other_threads_free(redis_store):
    """Key a's three deliveries hang; with one thread per sender, key b's delivery,
    queued after them, still goes out at once."""
    silent, receiver = Receiver(delay=10), Receiver()
    deliverer = webhooks.Deliverer(
        redis_store, _settings(SCA_WEBHOOK_CONCURRENCY=3, SCA_WEBHOOK_PER_SENDER=1)
    )
    try:
        for _ in range(3):
            _finished(redis_store, silent.url, "a")
        b = _finished(redis_store, receiver.url, "b")
        start = time.monotonic()
        deliverer.start()
        receiver.wait(1, timeout=2)
        assert time.monotonic() - start < 1.5
        assert receiver.payload(0)["job"]["id"] == b["id"]
        assert len(silent.requests) == 1  # one of a's at a time
        deadline = time.monotonic() + 5
        while redis_store.get_job(b["id"]).get("callback_state") != "delivered":
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        deliverer.stop()
        silent.close()
        receiver.close()


def test_a_delivery_whose_deliverer_died_is_made_when_its_claim_lapses(redis_store):
    """A claim is a lease: a delivery claimed by a process that died mid-attempt is due
    again when the lease ends, and another deliverer makes it (once)."""
    receiver = Receiver()
    deliverer = webhooks.Deliverer(redis_store, _settings())
    try:
        record = _finished(redis_store, receiver.url, None)
        member = f"{record['id']}:succeeded"
        assert redis_store.claim_webhooks(time.time(), 0.5, 10) == [member]  # then "dies"
        deliverer.start()
        time.sleep(0.3)
        assert receiver.requests == []  # still claimed
        receiver.wait(1, timeout=3)
        deadline = time.monotonic() + 3
        while redis_store.webhooks_waiting():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)
        assert len(receiver.requests) == 1
        assert redis_store.get_job(record["id"])["callback_state"] == "delivered"
    finally:
        deliverer.stop()
        receiver.close()


def test_a_failed_attempt_is_queued_again_after_the_backoff(redis_store):
    receiver = Receiver(statuses=(503, 200))
    deliverer = webhooks.Deliverer(
        redis_store, _settings(SCA_WEBHOOK_RETRIES=1, SCA_WEBHOOK_BACKOFF=0.4)
    )
    try:
        record = _finished(redis_store, receiver.url, "a")
        deliverer.start()
        first, second = receiver.wait(2, timeout=5)
        assert second["at"] - first["at"] >= 0.35
        deadline = time.monotonic() + 3
        while (job := redis_store.get_job(record["id"])).get("callback_state") != "delivered":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert job["callback_attempts"] == 2
    finally:
        deliverer.stop()
        receiver.close()
