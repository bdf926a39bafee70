"""Metrics every process can serve: histograms kept in the store, gauges read from it.

The API runs as several processes (gunicorn) and the stages run in Celery
workers on any machine, so no process's memory holds the service's figures.
Histograms (stage durations, observed by whichever process runs the stage;
query latencies, observed by the API process that answers) are counters in
one hash per histogram in the store, added in one transaction
(:meth:`sca_worker.store.Store.hincr_many`): bucket, count and sum
move together, and any API process reads the whole service's histogram.  A
stage adds its observation at once; an API process adds its queries'
(:class:`Recorder`) once a second, so that a query pays no round trip.
Gauges are derived from the store: jobs by status (the job records) and
artifact bytes (the artifacts' values) by a census that walks the store's
keys, and the broker's queue (its list of waiting messages, and the messages
workers hold unacknowledged: :meth:`sca_worker.store.Store.queue_depth`).
The census costs in proportion to the jobs stored, so it is not taken per
scrape: :func:`shared_census` keeps the last one in the store, and one
process of the whole service takes it again at most once per census
interval, while every other scrape reads the stored one (one GET).  In the
embedded default the same code runs on the in-process store.

An observation that fails (Redis away or full) is dropped with a debug log:
metrics never fail a job or a request.
"""

from __future__ import annotations

import atexit
import json
import logging
import math
import os
import threading
import time
from collections import Counter
from typing import Any

from .store import Store, keys

log = logging.getLogger(__name__)

STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")
#: Kinds of artifact (the first part of their names, see :mod:`sca_worker.jobs`).
ARTIFACT_KINDS = ("input", "op", "P", "balance", "spectrum", "result", "run", "ids")

#: Upper bounds (seconds) of the histograms' buckets; +Inf is implied.
STAGE_BUCKETS = (
    0.01,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
    1800.0,
    3600.0,
)
QUERY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: histogram -> (its hash in the store, its buckets)
HISTOGRAMS = {
    "stage": (keys.histogram("stage_seconds"), STAGE_BUCKETS),
    "query": (keys.histogram("query_seconds"), QUERY_BUCKETS),
}


def _le(bound: float) -> str:
    return "+Inf" if math.isinf(bound) else repr(float(bound))


def observation(histogram: str, label: str, seconds: float) -> tuple[str, dict]:
    """One observation of ``seconds`` with ``label`` in ``histogram``: the hash it
    is added to and the amounts (for :meth:`sca_worker.store.Store.hincr_many`)."""
    name, buckets = HISTOGRAMS[histogram]
    bound = next((b for b in buckets if seconds <= b), math.inf)
    return name, {f"{label}|{_le(bound)}": 1, f"{label}|count": 1, f"{label}|sum": float(seconds)}


def observe(store: Store, histogram: str, label: str, seconds: float) -> None:
    """Count one observation of ``seconds`` with ``label`` in ``histogram``."""
    store.hincr_many(*observation(histogram, label, seconds))


def observe_quietly(store: Store, histogram: str, label: str, seconds: float) -> None:
    """:func:`observe`, dropping the observation when the store refuses it."""
    try:
        observe(store, histogram, label, seconds)
    except Exception as exc:  # Redis away or full: a metric is not worth a failure
        log.debug("metric %s{%s} dropped: %s", histogram, label, type(exc).__name__)


class Recorder:
    """Observations kept in this process and added to the store every ``interval``
    seconds by a daemon thread, one transaction per histogram: a query pays no
    round trip to Redis, and other processes see it within about ``interval``.

    The thread starts with the first observation in each process (so a fork
    gets its own); what a failed flush could not add is kept for the next one.
    """

    def __init__(self, store, interval: float = 1.0):
        self.store, self.interval = store, interval
        self._lock = threading.Lock()
        self._pending: dict[str, Any] = {}  # name -> Counter of counts and sums
        self._pid: int | None = None
        atexit.register(self.flush)

    def observe(self, histogram: str, label: str, seconds: float) -> None:
        name, buckets = HISTOGRAMS[histogram]
        bound = next((b for b in buckets if seconds <= b), math.inf)
        with self._lock:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                self._pending = {}
                threading.Thread(target=self._run, daemon=True, name="sca-metrics").start()
            pending = self._pending.setdefault(name, Counter())
            pending.update({f"{label}|{_le(bound)}": 1, f"{label}|count": 1})
            pending[f"{label}|sum"] += float(seconds)

    def _run(self) -> None:
        pid = os.getpid()
        while self._pid == pid:
            time.sleep(self.interval)
            self.flush()

    def flush(self) -> None:
        """Add what was observed since the last flush to the store."""
        with self._lock:
            pending, self._pending = self._pending, {}
        for name, amounts in pending.items():
            try:
                self.store.hincr_many(
                    name,
                    {
                        field: (int(v) if not field.endswith("|sum") else float(v))
                        for field, v in amounts.items()
                    },
                )
            except Exception as exc:  # Redis away or full: keep them for the next flush
                log.debug("metrics flush failed: %s", type(exc).__name__)
                with self._lock:
                    self._pending.setdefault(name, Counter()).update(amounts)


def histogram(store: Store, histogram: str) -> dict[str, tuple[list[tuple[str, float]], float]]:
    """Per label: the cumulative buckets ``[(le, count), ..., ("+Inf", count)]`` and the sum."""
    name, buckets = HISTOGRAMS[histogram]
    numbers = store.hnumbers(name)
    labels = sorted({field.rsplit("|", 1)[0] for field in numbers})
    out = {}
    for label in labels:
        total, cumulative = 0.0, []
        for bound in (*buckets, math.inf):
            total += numbers.get(f"{label}|{_le(bound)}", 0.0)
            cumulative.append((_le(bound), total))
        out[label] = (cumulative, numbers.get(f"{label}|sum", 0.0))
    return out


def census(store: Store) -> tuple[dict[str, int], dict[str, int]]:
    """Job records by status and artifact bytes (chunks included) by kind, in one
    pass over the store (every status and kind, 0 when none)."""
    statuses, sizes = store.census(keys.JOB, "status", ARTIFACT_KINDS)
    return (
        {status: int(statuses.get(status, 0)) for status in STATUSES},
        {kind: int(sizes.get(kind, 0)) for kind in ARTIFACT_KINDS},
    )


def shared_census(store: Store, interval: float) -> tuple[dict[str, int], dict[str, int]] | None:
    """The census (:func:`census`) as last taken by any process of the service.

    The process that finds no claim (``SET NX`` with the interval as its
    TTL) takes it again and stores it; the others read the stored one.  So
    however many processes are scraped, and however often, the store's keys
    are walked at most once per ``interval`` seconds.  None before the first
    census is stored.
    """
    try:
        claimed = store.set_if(keys.census_claim(), b"1", max(1, math.ceil(interval)))
    except Exception as exc:  # Redis full refuses the claim: count, keep nothing
        log.debug("census claim refused: %s", type(exc).__name__)
        return census(store)
    if claimed:
        statuses, sizes = census(store)
        try:
            store.save_bytes(
                keys.census(),
                json.dumps({"jobs": statuses, "bytes": sizes}).encode(),
                ttl=max(60, math.ceil(10 * interval)),
            )
        except Exception as exc:
            log.debug("census not kept: %s", type(exc).__name__)
        return statuses, sizes
    raw = store.get_value(keys.census())
    if raw is None:
        return None
    stored = json.loads(raw)
    return stored["jobs"], stored["bytes"]
