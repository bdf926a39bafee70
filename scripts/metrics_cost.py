"""What ``GET /metrics`` costs as jobs accumulate, and what one observation costs.

Fills a Redis database (``--redis``, under a key prefix of its own, deleted
afterwards) with N job records and, per job, the artifacts a finished job
keeps (input, P, balance, spectrum, result, ids; a few hundred bytes each),
then times a whole scrape (jobs by status, artifact bytes, queue, both
histograms) and one histogram observation (what a stage or a query adds),
medians of ``--repeats``.

    python scripts/metrics_cost.py --redis redis://127.0.0.1:6379/0 --jobs 1000 10000 100000
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

from sca_service.metrics import StoreCollector
from sca_worker import metrics
from sca_worker.store import Store

KINDS = ("input", "P", "balance", "spectrum", "result", "ids")


def fill(store: Store, count: int, start: int) -> None:
    with store.client.pipeline(transaction=False) as pipe:
        for i in range(start, count):
            status = metrics.STATUSES[i % len(metrics.STATUSES)]
            pipe.hset(store.key(f"job:{i}"), mapping={"status": f'"{status}"', "n": "6"})
            for kind in KINDS:
                pipe.set(store.key(f"{kind}:{i}"), b"x" * 300)
            if i % 1000 == 999:
                pipe.execute()
        pipe.execute()


def timed(action, repeats: int) -> float:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    store = Store.from_url(args.redis, prefix=f"sca-metrics-cost-{uuid.uuid4().hex[:8]}:")
    collector = StoreCollector(store, queue=None)
    print("| jobs | keys | scrape s (median) | per 1000 jobs ms |")
    print("| ---: | ---: | ---: | ---: |")
    done = 0
    try:
        for count in sorted(args.jobs):
            fill(store, count, done)
            done = count

            def scrape():
                collector._at = -1e9  # no reuse: a fresh scrape each time
                list(collector.collect())

            seconds = timed(scrape, args.repeats)
            keys = count * (1 + len(KINDS))
            print(f"| {count} | {keys} | {seconds:.3f} | {1000 * seconds / count * 1000:.1f} |")
        observe = timed(lambda: metrics.observe(store, "query", "similar", 0.004), 200)
        print(
            f"\none observation (a MULTI of three HINCRBY/HINCRBYFLOAT): "
            f"{observe * 1000:.3f} ms median of 200"
        )
    finally:
        for key in store.client.scan_iter(match=store.prefix + "*", count=1000):
            store.client.delete(key)


if __name__ == "__main__":
    main()
