"""A fair share of the workers between API keys: at most so many stage tasks of one
key run at once, across every worker.

With ``SCA_MAX_RUNNING_PER_KEY`` set, a stage task of a key's job takes a slot
in the sorted set ``share:<owner>`` before it runs and gives it back after;
when the key already holds that many slots the task is sent again later (a
new message with a countdown, held by a worker, not a process), so the
processes go to other keys' tasks meanwhile.  The countdown grows with the
key's waiting tasks (:data:`TRIES_PER_SLOT` tries a second per slot in all), so
a key with hundreds of waiting tasks costs the workers no more than one with a
few.  A slot is a lease of
``SCA_HEARTBEAT_TIMEOUT`` seconds renewed every ``SCA_HEARTBEAT_INTERVAL`` by
a thread of the running task: a worker killed mid-task frees its slots within
the timeout.  Jobs without a key (the embedded default, or no ``SCA_API_KEYS``)
take no slot.
"""

from __future__ import annotations

import random
import threading

from .jobs import ACTIVE
from .store import Store

#: Seconds before a task that found its key's slots taken is tried again, at least.
RETRY = 0.5
#: Tries a second, per slot, of all a key's waiting tasks together.
TRIES_PER_SLOT = 4.0
#: Longest countdown, seconds.
LONGEST = 60.0
#: Tries of one task, at most (Celery reads ``max_retries=None`` as its default, 3).
MAX_TRIES = 1_000_000
#: Seconds a waiting task stays counted (past the longest countdown: then it is lost).
COUNTED = LONGEST * 1.5 + 30.0


class Slot:
    """One stage task's place in its key's share (see the module)."""

    def __init__(self, store: Store, job_id: str, task_id: str | None, settings):
        self.store, self.job_id, self.task_id = store, job_id, task_id
        self.cap = int(settings["SCA_MAX_RUNNING_PER_KEY"])
        self.lease = float(settings["SCA_HEARTBEAT_TIMEOUT"])
        self.interval = float(settings["SCA_HEARTBEAT_INTERVAL"])
        self.owner: str | None = None
        self.done = threading.Event()
        #: Seconds before this task is tried again, when :meth:`take` says no.
        self.countdown = RETRY

    def take(self) -> bool:
        """Whether the task may run now (taking a slot when its job's key has a cap)."""
        if self.cap <= 0 or not self.task_id:
            return True
        record = self.store.get_job(self.job_id)
        if record is None or not record.get("owner") or record["status"] not in ACTIVE:
            return True  # no key, or nothing to run: the stage says so itself
        owner = record["owner"]
        taken, waiting = self.store.take_share(owner, self.task_id, self.cap, self.lease, COUNTED)
        if not taken:
            # All of a key's waiting tasks together come back TRIES_PER_SLOT times a
            # second per slot, spread so that they do not come back at once.
            mean = min(LONGEST, max(RETRY, waiting / (TRIES_PER_SLOT * self.cap)))
            self.countdown = mean * (0.5 + random.random())  # noqa: S311 - a spread
            return False
        self.owner = owner
        threading.Thread(
            target=self._renew, args=(owner, self.task_id), name="sca-share", daemon=True
        ).start()
        return True

    def _renew(self, owner: str, task_id: str) -> None:
        while not self.done.wait(self.interval):
            try:
                self.store.renew_share(owner, task_id, self.lease)
            except Exception:  # noqa: BLE001 - Redis away: the lease may lapse, no harm
                pass

    def release(self) -> None:
        self.done.set()
        if self.owner is not None and self.task_id:
            self.store.drop_share(self.owner, self.task_id)
            self.owner = None
