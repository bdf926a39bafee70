"""The spectrum and the automatic k on many planted clusters, alone or with the iteration.

Planted equal blocks (:mod:`sca.planted`, each run relabelling ``--noise`` of
the elements at random) at ``--n`` elements, ``--runs`` runs, ``--clusters``
blocks: the balancing and the spectral stage with the noise rule, timed wall
and CPU, the k found, the notes (how k was counted) and the peak RSS;
``--stages`` times the whole of ``sca.run_stages`` instead and adds the ARI.
``--before DIR`` runs the same in a second process on the package in DIR
(``git archive <rev> sca | tar -x -C DIR``), alternately, for a comparison
in the same hour.  ``--dask`` gives the stages the label runs as a Dask array
of 8 row chunks on a local cluster of two worker processes, one thread each
(:mod:`sca.chunked_iteration`; CPU time is then the client's alone).

    python scripts/many_clusters.py --clusters 1000
    python scripts/many_clusters.py --clusters 400 --stages --repeats 2 --before /tmp/before
    python scripts/many_clusters.py --n 30000 --runs 30 --clusters 300 --noise 0.25 --stages --dask
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
from shared import peak_rss_gib


def one(n: int, runs: int, blocks: int, noise: float, seed: int, stages: bool, chunked: bool):
    """One planted input through the stages, in this process, after a small warm-up
    (``chunked``: as a Dask array on a local cluster)."""
    if chunked:
        import warnings

        import dask.array as da
        import distributed

        # the iterates' K x b coefficients go with each step's graph
        warnings.filterwarnings("ignore", "Sending large graph")
        with (
            distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
            ) as cluster,
            distributed.Client(cluster),
        ):

            def chunks(labels):
                return da.from_array(labels, chunks=(-(-n // 8), -1)).persist()

            return measure(n, runs, blocks, noise, seed, stages, chunks)
    return measure(n, runs, blocks, noise, seed, stages, lambda labels: labels)


def measure(n, runs, blocks, noise, seed, stages, place) -> dict:
    """:func:`one` on the label runs as ``place`` gives them to the stages."""
    from sklearn.metrics import adjusted_rand_score

    import sca
    from sca.planted import planted_runs, planted_truth

    sca.warm()
    rng = np.random.default_rng(seed)
    truth = planted_truth(n, [1] * blocks, rng)
    dtype = np.uint8 if blocks <= 256 else np.uint16
    labels = place(planted_runs(truth, runs, noise, rng, dtype=dtype))
    S = sca.membership_operator(labels)
    wall, cpu = time.perf_counter(), time.process_time()
    out: dict = {"n": n, "runs": runs, "blocks": blocks}
    if stages:
        timings: dict = {}
        _, spec, result, _ = sca.run_stages(S, {"seed": seed}, timings)
        out["ari"] = float(adjusted_rand_score(truth, np.asarray(result.labels)))
        out["stages"] = {name: round(seconds, 2) for name, seconds in timings.items()}
    else:
        spec = sca.spectrum(sca.balance(S).P, seed=seed)
    out |= {
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "rss_gib": peak_rss_gib(),
        "k": int(spec.k),
        "capped": bool(spec.capped),
        "notes": list(spec.notes),
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--noise", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--stages", action="store_true", help="the whole of sca.run_stages")
    parser.add_argument("--before", help="a folder holding another tree's sca package")
    parser.add_argument("--dask", action="store_true", help="label runs chunked on a local cluster")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        row = one(args.n, args.runs, args.clusters, args.noise, args.seed, args.stages, args.dask)
        print(json.dumps(row))
        return
    trees = [("this tree", None)] + ([("before", args.before)] if args.before else [])
    cmd = [sys.executable, __file__, "--one", "--n", str(args.n), "--runs", str(args.runs)]
    cmd += ["--clusters", str(args.clusters), "--noise", str(args.noise), "--seed", str(args.seed)]
    cmd += ["--stages"] if args.stages else []
    cmd += ["--dask"] if args.dask else []
    for repeat in range(args.repeats):
        for name, path in trees:  # alternately, each in a fresh process
            env = dict(os.environ)
            if path:
                env["PYTHONPATH"] = path
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            row = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"{name:>9} #{repeat}: n = {row['n']:,}, r = {row['runs']}, "
                f"{row['blocks']} blocks: {row['wall']:.1f} s wall, {row['cpu']:.1f} CPU-s, "
                f"peak RSS {row['rss_gib']:.2f} GiB, k = {row['k']}"
                + (f", ARI {row['ari']:.3f} {row['stages']}" if "ari" in row else "")
                + (" (capped)" if row["capped"] else "")
            )
            for note in row["notes"]:
                print(f"           note: {note}")


if __name__ == "__main__":
    main()
