"""The noisy-neighbour phase of ``load.py``: one key's webhooks hang and ``/metrics`` is scraped.

Beside the usual mix of the other keys, one key keeps submitting small jobs
whose ``callback_url`` is a receiver that accepts connections and never
answers (:class:`SilentReceiver`, on loopback, allowed by the service's
``SCA_WEBHOOK_ALLOW``); a monitor reads ``GET /metrics`` with the service's
``SCA_METRICS_KEY`` once a second, and ``--scrapers`` anonymous clients ask
for it ``--scrape-rate`` times a second each without that key (403).
:func:`compare` then sets the other keys' p99 latency of each endpoint
beside the same endpoint's in the mix phase (the quiet figure): the service
keeps one caller's hanging receiver and a scraper from starving the others
when each ratio stays under :data:`TARGET`.
"""

from __future__ import annotations

import json
import socket
import threading

import numpy as np

#: The other keys' p99 in this phase may be at most this many times the mix phase's.
TARGET = 2.0
#: Requests of an endpoint in each phase for its p99 to be judged.
P99_SAMPLES = 200
#: Jobs with a silent callback the noisy key keeps submitted at once ...
NOISY_ACTIVE = 8
#: ... sending at most this many a second (as the other keys' mix paces its own).
NOISY_RATE = 1.0
#: The noisy key's callback secret (the receiver never checks it).
SECRET = "noisy-neighbour-secret"


class SilentReceiver:
    """A TCP server on loopback that accepts every connection and never answers."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def start(self) -> SilentReceiver:
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def _accept(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:  # closed
                return
            self.accepted.append(connection)  # held open, never read nor answered

    def stop(self) -> int:
        """Close everything; the number of deliveries that connected."""
        self.socket.close()
        for connection in self.accepted:
            connection.close()
        return len(self.accepted)


def noisy_client(connect, stop, stats, receiver: SilentReceiver, job_status):
    """Small label-run jobs of one key, each with the silent receiver as its callback,
    :data:`NOISY_ACTIVE` of them active at a time, :data:`NOISY_RATE` a second at most
    (each job's delivery then hangs until ``SCA_WEBHOOK_TIMEOUT``, retried after a
    backoff, so the key keeps a dozen or so deliveries pending).  ``connect()`` gives a new
    connection of the key: one polls, and each submission has its own."""
    rng = np.random.default_rng(7)
    poll, active = connect(), []
    while not stop.is_set():
        active = [job for job in active if job_status(poll, job) in ("queued", "running")]
        if len(active) >= NOISY_ACTIVE:
            stop.wait(0.2)
            continue
        n = int(rng.integers(38, 200))
        labels = rng.integers(0, 3, (n, 10)).tolist()
        body = json.dumps(
            {"labels": labels, "callback_url": receiver.url, "callback_secret": SECRET}
        ).encode()
        conn = connect()
        status, answer = stats.timed(
            "POST /v1/jobs, silent callback", lambda: conn.request("POST", "/v1/jobs", body)
        )
        if status == 202:
            active.append(json.loads(answer)["id"])
        stop.wait(1 / NOISY_RATE)


def scraper(conn, stop, stats, name: str, rate: float):
    """``GET /metrics`` at ``rate`` a second, counted under ``name``."""
    while not stop.is_set():
        stats.timed(name, lambda: conn.request("GET", "/metrics"))
        stop.wait(1 / rate)


def noisy_threads(connect, monitor, stop, stats, receiver, job_status, args) -> list:
    """The threads of the phase: the noisy key's jobs (``connect()`` a connection of
    that key), the monitor (``monitor()`` one with the metrics key) reading
    ``/metrics`` once a second, and ``args.scrapers`` clients of the noisy key
    asking for it ``args.scrape_rate`` times a second each."""
    scrapers = [(monitor(), "GET /metrics", 1.0)] + [
        (connect(), "GET /metrics, no metrics key", args.scrape_rate) for _ in range(args.scrapers)
    ]
    return [
        threading.Thread(target=noisy_client, args=(connect, stop, stats, receiver, job_status))
    ] + [
        threading.Thread(target=scraper, args=(conn, stop, stats, name, rate))
        for conn, name, rate in scrapers
    ]


def compare(quiet, noisy, endpoints) -> list[str]:
    """Lines setting each endpoint's p99 in the noisy phase beside the quiet one; a
    verdict only where both phases have :data:`P99_SAMPLES` requests or more (with
    fewer, the p99 is the one or two slowest requests)."""
    lines = [
        f"{'endpoint (other keys)':34s} {'requests':>9s} {'quiet p99':>10s} {'noisy p99':>10s} "
        f"{'ratio':>7s}"
    ]
    for name in endpoints:
        a = np.asarray(quiet.latency.get(name, []), dtype=float) * 1000
        b = np.asarray(noisy.latency.get(name, []), dtype=float) * 1000
        if a.size == 0 or b.size == 0:
            continue
        p_quiet, p_noisy = np.percentile(a, 99), np.percentile(b, 99)
        ratio = p_noisy / p_quiet
        if min(a.size, b.size) < P99_SAMPLES:
            verdict = f"(fewer than {P99_SAMPLES} requests: no verdict)"
        else:
            verdict = "ok" if ratio < TARGET else f"over {TARGET:g}x"
        lines.append(
            f"{name:34s} {b.size:9d} {p_quiet:10.1f} {p_noisy:10.1f} {ratio:6.2f}x {verdict}"
        )
    return lines
