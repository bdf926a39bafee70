"""Load test: job submissions and queries against a running service, for a fixed time.

Starts the service itself (``--mode redis``: ``sca serve`` with ``REDIS_URL``
plus two ``celery -A worker worker`` processes; ``--mode embedded``: ``sca
serve`` alone), prepares one finished job of n = 10^4 elements (label runs)
and a few small ones, then runs ``--clients`` threads for ``--duration``
seconds, each on one keep-alive connection, mixing:

* ``POST /v1/jobs``: label runs of n = 38 ... 2,000 elements (new content each time);
* ``GET /v1/jobs/{id}``: polls of submitted jobs;
* ``GET .../similar`` and ``POST .../custom-clusters`` on the n = 10^4 job and
  on the small finished jobs;
* in a phase of their own (``--new-elements-duration``), ``POST .../queries``
  placing one new element (its label in each of the 10 runs) into the n = 10^4
  job, with its custom cluster and 10 most similar elements, half of the
  requests, the other half custom clusters of existing elements on the same
  job (the peer, measured under the same load).

A phase of small jobs (``--small-duration`` seconds; ``--small-only`` runs it
alone, without preparing the n = 10^4 jobs) submits the paper's baseball
consensus (a distinct multiple each time, so no job finds another's result
cached) and follows each job's events (``GET /v1/jobs/{id}/events``, which
ends with its terminal event) to time it end to end: after ``--clients`` jobs
at once, untimed (the workers warm their kernels before their first task),
first ``--small-serial`` jobs one at a time (the latency of one small job),
then ``--clients`` threads, each submitting its next job as soon as its last
one finished, for the rest of the phase (small jobs a second, sustained).
Each part prints the CPU milliseconds a job of the service (API processes
and workers), of this script and of the Redis server.

A first phase sends the queries alone (the target: similar and custom-cluster
queries on the cached n = 10^4 job), then the mix runs with submissions paced
at ``--submit-rate`` per second.  A last, hostile phase (``--hostile-duration``
seconds) sends the queries alone again beside

* ``--slow`` connections trickling their headers in and as many trickling a
  body (:mod:`slow_clients`; the header deadline drops the first kind, which
  then connect again);
* ``--long-clients`` threads asking, back to back, for custom clusters of
  exactly 1,234 elements with up to 100,000 iterations on the n = 10^4 job;
* ``GET /healthz`` polled on a new connection every 50 ms.

For each phase it prints requests per second, p50 and p99 latency and errors
per endpoint (429s are counted apart: they are the per-key limits at work;
so, in the hostile phase, are queries refused as over the query time budget,
503 or 422, which is that budget at work), then waits for every submitted job
to finish and reports any lost or stuck one.

    python scripts/load.py --mode redis --duration 60
    python scripts/load.py --mode embedded --duration 60
    python scripts/load.py --mode redis --small-only --small-duration 20
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from functools import partial

import numpy as np
from noisy_neighbours import SilentReceiver, compare, noisy_threads
from shared import ROOT, cpu_seconds, free_port
from slow_clients import SlowClients, latencies

from sca.planted import planted_runs, planted_truth

# The paper's baseball consensus (a header row of players).
BASEBALL_S = np.loadtxt(ROOT / "data" / "baseball" / "S.csv", delimiter=",", skiprows=1)

KEYS = [f"load-key-{i}-{uuid.uuid4().hex[:8]}" for i in range(8)]
#: The bearer token of ``GET /metrics`` (SCA_METRICS_KEY): the monitor of the noisy phase.
METRICS_KEY = f"load-metrics-{uuid.uuid4().hex}"


class Conn:
    """One keep-alive HTTP/1.1 connection with one API key."""

    def __init__(self, port: int, key: str):
        self.port, self.key = port, key
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str = "application/json",
    ):
        headers = {"Authorization": f"Bearer {self.key}"}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            self.conn.request(method, path, body=body, headers=headers)
            response = self.conn.getresponse()
            return response.status, response.read()
        except (http.client.HTTPException, OSError):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            raise


def labels_npy(n: int, runs: int, k: int, seed: int) -> bytes:
    """``runs`` label runs of ``n`` elements in ``k`` planted blocks (10% noise), as .npy."""
    rng = np.random.default_rng(seed)
    labels = planted_runs(planted_truth(n, [1] * k, rng), runs, 0.1, rng)
    buffer = io.BytesIO()
    np.save(buffer, labels)
    return buffer.getvalue()


def multipart(npy: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="input"\r\n\r\nlabels\r\n'.encode(),
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="runs.npy"\r\nContent-Type: application/octet-stream\r\n\r\n'.encode()
        + npy
        + b"\r\n",
        f"--{boundary}--\r\n".encode(),
    ]
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def submit(conn: Conn, n: int, seed: int):
    body, content_type = multipart(labels_npy(n, 10, 3, seed))
    return conn.request("POST", "/v1/jobs", body, content_type)


def baseball(conn: Conn, multiple: float):
    """Submit the baseball consensus times ``multiple`` (its own content, its own job)."""
    body = json.dumps({"consensus": (BASEBALL_S * multiple).tolist()}).encode()
    return conn.request("POST", "/v1/jobs", body)


def small_job(conn: Conn, stats: Stats, rng) -> str:
    """One baseball job, submitted and followed to its end (its terminal status;
    "lost" when the submission or the stream failed)."""
    start = time.perf_counter()
    status, body = stats.timed("POST /v1/jobs", lambda: baseball(conn, 1 + rng.random()))
    if status != 202:
        return "lost"
    job = json.loads(body)["id"]
    status, body = stats.timed(
        "GET .../events", lambda: conn.request("GET", f"/v1/jobs/{job}/events")
    )
    ends = [line for line in body.decode().splitlines() if line.startswith("event: ")]
    outcome = ends[-1].removeprefix("event: ") if status == 200 and ends else "lost"
    if outcome == "succeeded":
        stats.add("small job, end to end", time.perf_counter() - start, 200)
    return outcome


def small_client(port, key, stop, stats, outcome, rng):
    conn = Conn(port, key)
    while not stop.is_set():
        result = small_job(conn, stats, rng)
        with stats.lock:
            outcome[result] += 1


class CPU:
    """CPU seconds spent since it was made: the service's (the API processes and
    the workers, all children of this script), this script's (the clients), and
    the Redis server's (``INFO cpu``, its other clients included when shared)."""

    def __init__(self, redis_url: str | None):
        import redis

        self.redis = redis.Redis.from_url(redis_url) if redis_url else None
        self.start = self.now()

    def now(self) -> tuple[float, float, float]:
        own = time.process_time()
        info = self.redis.info("cpu") if self.redis is not None else {}
        server = float(info.get("used_cpu_sys", 0)) + float(info.get("used_cpu_user", 0))
        return cpu_seconds() - own, own, server

    def line(self, jobs: int) -> str:
        """Each part's CPU milliseconds a job, since it was made."""
        spent = [b - a for a, b in zip(self.start, self.now())]
        per = [f"{1000 * x / max(jobs, 1):.1f}" for x in spent]
        return (
            f"CPU a job (ms): service {per[0]}, load generator {per[1]}, Redis server {per[2]}; "
            f"load average {os.getloadavg()[0]:.1f}"
        )


def run_small(args, port: int) -> int:
    """The small-jobs phase (see the module): one at a time, then back to back."""
    failures = 0
    redis_url = args.redis_url if args.mode == "redis" else None
    warming = [
        threading.Thread(target=small_job, args=(Conn(port, KEYS[0]), Stats(), rng))
        for rng in np.random.default_rng(99).spawn(args.clients)
    ]
    for thread in warming:
        thread.start()
    for thread in warming:
        thread.join(120)
    stats, outcome = Stats(), defaultdict(int)
    conn, rng = Conn(port, KEYS[0]), np.random.default_rng(7)
    start, cpu = time.monotonic(), CPU(redis_url)
    for _ in range(args.small_serial):
        outcome[small_job(conn, stats, rng)] += 1
    report(stats, time.monotonic() - start, f"{args.mode}, small jobs one at a time", outcome)
    print(cpu.line(args.small_serial))
    failures += sum(stats.errors.values()) + sum(n for k, n in outcome.items() if k != "succeeded")
    stats, outcome, stop = Stats(), defaultdict(int), threading.Event()
    threads = [
        threading.Thread(
            target=small_client,
            args=(port, KEYS[i % len(KEYS)], stop, stats, outcome, np.random.default_rng(i)),
        )
        for i in range(args.clients)
    ]
    start, cpu = time.monotonic(), CPU(redis_url)
    for thread in threads:
        thread.start()
    time.sleep(args.small_duration)
    stop.set()
    for thread in threads:
        thread.join(120)
    elapsed = time.monotonic() - start
    report(stats, elapsed, f"{args.mode}, small jobs, {args.clients} clients", outcome)
    print(f"small jobs: {outcome.get('succeeded', 0) / elapsed:.1f} /s sustained")
    print(cpu.line(sum(outcome.values())))
    failures += sum(stats.errors.values()) + sum(n for k, n in outcome.items() if k != "succeeded")
    return failures


def wait(conn: Conn, job_id: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = conn.request("GET", f"/v1/jobs/{job_id}")
        if status == 200 and json.loads(body)["status"] not in ("queued", "running"):
            return json.loads(body)["status"]
        time.sleep(0.2)
    return "stuck"


class Stats:
    """Latency, errors and throttled requests per endpoint; ``expected`` statuses of
    the queries are counted apart as over the time budget (the hostile phase)."""

    def __init__(self, expected: frozenset = frozenset()):
        self.lock = threading.Lock()
        self.latency = defaultdict(list)
        self.errors = defaultdict(int)
        self.throttled = defaultdict(int)
        self.over_budget = defaultdict(int)
        self.expected = expected
        self.examples: dict[str, str] = {}

    def add(self, name: str, seconds: float, status: int | None, body: bytes = b""):
        with self.lock:
            if status == 429:
                self.throttled[name] += 1
            elif status in self.expected and name in QUERIES:
                self.over_budget[name] += 1
            elif status is None or status >= 500 or status not in OK[name]:
                self.errors[name] += 1
                self.examples.setdefault(name, f"{status} {body[:200]!r}")
            else:
                self.latency[name].append(seconds)

    def timed(self, name: str, call):
        """``call()`` (a status and body), timed and counted under ``name``."""
        start = time.perf_counter()
        try:
            status, body = call()
        except Exception as exc:  # a connection error counts as an error
            status, body = None, repr(exc).encode()
        self.add(name, time.perf_counter() - start, status, body)
        return status, body


OK = {
    "POST /v1/jobs": {202},
    "GET /v1/jobs/{id}": {200},
    "GET similar (n=10^4)": {200},
    "POST custom-clusters (n=10^4)": {200},
    "GET similar (small)": {200},
    "POST custom-clusters (small)": {200},
    "POST custom-clusters 1234 (n=10^4)": {200},
    "GET /healthz": {200},
    "POST queries, new element (n=10^4)": {200},
    "GET .../events": {200},
    "small job, end to end": {200},
    "POST /v1/jobs, silent callback": {202},
    "GET /metrics": {200},
    "GET /metrics, no metrics key": {403},
}
#: Rows printed even when empty (the others only in the phase that sends them).
OK_ALWAYS = list(OK)[:6]
QUERIES = {name for name in OK if "similar" in name or "custom-clusters" in name}
#: A query's answers when it exceeds the query time budget (SCA_QUERY_TIME_BUDGET).
OVER_BUDGET = frozenset({503, 422})
#: The long custom-cluster query of the hostile phase.
LONG_QUERY = {"min_size": 1234, "max_size": 1234, "max_iterations": 100_000}


class Pace:
    """Hands out submission slots at ``rate`` per second across all clients."""

    def __init__(self, rate: float):
        self.rate, self.lock, self.start, self.given = rate, threading.Lock(), time.monotonic(), 0

    def take(self) -> bool:
        with self.lock:
            if self.given < (time.monotonic() - self.start) * self.rate:
                self.given += 1
                return True
            return False


def new_element(runs: np.ndarray, rng) -> bytes:
    """A request placing one new element: an element of the n = 10^4 job's runs with
    two of its labels redrawn."""
    labels = runs[int(rng.integers(runs.shape[0]))].copy()
    labels[rng.choice(labels.size, 2, replace=False)] = rng.integers(0, 3, 2)
    return json.dumps({"elements": [{"labels": labels.tolist()}], "limit": 10}).encode()


def client(port, key, stop, stats, big, small, submitted, rng, submitter=None, runs=None):
    conn = Conn(port, key)
    while not stop.is_set():
        roll = rng.random()
        if runs is not None and roll < 0.5:  # the new-elements phase: half of these
            body = new_element(runs, rng)
            name = "POST queries, new element (n=10^4)"
            call = lambda: conn.request("POST", f"/v1/jobs/{big}/queries", body)  # noqa
        elif runs is not None:  # and half custom clusters, measured beside them
            body = json.dumps({"element": int(rng.integers(10_000)), "limit": 10}).encode()
            name = "POST custom-clusters (n=10^4)"
            call = lambda: conn.request("POST", f"/v1/jobs/{big}/custom-clusters", body)  # noqa
        elif submitter is not None and submitter.take():
            name, call = (
                "POST /v1/jobs",
                lambda: submit(conn, int(rng.integers(38, 2001)), int(rng.integers(1 << 30))),
            )
        elif roll < 0.08 and any(k == key for k, _ in submitted[-50:]):
            job = [j for k, j in submitted[-50:] if k == key][-1]
            name, call = "GET /v1/jobs/{id}", lambda: conn.request("GET", f"/v1/jobs/{job}")
        elif roll < 0.54:
            element = int(rng.integers(10_000))
            name = "GET similar (n=10^4)"
            call = lambda: conn.request("GET", f"/v1/jobs/{big}/elements/{element}/similar")  # noqa
        elif roll < 0.96:
            body = json.dumps({"element": int(rng.integers(10_000)), "limit": 10}).encode()
            name = "POST custom-clusters (n=10^4)"
            call = lambda: conn.request("POST", f"/v1/jobs/{big}/custom-clusters", body)  # noqa
        else:
            job = small[int(rng.integers(len(small)))]
            if rng.random() < 0.5:
                name = "GET similar (small)"
                call = lambda: conn.request("GET", f"/v1/jobs/{job}/elements/3/similar")  # noqa
            else:
                name = "POST custom-clusters (small)"
                call = partial(
                    conn.request,
                    "POST",
                    f"/v1/jobs/{job}/custom-clusters",
                    b'{"element": 3, "limit": 10}',
                )
        status, body = stats.timed(name, call)
        if name == "POST /v1/jobs" and status == 202:
            submitted.append((key, json.loads(body)["id"]))


def long_client(port, key, stop, stats, big, rng):
    """Custom clusters of exactly 1,234 elements, up to 100,000 iterations, back to back."""
    conn = Conn(port, key)
    while not stop.is_set():
        body = json.dumps({"element": int(rng.integers(10_000)), **LONG_QUERY}).encode()
        stats.timed(
            "POST custom-clusters 1234 (n=10^4)",
            lambda: conn.request("POST", f"/v1/jobs/{big}/custom-clusters", body),
        )


def health_client(port, stop, stats):
    """``GET /healthz`` on a new connection every 50 ms."""
    while not stop.is_set():
        for seconds in latencies(port, "/healthz", duration=0.5, interval=0.05):
            stats.add("GET /healthz", seconds or 0.0, 200 if seconds is not None else None)


def start_service(mode: str, redis_url: str, api_processes: int) -> tuple[list, int]:
    port = free_port()
    env = dict(
        os.environ,
        SCA_API_KEYS=",".join(KEYS),
        # the small-jobs phase follows each job's events: a stream per client
        SCA_MAX_EVENT_STREAMS="16",
        # the noisy-neighbour phase's silent receiver listens on loopback
        SCA_WEBHOOK_ALLOW="127.0.0.1",
        SCA_METRICS_KEY=METRICS_KEY,
        PYTHONPATH=str(ROOT),
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    env.pop("REDIS_URL", None)
    processes = []
    if mode == "redis":
        env.update(REDIS_URL=redis_url, SCA_KEY_PREFIX=f"sca-load-{uuid.uuid4().hex[:6]}:")
        for i in range(2):
            processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "celery",
                        "-A",
                        "worker",
                        "worker",
                        "--loglevel",
                        "WARNING",
                        "--concurrency",
                        "1",
                        "--hostname",
                        f"load{i}@%h",
                    ],
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
    serve = [
        sys.executable,
        "-m",
        "sca_service.cli",
        "serve",
        "--port",
        str(port),
        "--threads",
        "8",
    ]
    if mode == "redis":
        serve += ["--workers", str(api_processes)]
    processes.append(
        subprocess.Popen(
            serve, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            probe = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            probe.request("GET", "/readyz")
            if probe.getresponse().status == 200:
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit("the service did not become ready")
        time.sleep(0.2)
    time.sleep(2 if mode == "redis" else 0)  # let the workers connect
    return processes, port


def stop_service(processes: list) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()


def report(stats: Stats, duration: float, mode: str, outcome: dict) -> None:
    print(f"\nmode: {mode}; {duration:.0f} s; {len(KEYS)} API keys")
    print(
        f"{'endpoint':34s} {'requests':>9s} {'req/s':>8s} {'p50 ms':>8s} {'p99 ms':>8s} "
        f"{'errors':>7s} {'429':>6s} {'budget':>7s}"
    )
    total = 0
    for name in OK:
        lat = np.asarray(stats.latency.get(name, []), dtype=float) * 1000
        count = lat.size
        refused = (
            stats.errors.get(name, 0),
            stats.throttled.get(name, 0),
            stats.over_budget.get(name, 0),
        )
        if not count and not any(refused) and name not in OK_ALWAYS:
            continue
        total += count
        p50 = f"{np.percentile(lat, 50):.1f}" if count else "-"
        p99 = f"{np.percentile(lat, 99):.1f}" if count else "-"
        print(
            f"{name:34s} {count:9d} {count / duration:8.1f} {p50:>8s} {p99:>8s} "
            f"{refused[0]:7d} {refused[1]:6d} {refused[2]:7d}"
        )
    print(f"{'all':34s} {total:9d} {total / duration:8.1f}")
    print("jobs submitted: " + ", ".join(f"{k} {v}" for k, v in sorted(outcome.items())))
    for name, example in stats.examples.items():
        print(f"first error of {name}: {example}")


def run_phase(
    args, port: int, phase: str, rate: float, duration: float, bigs: dict, smalls: dict
) -> int:
    """One phase of ``duration`` seconds, reported; its errors and stuck jobs."""
    hostile, noisy = phase == "hostile", phase == "noisy neighbour"
    stats, stop, submitted = Stats(OVER_BUDGET if hostile else frozenset()), threading.Event(), []
    # the noisy neighbour is KEYS[0]; the mix then runs on the other keys
    keys = KEYS[1:] if noisy else KEYS
    pace = Pace(rate) if rate > 0 else None
    runs = (
        np.load(io.BytesIO(labels_npy(args.big_n, 10, 3, 0))) if phase == "new elements" else None
    )
    threads = [
        threading.Thread(
            target=client,
            args=(
                port,
                keys[i % len(keys)],
                stop,
                stats,
                bigs[keys[i % len(keys)]],
                smalls[keys[i % len(keys)]],
                submitted,
                np.random.default_rng(i),
                pace,
                runs,
            ),
        )
        for i in range(args.clients)
    ]
    slow = []
    if hostile:
        threads += [
            threading.Thread(
                target=long_client,
                args=(
                    port,
                    KEYS[i % len(KEYS)],
                    stop,
                    stats,
                    bigs[KEYS[i % len(KEYS)]],
                    np.random.default_rng(100 + i),
                ),
            )
            for i in range(args.long_clients)
        ]
        threads.append(threading.Thread(target=health_client, args=(port, stop, stats)))
        auth = {"Authorization": f"Bearer {KEYS[0]}"}
        slow = [
            SlowClients(port, kind, args.slow, headers=auth).start() for kind in ("headers", "body")
        ]
    receiver = None
    if noisy:
        receiver = SilentReceiver().start()
        noisy_key, monitor = partial(Conn, port, KEYS[0]), partial(Conn, port, METRICS_KEY)
        threads += noisy_threads(noisy_key, monitor, stop, stats, receiver, job_status, args)
    start = time.monotonic()
    for thread in threads:
        thread.start()
    time.sleep(duration)
    stop.set()
    elapsed = time.monotonic() - start  # rates over the phase, not its stragglers
    for thread in threads:
        thread.join(120)
    for clients in slow:
        clients.stop()
    connected = receiver.stop() if receiver is not None else 0
    outcome = defaultdict(int)
    conns = {key: Conn(port, key) for key in KEYS}
    for key, job in submitted:
        outcome[wait(conns[key], job, 300)] += 1
    report(
        stats,
        elapsed,
        f"{args.mode}, {phase}" + (f" (submissions paced at {rate:g}/s)" if rate else ""),
        outcome,
    )
    if hostile:
        print(
            f"slow clients: {args.slow} trickling headers ({slow[0].closed} dropped at the "
            f"header deadline, then reconnected), {args.slow} trickling a body "
            f"({slow[1].closed} dropped); {args.long_clients} clients of long custom-cluster "
            f"queries ({json.dumps(LONG_QUERY)}); 'budget' = 503/422 over the query time "
            f"budget, expected"
        )
    if noisy:
        print(
            f"noisy neighbour: {KEYS[0]} kept jobs whose callback never answers "
            f"({connected} deliveries connected and hung); GET /metrics read once a second "
            f"with SCA_METRICS_KEY and asked {args.scrape_rate:g} times a second by each of "
            f"{args.scrapers} clients without it; beside the mix of the other keys"
        )
    return sum(stats.errors.values()) + outcome.get("stuck", 0), stats


def job_status(conn: Conn, job_id: str) -> str:
    """A job's status now (``"unknown"`` when the GET fails)."""
    try:
        status, body = conn.request("GET", f"/v1/jobs/{job_id}")
    except (http.client.HTTPException, OSError):
        return "unknown"
    return json.loads(body)["status"] if status == 200 else "unknown"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=("redis", "embedded"), default="redis")
    p.add_argument("--duration", type=float, default=60)
    p.add_argument("--clients", type=int, default=6)
    p.add_argument(
        "--submit-rate", type=float, default=2.0, help="job submissions per second during the mix"
    )
    p.add_argument(
        "--query-duration",
        type=float,
        default=20,
        help="seconds of queries alone before the mix (0 = none)",
    )
    p.add_argument(
        "--new-elements-duration",
        type=float,
        default=20,
        help="seconds of new-element queries (POST .../queries, one element "
        "given by its labels) on the n = 10^4 job, after the queries (0 = none)",
    )
    p.add_argument("--api-processes", type=int, default=2)
    p.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/14"))
    p.add_argument("--big-n", type=int, default=10_000)
    p.add_argument(
        "--hostile-duration",
        type=float,
        default=20,
        help="seconds of the hostile phase after the mix (0 = none)",
    )
    p.add_argument(
        "--slow",
        type=int,
        default=64,
        help="slow connections of each kind (headers, body) in the hostile phase",
    )
    p.add_argument(
        "--long-clients",
        type=int,
        default=2,
        help="clients of long custom-cluster queries in the hostile phase",
    )
    p.add_argument(
        "--noisy-duration",
        type=float,
        default=20,
        help="seconds of the mix beside one key's hanging webhooks and /metrics scrapers, "
        "after the hostile phase (0 = none)",
    )
    p.add_argument(
        "--scrapers",
        type=int,
        default=16,
        help="anonymous GET /metrics clients of the noisy phase (no metrics key: 403)",
    )
    p.add_argument(
        "--scrape-rate", type=float, default=5.0, help="requests a second of each scraper"
    )
    p.add_argument(
        "--small-duration",
        type=float,
        default=20,
        help="seconds of small (baseball) jobs back to back, after the hostile phase (0 = none)",
    )
    p.add_argument(
        "--small-serial", type=int, default=30, help="small jobs timed one at a time first"
    )
    p.add_argument(
        "--small-only", action="store_true", help="only the small-jobs phase (no n = 10^4 jobs)"
    )
    args = p.parse_args(argv)
    processes, port = start_service(args.mode, args.redis_url, args.api_processes)
    try:
        if args.small_only:
            return 0 if not run_small(args, port) else 1
        setup = Conn(port, KEYS[0])
        status, body = submit(setup, args.big_n, 0)
        assert status == 202, body
        big = json.loads(body)["id"]
        small = [json.loads(submit(setup, 200, s)[1])["id"] for s in (1, 2, 3)]
        for job in [big, *small]:
            assert wait(setup, job, 300) == "succeeded", job
        # Every key queries the one n = 10^4 job: give each its own copy (jobs are per key).
        bigs = {KEYS[0]: big}
        smalls = {KEYS[0]: small}
        for key in KEYS[1:]:
            conn = Conn(port, key)
            bigs[key] = json.loads(submit(conn, args.big_n, 0)[1])["id"]
            smalls[key] = [json.loads(submit(conn, 200, s)[1])["id"] for s in (1, 2, 3)]
            for job in [bigs[key], *smalls[key]]:
                assert wait(conn, job, 300) == "succeeded", job
        for key in KEYS:  # warm each API process's operator cache
            conn = Conn(port, key)
            for _ in range(2 * args.api_processes):
                conn.request("GET", f"/v1/jobs/{bigs[key]}/elements/0/similar")
        failures, seen = 0, {}
        for phase, rate, duration in (
            ("queries only", 0.0, args.query_duration),
            ("new elements", 0.0, args.new_elements_duration),
            ("mix", args.submit_rate, args.duration),
            ("hostile", 0.0, args.hostile_duration),
            ("noisy neighbour", args.submit_rate, args.noisy_duration),
        ):
            if duration > 0:
                failed, seen[phase] = run_phase(args, port, phase, rate, duration, bigs, smalls)
                failures += failed
        if "mix" in seen and "noisy neighbour" in seen:
            print("\nthe other keys beside the noisy neighbour, against the mix (quiet):")
            print("\n".join(compare(seen["mix"], seen["noisy neighbour"], OK_ALWAYS)))
        if args.small_duration > 0:
            failures += run_small(args, port)
        return 0 if not failures else 1
    finally:
        stop_service(processes)


if __name__ == "__main__":
    sys.exit(main())
