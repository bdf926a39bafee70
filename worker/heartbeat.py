"""Heartbeats of running tasks, and the takeover of jobs whose worker stopped.

With late acknowledgement a task whose worker dies is delivered again, but
the Redis broker does so only after its visibility timeout (an hour by
default, and it must exceed the longest task).  So workers beat: every
``SCA_HEARTBEAT_INTERVAL`` seconds each worker's main process (a
:class:`Watchdog` thread) sets the score of ``<job_id>|<task_id>`` in the
sorted set ``heartbeats`` to the time, for every task it holds (received,
waiting or running), and removes the entries of tasks it has finished.  The
same thread looks for beats older than ``SCA_HEARTBEAT_TIMEOUT``: it claims a
stale entry (``ZREM`` returns 1 to one watchdog only) and sends ``sca.start``
for the job again, which plans against the cache and reruns only the stages
whose artifacts are missing (stages are idempotent, keyed by the job's
content hashes).  A job taken over more than ``SCA_MAX_TAKEOVERS`` times
fails with a problem.

The broker's late redelivery of the lost message, when it comes, finds the
job finished and does nothing.  A hung task is ended by the task time limit.

A job can also be left with no task at all: after a Redis restart a chord's
counter or a delivered message may be gone, and a job whose tasks never beat
leaves no stale entry to claim, and an API process that dies while accepting
a job leaves its record with no task at all.  So every active job has a last
sign of life in the sorted set ``alive`` (set with its record, in the same
transaction, again when it is enqueued, by every beat of its tasks and at
each stage start).  A job silent for ``SCA_HEARTBEAT_TIMEOUT`` with none of
its messages waiting in the queue and no task held is taken over the same
way: within the timeout plus one interval it is resumed or, past
``SCA_MAX_TAKEOVERS``, failed with a problem.

While Redis is full it refuses every worker's beats alike, so a watchdog whose
beat was refused takes nothing over until a whole timeout after the last
refusal: by then every live worker has beaten again.
"""

from __future__ import annotations

import logging
import threading
import time

from .cleanup import sweep
from .jobs import ACTIVE
from .problems import problem, store_full
from .stages import fail
from .store import Store, keys

log = logging.getLogger(__name__)


def _job_id(request) -> str | None:
    """The job a Celery request works on (every task takes ``job_id`` first)."""
    try:
        kwargs = request.kwargs or {}
        args = request.args or ()
    except Exception:  # an undecodable message: not ours to watch
        return None
    job_id = kwargs.get("job_id", args[0] if args else None)
    return job_id if isinstance(job_id, str) else None


def beat(store: Store, requests, previous: set[str]) -> set[str]:
    """Beat for the tasks this worker holds; forget those it finished since last time."""
    members = {
        f"{job_id}|{request.id}" for request in requests if (job_id := _job_id(request)) is not None
    }
    store.beat(members, previous - members)
    return members


def take_over_stale(store: Store, send_start, timeout: float, max_takeovers: int) -> list[str]:
    """Resume the active jobs whose task stopped beating; returns their ids."""
    resumed = []
    for member in store.stale_beats(time.time() - timeout):
        if not store.claim_beat(member):
            continue  # another watchdog claimed it
        job_id = member.split("|", 1)[0]
        if _take_over(
            store,
            send_start,
            job_id,
            timeout,
            max_takeovers,
            f"task {member.split('|', 1)[1]} stopped beating",
        ):
            resumed.append(job_id)
    return resumed


def take_over_idle(store: Store, send_start, timeout: float, max_takeovers: int) -> list[str]:
    """Resume the active jobs with no sign of life, no waiting message and no task held."""
    silent = store.silent_jobs(time.time() - timeout)
    if not silent:
        return []
    waiting = b"\n".join(store.waiting_messages())
    held = store.held_jobs()
    resumed = []
    for job_id in silent:
        if not store.claim_silent(job_id):
            continue  # another watchdog claimed it
        record = store.get_job(job_id)
        if record is None or record["status"] not in ACTIVE:
            continue  # finished: it leaves the set
        if job_id.encode() in waiting or job_id in held:
            store.alive(job_id)  # waiting its turn in the queue, or running
            continue
        if _take_over(
            store, send_start, job_id, timeout, max_takeovers, "no task of it is queued or running"
        ):
            store.alive(job_id)
            resumed.append(job_id)
    return resumed


def _take_over(
    store: Store, send_start, job_id: str, timeout: float, max_takeovers: int, why: str
) -> bool:
    record = store.get_job(job_id)
    if record is None or record["status"] not in ACTIVE:
        return False
    # One takeover per job and timeout, however many of its tasks died together.
    if not store.set_if(keys.takeover(job_id), b"1", int(timeout)):
        return False
    count = store.incr_job(job_id, "takeovers")
    if count is None:  # deleted meanwhile
        return False
    count = int(count)
    if count > max_takeovers:
        fail(
            store,
            job_id,
            problem(
                "worker-lost",
                "Worker lost",
                500,
                f"the workers running this job stopped {count} times; it was given up "
                f"(see the worker logs)",
                record.get("stage") or record["stages"][0],
            ),
        )
        log.error("job %s: given up after %d takeovers", job_id, count)
        return False
    log.warning("job %s: %s; resuming the job (takeover %d)", job_id, why, count)
    send_start(job_id)
    return True


class Watchdog(threading.Thread):
    """Every ``interval`` seconds: :func:`beat` for the worker's tasks, then
    :func:`take_over_stale` and :func:`take_over_idle`, and the written stacks of
    expired jobs deleted (:func:`sca_worker.cleanup.sweep`), until stopped."""

    def __init__(self, store, send_start, interval: float, timeout: float, max_takeovers: int):
        super().__init__(daemon=True, name="sca-watchdog")
        self.store, self.send_start = store, send_start
        self.interval, self.timeout, self.max_takeovers = interval, timeout, max_takeovers
        self.stopped = threading.Event()
        self._lock = threading.Lock()
        self._mine: set[str] = set()
        self._refused_until = 0.0  # no takeover before (monotonic), after a full Redis

    def received(self, request) -> None:
        """Beat at once for a task just received (it may be lost before the next round)."""
        job_id = _job_id(request)
        if job_id is None:
            return
        member = f"{job_id}|{request.id}"
        with self._lock:
            self._mine.add(member)
        try:
            self.store.beat({member}, jobs=False)
        except Exception as exc:  # Redis away: the next round beats
            log.warning("heartbeat failed: %s", type(exc).__name__)

    def run(self) -> None:
        from celery.worker import state

        while not self.stopped.wait(self.interval):
            try:
                with self._lock:
                    previous = set(self._mine)
                held = beat(self.store, list(state.reserved_requests), previous)
                with self._lock:
                    self._mine = held | (self._mine - previous)
                if time.monotonic() >= self._refused_until:
                    take_over_stale(self.store, self.send_start, self.timeout, self.max_takeovers)
                    take_over_idle(self.store, self.send_start, self.timeout, self.max_takeovers)
                sweep(self.store)  # the written stacks of expired jobs
            except Exception as exc:  # Redis away or full: try again at the next round
                if store_full(exc):
                    self._refused_until = time.monotonic() + self.timeout
                log.warning("watchdog round failed: %s", type(exc).__name__)

    def stop(self) -> None:
        self.stopped.set()
