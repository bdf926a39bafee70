"""Where a small job's time goes: the baseball job in process, and its Redis commands.

``--in-process`` (the default) runs :func:`sca.run_stages` on the paper's
baseball consensus (data/baseball/S.csv) ``--jobs`` times after a warm-up, on
one BLAS and OpenMP thread, and prints wall and CPU milliseconds a job with
each stage's; ``--profile`` adds the functions that took the most (cProfile).

``--monitor`` starts the service as ``load.py --mode redis`` does (API, two
workers), sends ``--jobs`` baseball jobs one at a time, each followed by its
events to its end, and counts the commands Redis runs on the database of
``--redis-url`` meanwhile (``MONITOR``: the API's, the workers' and Celery's;
not those a script runs inside Redis), the idle traffic (the workers'
polling, measured first) subtracted.

    python scripts/small_jobs.py --jobs 200
    python scripts/small_jobs.py --jobs 50 --profile
    python scripts/small_jobs.py --monitor --jobs 30 --redis-url redis://127.0.0.1:6379/14
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import threading
import time
from collections import Counter

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402
from shared import DATA  # noqa: E402

import sca  # noqa: E402

S = np.loadtxt(DATA / "baseball" / "S.csv", delimiter=",", skiprows=1)


def in_process(jobs: int, profile: bool) -> None:
    import sklearn.cluster  # noqa: F401 - loaded before the first job, as a worker does

    def job() -> dict:
        timings: dict = {}
        sca.run_stages(sca.consensus_operator(S), {"seed": 0}, timings)
        return timings

    for _ in range(5):
        job()
    wall, cpu = time.perf_counter(), time.process_time()
    stages = Counter()
    for _ in range(jobs):
        stages.update(job())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    each = ", ".join(f"{name} {1000 * sec / jobs:.2f}" for name, sec in stages.items())
    wall_ms, cpu_ms = 1000 * wall / jobs, 1000 * cpu / jobs
    print(f"baseball job in process: {wall_ms:.2f} ms wall, {cpu_ms:.2f} ms CPU")
    print(f"stages (ms): {each}")
    if profile:
        profiler = cProfile.Profile()
        profiler.runcall(lambda: [job() for _ in range(jobs)])
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)


def monitor(jobs: int, redis_url: str) -> None:
    import load
    import redis

    db = redis.Redis.from_url(redis_url).connection_pool.connection_kwargs.get("db", 0)
    processes, port = load.start_service("redis", redis_url, 2)
    try:
        conn, rng, stats = load.Conn(port, load.KEYS[0]), np.random.default_rng(1), load.Stats()
        for _ in range(5):  # the workers warm up
            load.small_job(conn, stats, rng)
        seen: list[str] = []
        stop = threading.Event()

        def listen() -> None:
            with redis.Redis.from_url(redis_url).monitor() as feed:
                for command in feed.listen():
                    if stop.is_set():
                        return
                    if command["db"] == db and command["client_address"] != "lua":
                        seen.append(command["command"].split(" ", 1)[0])

        threading.Thread(target=listen, daemon=True).start()
        time.sleep(3)
        idle = len(seen) / 3
        seen.clear()
        start = time.monotonic()
        outcome = Counter(load.small_job(conn, stats, rng) for _ in range(jobs))
        elapsed = time.monotonic() - start
        stop.set()
        counted = Counter(seen)
        per_job = (sum(counted.values()) - idle * elapsed) / jobs
        print(f"{jobs} baseball jobs ({dict(outcome)}): {per_job:.1f} Redis commands a job")
        print(", ".join(f"{name} {count / jobs:.1f}" for name, count in counted.most_common()))
    finally:
        load.stop_service(processes)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--profile", action="store_true", help="the functions that took the most")
    p.add_argument("--monitor", action="store_true", help="Redis commands a job, through the API")
    p.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/14"))
    args = p.parse_args(argv)
    if args.monitor:
        monitor(args.jobs, args.redis_url)
    else:
        in_process(args.jobs, args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
