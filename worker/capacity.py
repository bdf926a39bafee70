"""Redis memory: the settings the service needs, and waiting for room.

Everything a job has (its queued tasks, its record, its artifacts) lives in
Redis, so two of Redis's settings matter:

* ``maxmemory-policy noeviction``: at ``maxmemory`` Redis refuses writes, which
  the service reports (the API answers 503 ``store-full``; a stage waits for
  room, then fails its job saying so).  An evicting policy instead deletes
  keys of accepted jobs without a word: they turn 404 or 410, or never run.
* ``appendonly yes``: queued jobs and results survive a Redis restart.

:func:`check_redis` reads them with ``INFO`` (which managed services allow
where ``CONFIG`` is often disabled) for ``/readyz`` and the worker's start-up
log; :func:`with_room` runs a stage again while Redis is full.
"""

from __future__ import annotations

import functools
import logging
import time

from .problems import store_full
from .store import Store

log = logging.getLogger(__name__)

#: Share of maxmemory from which ``/readyz`` and the worker warn.
NEAR_FULL = 0.9
#: Seconds between two tries of a write that Redis refused for lack of memory.
POLL_SECONDS = 1.0


def check_redis(store: Store) -> dict:
    """What is wrong with the Redis server behind ``store`` (Redis mode).

    Returns ``{"problems": [...], "warnings": [...]}``: problems make the
    service unready (an evicting policy, writes refused now), warnings do not
    (no append-only file, memory use near maxmemory).
    """
    memory, persistence = store.info("memory"), store.info("persistence")
    problems, warnings = [], []
    policy = memory.get("maxmemory_policy", "noeviction")
    if policy != "noeviction":
        problems.append(
            f"maxmemory-policy is {policy}: at maxmemory Redis evicts keys, "
            f"deleting accepted jobs without a word; set maxmemory-policy "
            f"noeviction"
        )
    try:
        store.probe_write()
    except Exception as exc:
        if not store_full(exc):
            raise
        problems.append(
            "Redis is full: used memory reached maxmemory and writes are "
            "refused; new jobs get 503 until finished jobs expire or are "
            "deleted, or maxmemory is raised"
        )
    maxmemory = int(memory.get("maxmemory") or 0)
    used = int(memory.get("used_memory", 0)) - int(memory.get("mem_not_counted_for_evict", 0))
    if maxmemory and used >= NEAR_FULL * maxmemory:
        warnings.append(
            f"memory use is {used / maxmemory:.0%} of maxmemory ({used} of {maxmemory} bytes)"
        )
    if not int(persistence.get("aof_enabled", 0)):
        warnings.append(
            "appendonly is off: a Redis restart loses queued jobs and results; set appendonly yes"
        )
    return {"problems": problems, "warnings": warnings}


def with_room(action, give_up, wait: float, what: str):
    """``action()``, run again every :data:`POLL_SECONDS` while Redis refuses its
    writes for lack of memory; after ``wait`` seconds of that, ``give_up(exc)``
    instead, itself run again until Redis takes it.  The task's time limit
    bounds both; any other error is raised at once.

    ``action`` must be safe to run again (stages are: their artifacts are
    content-addressed).  ``what`` names the work in the log.
    """
    deadline = time.monotonic() + wait
    step, told = action, False
    while True:
        try:
            return step()
        except Exception as exc:
            if not store_full(exc):
                raise
            if step is action and time.monotonic() >= deadline:
                log.error("%s: Redis still full after %ss; giving up", what, wait)
                step = functools.partial(give_up, exc)
                continue
            if not told:
                log.warning("%s: Redis is full (maxmemory); waiting up to %ss for room", what, wait)
                told = True
        time.sleep(POLL_SECONDS)
