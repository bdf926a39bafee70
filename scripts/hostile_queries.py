"""Short queries during hostile long ones: ``similar`` latency while custom-cluster
requests ask for minutes of work.

Starts ``sca serve`` (the embedded default, as :mod:`load` does), submits one
job of n = 10^4 label runs, then measures ``GET .../similar`` on it with
``--similar-clients`` threads:

1. alone, for ``--baseline`` seconds;
2. while ``--hostile`` clients each send one custom-cluster request with
   ``min_size = max_size = 1234`` and ``max_iterations = 100000`` at once
   (minutes of work without the time budget), until all are answered;
3. while the same clients send such requests back to back (ignoring
   ``Retry-After``) for ``--duration`` seconds.

For each phase it prints the similar p50 / p99 / max latency and the
statuses and latencies of the hostile requests.  Queries run in the API
process in either mode, so the embedded default stands for both.

    python scripts/hostile_queries.py
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections import Counter

import numpy as np
from load import KEYS, Conn, start_service, stop_service, submit, wait

HOSTILE = json.dumps(
    {"element": 0, "min_size": 1234, "max_size": 1234, "max_iterations": 100_000}
).encode()


def similar_client(port, job, stop, latencies, statuses, seed):
    conn, rng = Conn(port, KEYS[0]), np.random.default_rng(seed)
    while not stop.is_set():
        start = time.perf_counter()
        status, _ = conn.request(
            "GET", f"/v1/jobs/{job}/elements/{int(rng.integers(10_000))}/similar"
        )
        latencies.append(time.perf_counter() - start)
        statuses[status] += 1


def hostile_client(port, job, stop, answers):
    conn = Conn(port, KEYS[0])
    while True:
        start = time.perf_counter()
        status, _ = conn.request("POST", f"/v1/jobs/{job}/custom-clusters", HOSTILE)
        answers.append((status, time.perf_counter() - start))
        if stop is None or stop.is_set():
            return


def measure(port, job, similar_clients, hostile, seconds=None, repeat=False):
    """Similar latencies (and hostile answers) for ``seconds``, or until the hostile
    requests are answered."""
    stop, latencies, statuses, answers = threading.Event(), [], Counter(), []
    similar = [
        threading.Thread(target=similar_client, args=(port, job, stop, latencies, statuses, i))
        for i in range(similar_clients)
    ]
    attack = [
        threading.Thread(target=hostile_client, args=(port, job, stop if repeat else None, answers))
        for _ in range(hostile)
    ]
    for thread in similar + attack:
        thread.start()
    start = time.monotonic()
    if seconds is not None:
        time.sleep(seconds)
        stop.set()
    for thread in attack:
        thread.join()
    stop.set()
    for thread in similar:
        thread.join()
    return time.monotonic() - start, np.asarray(latencies) * 1000, statuses, answers


def report(phase, elapsed, latencies, statuses, answers):
    print(f"\n{phase}: {elapsed:.1f} s")
    print(
        f"  similar: {latencies.size} requests {dict(statuses)}, p50 "
        f"{np.percentile(latencies, 50):.1f} ms, p99 {np.percentile(latencies, 99):.1f} ms, "
        f"max {latencies.max():.1f} ms"
    )
    if answers:
        seconds = np.array([s for _, s in answers])
        print(
            f"  hostile custom clusters: {len(answers)} answers "
            f"{dict(Counter(status for status, _ in answers))}, "
            f"latency p50 {np.percentile(seconds, 50):.2f} s, max {seconds.max():.2f} s"
        )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--hostile", type=int, default=16)
    p.add_argument("--similar-clients", type=int, default=2)
    p.add_argument("--baseline", type=float, default=5)
    p.add_argument("--duration", type=float, default=20)
    args = p.parse_args(argv)
    os.environ["SCA_RATE_LIMIT"] = "0"  # one key sends everything: measure latency, not 429s
    processes, port = start_service("embedded", "", 1)
    try:
        conn = Conn(port, KEYS[0])
        status, body = submit(conn, args.n, 0)
        assert status == 202, body
        job = json.loads(body)["id"]
        assert wait(conn, job, 300) == "succeeded", job
        for _ in range(5):
            conn.request("GET", f"/v1/jobs/{job}/elements/0/similar")
        report("similar alone", *measure(port, job, args.similar_clients, 0, args.baseline))
        report(
            f"{args.hostile} hostile custom clusters at once",
            *measure(port, job, args.similar_clients, args.hostile),
        )
        report(
            f"{args.hostile} hostile clients back to back",
            *measure(port, job, args.similar_clients, args.hostile, args.duration, True),
        )
    finally:
        stop_service(processes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
