"""What processes share besides jobs: liveness, per-key limits, the broker's queue, Redis's state.

* liveness (:mod:`sca_worker.heartbeat`): the sorted set ``heartbeats`` of
  ``<job id>|<task id>`` by last beat, and ``alive`` of active jobs by last
  sign of life; a stale entry is *claimed* by removing it (``ZREM`` returns 1
  to one watchdog only);
* per-key limits (:mod:`sca_service.limits`): a counter per key and second,
  a set of active jobs per key, and counters of the bytes stored per key and
  hour; the workers' share of a key (:mod:`sca_worker.share`), a sorted set of
  its running tasks by lease end;
* the webhook queue (:mod:`sca_worker.webhooks`): the sorted set ``webhooks``
  of pending deliveries by when they are due, claimed with a lease;
* the broker's queue, for the metrics: kombu's lists of waiting messages (one
  per priority) and its hash of messages delivered and not yet acknowledged;
* Redis's own state, for ``/readyz`` (:mod:`sca_worker.capacity`): ``INFO``
  sections, and whether a write is taken.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from . import keys
from .base import expected_statuses
from .records import Records

# kombu's Redis transport: the lists of a queue's priorities.
_PRIORITY_SEPARATOR = "\x06\x16"
_PRIORITY_STEPS = (3, 6, 9)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


class Store(Records):
    """Every Redis feature of the service, on a Redis server or in process.

    See :mod:`sca_worker.store` for the whole interface and how it was chosen.
    """

    # -- liveness ---------------------------------------------------------------------------------
    def alive(self, *job_ids: str) -> None:
        """Record a sign of life of active jobs."""
        if job_ids:
            stamp = time.time()
            self.client.zadd(self.key(keys.alive()), {job_id: stamp for job_id in job_ids})

    def forget_alive(self, job_id: str) -> None:
        """A job no task will run any more leaves ``alive`` (where no watchdog prunes it)."""
        self.client.zrem(self.key(keys.alive()), job_id)

    def beat(self, held: Iterable[str], finished: Iterable[str] = (), jobs: bool = True) -> None:
        """Beat for the ``<job id>|<task id>`` of tasks ``held`` (and, with ``jobs``,
        mark their jobs alive); drop those of tasks ``finished``."""
        held, finished = set(held), set(finished)
        beats = self.key(keys.heartbeats())
        with self.client.pipeline(transaction=False) as pipe:
            stamp = time.time()
            if held:
                pipe.zadd(beats, {member: stamp for member in held})
            if finished:
                pipe.zrem(beats, *finished)
            if held and jobs:
                pipe.zadd(
                    self.key(keys.alive()), {member.split("|", 1)[0]: stamp for member in held}
                )
            pipe.execute()

    def stale_beats(self, before: float) -> list[str]:
        """``<job id>|<task id>`` of the tasks whose last beat is older than ``before``."""
        return [_text(m) for m in self.client.zrangebyscore(self.key(keys.heartbeats()), 0, before)]

    def claim_beat(self, member: str) -> bool:
        """Take a stale beat; True for one caller only."""
        return self.client.zrem(self.key(keys.heartbeats()), member) == 1

    def held_jobs(self) -> set[str]:
        """The jobs of every task some worker beats for."""
        members = self.client.zrange(self.key(keys.heartbeats()), 0, -1)
        return {_text(m).split("|", 1)[0] for m in members}

    def silent_jobs(self, before: float) -> list[str]:
        """Active jobs whose last sign of life is older than ``before``."""
        return [_text(m) for m in self.client.zrangebyscore(self.key(keys.alive()), 0, before)]

    def claim_silent(self, job_id: str) -> bool:
        """Take a silent job out of ``alive``; True for one caller only."""
        return self.client.zrem(self.key(keys.alive()), job_id) == 1

    def waiting_messages(self) -> list[bytes]:
        """The broker's waiting messages (their raw bodies)."""
        return list(self.client.lrange(self.key(keys.queue()), 0, -1))

    # -- the webhook queue ------------------------------------------------------------------------
    def queue_webhook(self, member: str, due: float) -> None:
        """Have a delivery (``<job id>:<status>``) due at ``due`` (unix seconds)."""
        self.client.zadd(self.key(keys.webhooks()), {member: due})

    def claim_webhooks(self, now: float, lease: float, limit: int) -> list[str]:
        """Take at most ``limit`` deliveries due by ``now``; each is due again
        ``lease`` seconds later unless it is queued again or dropped meanwhile."""
        members = self._scripts["CLAIM"](
            keys=[self.key(keys.webhooks())], args=[now, now + lease, int(limit)]
        )
        return [_text(m) for m in members]

    def drop_webhook(self, member: str) -> None:
        """A delivery done with (delivered or given up) leaves the queue."""
        self.client.zrem(self.key(keys.webhooks()), member)

    def webhooks_waiting(self) -> int:
        """Deliveries in the webhook queue (due or not)."""
        return int(self.client.zcard(self.key(keys.webhooks())))

    # -- per-key limits ------------------------------------------------------------------------
    def count_request(self, owner: str, second: int) -> int:
        """Count a request of ``owner`` in ``second``; the count so far."""
        key = self.key(keys.rate(owner, second))
        with self.client.pipeline(transaction=False) as pipe:
            pipe.incr(key)
            pipe.expire(key, 2)
            return int(pipe.execute()[0])

    def add_active(self, owner: str, job_id: str) -> int:
        """List an active job of ``owner``; how many are listed."""
        return self.sadd(keys.active(owner), job_id, self.ttl)

    def remove_active(self, owner: str, job_id: str) -> None:
        self.srem(keys.active(owner), job_id)

    def active_jobs(self, owner: str) -> set[str]:
        return self.smembers(keys.active(owner))

    def prune_active(self, owner: str, statuses: Iterable[str], keep: str = "") -> int:
        """Drop the jobs of ``owner`` no longer in one of ``statuses`` (or gone), but
        ``keep``, from its active jobs, in one round trip; how many are left."""
        return int(
            self._scripts["PRUNE"](
                keys=[self.key(keys.active(owner))],
                args=[self.key(keys.job("")), keep, *expected_statuses(statuses)],
            )
        )

    def take_share(
        self, owner: str, task_id: str, cap: int, lease: float, waiting: float
    ) -> tuple[bool, int]:
        """Take one of ``cap`` slots of ``owner`` for ``lease`` seconds: whether it was
        free, and how many of the key's tasks wait for one (a task that found none
        counts as waiting for ``waiting`` seconds)."""
        stamp = time.time()
        taken, queued = self._scripts["TAKE_SHARE"](
            keys=[self.key(keys.share(owner)), self.key(keys.share_waiting(owner))],
            args=[
                stamp,
                stamp + lease,
                int(cap),
                task_id,
                int(max(lease, waiting)) + 1,
                stamp + waiting,
            ],
        )
        return bool(taken), int(queued)

    def renew_share(self, owner: str, task_id: str, lease: float) -> None:
        key = self.key(keys.share(owner))
        with self.client.pipeline(transaction=False) as pipe:
            pipe.zadd(key, {task_id: time.time() + lease}, xx=True)  # not once dropped
            pipe.expire(key, int(lease) + 1)
            pipe.execute()

    def drop_share(self, owner: str, task_id: str) -> None:
        self.client.zrem(self.key(keys.share(owner)), task_id)

    def charge(self, counters: list[str], amount: int, limit: int, ttl: int) -> tuple[bool, int]:
        """Add ``amount`` to the last of ``counters`` (restarting its TTL) unless the
        sum of them all would exceed ``limit``, atomically; whether it was added, and
        the sum before."""
        added, total = self._scripts["CHARGE"](
            keys=[self.key(name) for name in counters], args=[int(amount), int(limit), int(ttl)]
        )
        return bool(added), int(total)

    def uncharge(self, counter: str, amount: int) -> None:
        """Subtract a charge that no job holds after all."""
        self.client.decrby(self.key(counter), int(amount))

    def refund(self, job_id: str, field: str, counter: str) -> bool:
        """Take the amount ``field`` out of the job's record and subtract it from
        ``counter``, once; whether this call did."""
        names = [self.key(keys.job(job_id)), self.key(counter)]
        return bool(self._scripts["REFUND"](keys=names, args=[field]))

    # -- the broker's queue and Redis's state ---------------------------------------------------
    def queue_depth(self) -> tuple[int, int]:
        """Messages waiting in the broker's queue (every priority), and messages
        delivered to workers and not yet acknowledged."""
        queue = self.key(keys.queue())
        names = [queue, *(f"{queue}{_PRIORITY_SEPARATOR}{step}" for step in _PRIORITY_STEPS)]
        with self.client.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.llen(name)
            pipe.hlen(keys.unacked())
            *waiting, unacked = pipe.execute()
        return int(sum(waiting)), int(unacked)

    def info(self, section: str) -> dict:
        """A section of Redis's ``INFO`` (which managed services allow where
        ``CONFIG`` is often disabled)."""
        return self.client.info(section)

    def probe_write(self) -> None:
        """Write a short-lived value (raises what Redis answers, e.g. when full)."""
        self.client.set(self.key(keys.ready_probe()), b"1", px=10_000)
