"""The spectrum of P read by the connected components of S (Meyer & Wessell, Sec. 2.4).

A disconnected S makes P = D S D block diagonal, one block per connected
component, each block doubly stochastic: the paper's completely uncoupled
case, whose Perron cluster is one eigenvalue 1 per block, with the constant
vector on the block as its eigenvector.  So P has exactly as many
eigenvalues 1 as S has components, and they are counted from the component
labels rather than computed (an iterative solver cannot resolve an
eigenvalue of multiplicity n: ARPACK stalls, and at n = 10^5 its basis alone
does not fit in memory).  A single element with no similarity to any other
(a singleton component) contributes that 1 and nothing else.

The rest of the spectrum is that of P on the elements of the larger
components with each component's constant vector deflated,
``(I - Π) P (I - Π)`` for ``Π`` the projector on the components' constant
vectors.  When every component is a singleton (a diagonal S such as the
identity) there is nothing left to compute.

No request costs more than :data:`BASIS_BUDGET`: an iterative solver asked
for k̂ eigenvalues of an order-m operator keeps a basis of about ``2 k̂ m``
floats, so at most :func:`affordable` of them are asked for; the caller
reports when that cap, not the spectrum, ended the list.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse.linalg import LinearOperator, eigsh

from .operators import ConsensusOperator

#: Floats an iterative eigensolver's basis may hold (``2 k̂`` vectors of the operator's order).
BASIS_BUDGET = 2**26
#: Up to this order the deflated block is formed densely and solved with ``eigvalsh``.
DENSE_BLOCK_MAX = 1000


@dataclass(frozen=True)
class Components:
    """The connected components of S: their number and each element's label."""

    count: int
    labels: np.ndarray

    @classmethod
    def of(cls, S: ConsensusOperator) -> Components:
        """The components of ``S`` (of P: the scaling does not change them)."""
        count, labels = S.components()
        return cls(int(count), np.asarray(labels, dtype=np.int64))

    @property
    def sizes(self) -> np.ndarray:
        return np.bincount(self.labels, minlength=self.count)

    @property
    def singletons(self) -> int:
        """Components of one element."""
        return int(np.sum(self.sizes == 1))

    @property
    def nontrivial(self) -> int:
        """How many eigenvalues P has besides its components' 1s (``n - count``)."""
        return int(self.labels.size - self.count)


def affordable(order: int) -> int:
    """The most eigenvalues an iterative solver is asked for at this order (all of
    them when the dense matrix fits a quarter of the budget)."""
    order = max(int(order), 1)
    if order * order <= BASIS_BUDGET // 4:
        return order
    return max(2, BASIS_BUDGET // (2 * order))


def nontrivial_eigenvalues(
    P: ConsensusOperator, parts: Components, count: int, few: bool = False
) -> np.ndarray:
    """The ``count`` largest eigenvalues of P past its components' 1s, descending.

    Fewer come back when P has fewer (:attr:`Components.nontrivial`) or when
    more would cost over the budget (:func:`affordable`).

    Parameters
    ----------
    P : ConsensusOperator
        The balanced operator.
    parts : Components
        The components of S.
    count : int
        Eigenvalues wanted.
    few : bool
        A rough figure will do (a null draw's edge): a relative tolerance of 1e-4.
    """
    sizes = parts.sizes
    inside = np.flatnonzero(sizes[parts.labels] > 1)
    m = inside.size
    count = min(int(count), parts.nontrivial)
    if count <= 0 or m == 0:
        return np.empty(0)
    groups = np.unique(parts.labels[inside], return_inverse=True)[1].ravel()
    block_sizes = np.bincount(groups).astype(float)

    def deflate(Y: np.ndarray) -> np.ndarray:
        means = np.zeros((block_sizes.size,) + Y.shape[1:])
        np.add.at(means, groups, Y)
        return Y - (means / block_sizes.reshape((-1,) + (1,) * (Y.ndim - 1)))[groups]

    if m <= DENSE_BLOCK_MAX:
        # P on the elements inside, as block sums with one group each and one for the rest
        labels = np.full(P.n, m, dtype=np.int64)
        labels[inside] = np.arange(m)
        block = P.block_sums(labels)[:m, :m]
        block = deflate(deflate(block).T)
        values = np.linalg.eigvalsh((block + block.T) / 2)
    else:
        count = min(count, affordable(m), m - 2)

        def product(Y: np.ndarray) -> np.ndarray:
            Y = deflate(np.asarray(Y, dtype=float))
            X = np.zeros((P.n,) + Y.shape[1:])
            X[inside] = Y
            return deflate(P.matmat(X)[inside])

        operator = LinearOperator((m, m), matvec=product, matmat=product, dtype=float)
        v0 = deflate(np.random.default_rng(0x5CA).standard_normal(m))
        values = eigsh(
            operator,
            k=count,
            which="LA",
            tol=1e-4 if few else 1e-10,
            v0=v0,
            return_eigenvectors=False,
        )
    return np.sort(values)[::-1][:count]
