"""The label-matrix operator's products and Gram matrix against the sparse H's.

On the same planted label runs (r runs of 5 blocks), in one process, best of
``--repeats``: ``S X`` through the sparse H (scipy), through the one-hot
matrix of the byte codes ``Hp`` (scipy), through the compiled kernels of
:mod:`sca.operators.kernels` on the byte codes, and through the label operator itself
(the wide codes, column by column, from n = 62,500 at r = 100), for one and
four columns; and the K x K Gram matrix from dense row blocks of H against
the pair counts of combined codes.

    python scripts/label_kernels.py --n 100000
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import scipy.sparse as sp

import sca
from sca.inputs import membership_factors
from sca.operators import kernels
from sca.planted import planted_runs, planted_truth


def best(f, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    labels = planted_runs(planted_truth(args.n, [1] * 5, rng), args.runs, 0.5, rng, dtype=np.uint8)
    H, groups = membership_factors(labels)
    d = rng.random(args.n) + 0.5
    sparse = sca.FactoredOperator(H, d, groups)
    op = sca.membership_operator(labels).scaled(d)
    plain = op.unscaled()
    _, _, binoff, M, packed = op.packing
    indices = (packed.T.astype(np.int64) + binoff[:-1]).ravel()
    Hp = sp.csr_array(
        (np.ones(indices.size), indices, np.arange(0, indices.size + 1, packed.shape[0])),
        shape=(args.n, int(binoff[-1])),
    )
    print(
        f"n = {args.n}, r = {args.runs}: H {H.nnz} entries, {packed.shape[0]} packed "
        f"codes per element; best of {args.repeats}, seconds"
    )
    for cols in (1, 4):
        X = rng.random((args.n, cols))
        forms = {
            "sparse H": lambda: H @ (H.T @ X),
            "packed Hp": lambda: Hp @ (M @ (M.T @ (Hp.T @ X))),
            "byte kernels": lambda: kernels.mat(
                packed, binoff, M @ (M.T @ kernels.rmat(packed, binoff, X))
            ),
            "operator": lambda: plain.matmat(X),
        }
        figures = {name: best(f, args.repeats) for name, f in forms.items()}
        print(
            f"S X, {cols} column(s): "
            + ", ".join(f"{k} {v:.4f}" for k, v in figures.items())
            + f"; sparse H / operator = {figures['sparse H'] / figures['operator']:.1f}x"
        )
    dense = best(lambda: sca.FactoredOperator.gram(sparse), 1)
    counted = best(lambda: op.gram(), 1)
    assert np.allclose(op.gram(), sparse.gram(), rtol=1e-10)
    print(
        f"Gram K x K: dense row blocks of H {dense:.3f}, pair counts {counted:.3f}; "
        f"ratio {dense / counted:.1f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
