"""Cholesky QR: a tall block's columns made orthonormal through its small Gram matrix.

The iteration's block of iterates (:mod:`sca.iteration`), its K-vector form
(in the inner product of G) and the pivot split's sample
(:class:`sca.splits.PivotSplit`) are made orthonormal here: a ``b x b`` Gram
matrix and its Cholesky factor R, then ``Y R^-1``, several times faster than
Householder QR on a tall block (Yamamoto et al., ETNA 44, 2015).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular

from .operators import threads

#: A block whose Gram matrix is within this of the identity after one pass of
#: Cholesky QR takes no second: k-means reads its rows, and the next step
#: orthonormalises afresh, so what is left does not accumulate.  One pass leaves
#: about ``u cond(Y^T Y)`` (u the unit roundoff; Yamamoto et al., ETNA 44, 2015),
#: so the condition of the Gram matrix, not a second one, decides.
ORTHONORMAL_TOL = 1e-12


def orthonormal(Y: np.ndarray) -> np.ndarray:
    """Y's columns made an orthonormal basis of their span, in place, by Cholesky
    QR (a small Gram matrix, then ``Y R^-1``; several times faster than
    Householder QR on a tall block), repeated once where the first pass leaves
    them further than :data:`ORTHONORMAL_TOL` from orthonormal (the Gram
    matrix's condition says so beforehand), and by Householder QR where Y is
    nearly rank-deficient; returns Y's column norms."""
    gram = threads.gram(Y)
    norms = np.sqrt(np.maximum(np.diag(gram), 0.0))
    for _ in range(2):
        inverse = inverse_cholesky(gram)
        if inverse is None:
            Y[:] = np.linalg.qr(Y)[0]
            return norms
        threads.times_triangular(Y, inverse)
        values = np.linalg.eigvalsh(gram)
        if values[0] > 0 and np.finfo(float).eps * values[-1] / values[0] <= ORTHONORMAL_TOL:
            break
        gram = threads.gram(Y)
    return norms


def inverse_cholesky(gram: np.ndarray) -> np.ndarray | None:
    """``R^-1`` for the Cholesky factor ``R^T R = gram``: ``Y R^-1`` has orthonormal
    columns for ``gram = Y^T Y``; None where gram is not (numerically) positive
    definite.  The product with the triangular ``R^-1`` is cut over the cores by
    rows, as a triangular solve is not."""
    try:
        R = np.linalg.cholesky(gram).T
    except np.linalg.LinAlgError:
        return None
    inverse = solve_triangular(R, np.eye(R.shape[0]), check_finite=False)
    return inverse if np.all(np.isfinite(inverse)) else None


def cholesky_qr(Y: np.ndarray, G: np.ndarray) -> np.ndarray | None:
    """``Y R^-1`` with columns orthonormal in the inner product of G, by Cholesky
    QR twice; None where Y is (nearly) rank-deficient."""
    Q = Y
    try:
        for _ in range(2):
            R = np.linalg.cholesky(threads.matmul(Q.T, G) @ Q).T
            # Q R^-1 as the triangular solve R^T X = Q^T (twice as fast as forming R^-1)
            Q = solve_triangular(R, Q.T, trans="T").T
    except np.linalg.LinAlgError:
        return None
    return Q if np.all(np.isfinite(Q)) else None
