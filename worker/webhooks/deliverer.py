"""The deliverer: webhook attempts on threads of their own, a bounded number per sender.

Deliveries wait in the store's webhook queue (the sorted set ``webhooks``, by
when each is due), never in the stages' queue: a receiver that never answers
holds a delivery thread for ``SCA_WEBHOOK_TIMEOUT`` seconds, not a worker
process or a job thread.  Each delivering process (every ``celery -A worker
worker`` whose ``SCA_WEBHOOK_CONCURRENCY`` is not 0, and the embedded runner)
runs one :class:`Deliverer`: a thread that claims due deliveries and a pool of
``SCA_WEBHOOK_CONCURRENCY`` threads that make the attempts.  At most
``SCA_WEBHOOK_PER_SENDER`` of them serve one sender (an API key, or a
receiver's host for jobs without a key) at once, so one caller's silent
receivers delay only that caller's deliveries; the others are queued again a
moment later.  A claim is a lease: a process that dies mid-attempt leaves the
delivery due again when the lease ends, so a delivery is made at least once
(receivers drop repeats by ``SCA-Delivery``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from ..problems import TRANSIENT
from ..store import Store
from .deliveries import attempt, backoff, next_attempt

log = logging.getLogger(__name__)

#: Seconds between looks at the queue when nothing wakes the deliverer.
POLL = 0.25
#: Seconds a delivery whose sender is at its cap waits before it is tried for again.
SENDER_BUSY = 0.5
#: Seconds a claim outlives an attempt's deadline before the delivery is due again.
LEASE_MARGIN = 30.0


class Deliverer:
    """Delivers the webhooks queued in ``store`` until :meth:`stop`."""

    def __init__(self, store: Store, settings):
        self.store = store
        self.settings = settings
        self.threads = int(settings["SCA_WEBHOOK_CONCURRENCY"])
        self.per_sender = int(settings["SCA_WEBHOOK_PER_SENDER"])
        self.lease = float(settings["SCA_WEBHOOK_TIMEOUT"]) + LEASE_MARGIN
        self.pool = ThreadPoolExecutor(
            max_workers=max(1, self.threads), thread_name_prefix="sca-webhook"
        )
        self.busy: Counter[str] = Counter()
        self.running = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.wake_up = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="sca-webhooks", daemon=True)

    def start(self) -> Deliverer:
        with self.lock:
            if self.thread.ident is None and not self.stopping.is_set():
                self.thread.start()
        return self

    def wake(self) -> None:
        """Look at the queue now (starting, the first time)."""
        self.start()
        self.wake_up.set()

    def stop(self) -> None:
        """Claim nothing more; attempts under way end within their deadline."""
        self.stopping.set()
        self.wake_up.set()
        self.pool.shutdown(wait=False, cancel_futures=True)

    def _loop(self) -> None:
        while not self.stopping.is_set():
            try:
                self.poll()
            except TRANSIENT as exc:  # Redis away: look again shortly
                log.warning("webhook queue unreadable: %s", type(exc).__name__)
                self.stopping.wait(1.0)
            except Exception:  # noqa: BLE001 - the loop outlives any one bad entry
                log.exception("webhook queue")
                self.stopping.wait(1.0)
            self.wake_up.wait(POLL)
            self.wake_up.clear()

    def poll(self) -> int:
        """Start the attempts of due deliveries while threads are free; how many started."""
        with self.lock:
            free = self.threads - self.running
        if free <= 0:
            return 0
        started = 0
        for member in self.store.claim_webhooks(time.time(), self.lease, free):
            job_id, _, status = member.rpartition(":")
            pending = next_attempt(self.store, job_id)
            if pending is None:  # delivered, given up or expired meanwhile
                self.store.drop_webhook(member)
                continue
            number, sender = pending
            with self.lock:
                taken = self.busy[sender] < self.per_sender
                if taken:
                    self.busy[sender] += 1
                    self.running += 1
            if not taken:
                self.store.queue_webhook(member, time.time() + SENDER_BUSY)
                continue
            try:
                self.pool.submit(self._deliver, member, job_id, status, number, sender)
            except RuntimeError:  # stopping: the lease brings it back
                self._release(sender)
                return started
            started += 1
        return started

    def _deliver(self, member: str, job_id: str, status: str, number: int, sender: str) -> None:
        try:
            delivered = attempt(self.store, job_id, status, number, self.settings)
            if delivered is False:
                due = time.time() + backoff(number - 1, self.settings)
                self.store.queue_webhook(member, due)
            else:
                self.store.drop_webhook(member)
        except Exception as exc:  # noqa: BLE001 - Redis away: the lease brings it back
            log.warning("job %s: webhook attempt not recorded: %s", job_id, type(exc).__name__)
        finally:
            self._release(sender)
            self.wake_up.set()

    def _release(self, sender: str) -> None:
        with self.lock:
            self.busy[sender] -= 1
            if self.busy[sender] <= 0:
                del self.busy[sender]
            self.running -= 1
