"""``GET /metrics``: the service's figures in the Prometheus exposition format.

One scrape of any API process describes the whole service, however many API
processes and Celery workers there are, because nothing is taken from the
answering process's memory (:mod:`sca_worker.metrics`):

* ``sca_jobs{status}`` -- job records by status, counted in the store;
* ``sca_queue_depth`` -- stage tasks waiting for a worker (the broker's
  queue in Redis; jobs waiting for a thread in the embedded default), and
  ``sca_queue_unacked`` (Redis) -- tasks workers hold, not yet acknowledged;
* ``sca_artifact_bytes{kind}`` -- bytes of the artifacts in the store;
* ``sca_stage_duration_seconds{stage}`` -- histogram of each stage task's
  run time (``ensemble`` is one ensemble run), observed by the process that
  ran it;
* ``sca_query_duration_seconds{query}`` -- histogram of the answer time of
  the queries on finished jobs (``custom_clusters``, ``similar``, ``plot``),
  observed by the API process that answered (added to the store once a
  second, and before this process answers a scrape).

prometheus_client's multiprocess mode was not used: it sums the files of the
processes of one machine, so it could not see Celery workers on others (nor
API processes in other containers), and its gauges of live processes do not
describe jobs.  The library formats the answer (``text/plain; version=0.0.4``,
or OpenMetrics when the scraper asks for it).

A scrape costs the same however many jobs are stored: the census of jobs
and artifacts (which walks the store's keys) is taken by one process of the
whole service at most once per ``SCA_METRICS_CENSUS_SECONDS`` and kept in
the store, and every other scrape reads that one
(:func:`sca_worker.metrics.shared_census`); each API process computes at
most one scrape at a time and reuses it for :data:`REUSE_SECONDS`.

With ``SCA_METRICS_KEY`` set, ``/metrics`` needs ``Authorization: Bearer
<that key>`` (401 without it, 403 for a job API key); unset, it answers only
clients whose address is in ``SCA_METRICS_NETWORKS`` (loopback by default),
and 403 to the others.  It shows counts and durations only, never a job, an
id or a key.
"""

from __future__ import annotations

import hmac
import ipaddress
import threading
import time

from flask import Blueprint, Response, current_app, g, request
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import choose_encoder

from sca_worker import metrics

from .auth import load_keys
from .errors import ProblemError

bp = Blueprint("metrics", __name__)

#: Seconds a scrape's figures are served again to the next scrapes of this process.
REUSE_SECONDS = 1.0
#: Endpoints whose answer time is a query latency, and their label.
QUERY_ENDPOINTS = {
    "jobs.custom_clusters": "custom_clusters",
    "jobs.similar": "similar",
    "plots.plot": "plot",
}
HISTOGRAM_HELP = {
    "stage": ("sca_stage_duration_seconds", "Run time of each stage task", "stage"),
    "query": ("sca_query_duration_seconds", "Answer time of queries on finished jobs", "query"),
}


class StoreCollector:
    """Collects every metric from the store at scrape time (reused for a second)."""

    def __init__(
        self, store, queue, recorder=None, embedded: bool = False, census_seconds: float = 15.0
    ):
        self.store, self.queue, self.recorder = store, queue, recorder
        self.embedded, self.census_seconds = embedded, census_seconds
        self._lock = threading.Lock()
        self._families: list = []
        self._at = -REUSE_SECONDS

    def describe(self):
        return []  # names are not registered ahead: the registry never collects early

    def collect(self):
        with self._lock:  # one scrape at a time; the next ones reuse it
            if time.monotonic() - self._at >= REUSE_SECONDS:
                if self.recorder is not None:
                    self.recorder.flush()  # this process's queries, up to now
                self._families = list(self._gather())
                self._at = time.monotonic()
            return list(self._families)

    def _gather(self):
        taken = metrics.shared_census(self.store, self.census_seconds)
        statuses, artifacts = taken if taken is not None else ({}, {})
        jobs = GaugeMetricFamily("sca_jobs", "Jobs in the store by status", labels=["status"])
        for status, count in statuses.items():
            jobs.add_metric([status], count)
        yield jobs
        if not self.embedded:  # Celery's broker
            waiting, unacked = self.store.queue_depth()
            yield GaugeMetricFamily(
                "sca_queue_unacked",
                "Stage tasks held by workers, not yet acknowledged",
                value=unacked,
            )
        else:
            waiting = self.queue.waiting() if hasattr(self.queue, "waiting") else 0
        yield GaugeMetricFamily(
            "sca_queue_depth", "Stage tasks waiting for a worker", value=waiting
        )
        sizes = GaugeMetricFamily(
            "sca_artifact_bytes", "Bytes of stored artifacts by kind", labels=["kind"]
        )
        for kind, size in artifacts.items():
            sizes.add_metric([kind], size)
        yield sizes
        for histogram, (name, text, label) in HISTOGRAM_HELP.items():
            family = HistogramMetricFamily(name, text, labels=[label])
            for value, (buckets, total) in metrics.histogram(self.store, histogram).items():
                family.add_metric([value], buckets, total)
            yield family


def networks(setting) -> list:
    """The networks of ``SCA_METRICS_NETWORKS`` (comma-separated, ``ipaddress`` notation)."""
    try:
        return [ipaddress.ip_network(p.strip()) for p in str(setting or "").split(",") if p.strip()]
    except ValueError as exc:
        raise ValueError(f"SCA_METRICS_NETWORKS: {exc}") from None


def _from_allowed_network() -> bool:
    try:
        address = ipaddress.ip_address((request.remote_addr or "").split("%")[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in current_app.extensions["sca_metrics_networks"])


def _check_access() -> None:
    """401/403 unless the request carries ``SCA_METRICS_KEY`` (when one is set)."""
    expected = current_app.config.get("SCA_METRICS_KEY")
    if not expected:
        if _from_allowed_network():
            return
        message = (
            "/metrics answers only SCA_METRICS_NETWORKS without a key; "
            "set SCA_METRICS_KEY to scrape from elsewhere"
        )
        raise ProblemError(403, "Forbidden", message, errors={"Authorization": [message]})
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() == "bearer" and hmac.compare_digest(token.encode(), expected.encode()):
        return
    if scheme.lower() == "bearer" and current_app.extensions["sca_keys"].owner(token):
        message = "job API keys cannot read /metrics; send SCA_METRICS_KEY"
        raise ProblemError(403, "Forbidden", message, errors={"Authorization": [message]})
    message = "send Authorization: Bearer <SCA_METRICS_KEY>"
    raise ProblemError(
        401,
        "Unauthorized",
        message,
        errors={"Authorization": [message]},
        headers={"WWW-Authenticate": 'Bearer realm="sca-metrics"'},
    )


@bp.get("/metrics")
def scrape():
    _check_access()
    encoder, content_type = choose_encoder(request.headers.get("Accept"))
    registry = current_app.extensions["sca_metrics"]
    return Response(
        encoder(registry), headers={"Content-Type": content_type, "Cache-Control": "no-store"}
    )


@bp.before_app_request
def _start_query_clock():
    if request.endpoint in QUERY_ENDPOINTS:
        g.sca_query_started = time.perf_counter()


@bp.after_app_request
def _observe_query(response):
    started = g.pop("sca_query_started", None)
    if started is not None:
        current_app.extensions["sca_metrics_recorder"].observe(
            "query", QUERY_ENDPOINTS[request.endpoint], time.perf_counter() - started
        )
    return response


def _init(app) -> None:
    key = app.config.get("SCA_METRICS_KEY")
    if key and key in load_keys(app.config):
        raise RuntimeError(
            "SCA_METRICS_KEY must differ from every API key: a job API key must not read /metrics"
        )
    b = app.extensions["sca"]
    recorder = metrics.Recorder(b.store)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(
        StoreCollector(
            b.store, b.queue, recorder, b.embedded, app.config["SCA_METRICS_CENSUS_SECONDS"]
        )
    )
    app.extensions["sca_metrics_networks"] = networks(app.config["SCA_METRICS_NETWORKS"])
    app.extensions["sca_metrics"] = registry
    app.extensions["sca_metrics_recorder"] = recorder


bp.record_once(lambda state: _init(state.app))
