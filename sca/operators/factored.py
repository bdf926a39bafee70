"""The factored consensus operator ``S = H H^T`` (Meyer & Wessell, Sec. 1 and 3).

``H`` is the ``n x K`` 0/1 membership matrix of an ensemble (``K`` clusters
over all runs) or the neighbourhood matrix of the shared-nearest-neighbour
measure.  S is never formed: a product costs ``O(nnz H)``, and the nonzero
eigenvalues of ``P`` come from the ``K x K`` Gram matrix.

:class:`FactorOperator` holds what any such factor shares (its spectrum from
the Gram matrix: :mod:`sca.operators.gram`); H itself is held as a sparse
matrix by :class:`FactoredOperator`, and read off the label runs by
:class:`sca.operators.labels.LabelOperator`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from .base import ConsensusOperator
from .gram import GRAM_MAX_K, GramSpectrum

# Imported from here before the Gram matrix's spectrum had a module of its own.
__all__ = ["GRAM_MAX_K", "SMALL_K_RATIO", "FactorOperator", "FactoredOperator"]

#: K counts as small beside n from n = SMALL_K_RATIO * K: the iteration then runs
#: on K-vectors (a K x K product per step in place of two passes over the
#: elements), and a label matrix counts G beyond GRAM_MAX_K.
SMALL_K_RATIO = 4
_CHUNK_ROWS = 65536
_DENSE_EDGE_MAX_K = 4096


class FactorOperator(GramSpectrum, ConsensusOperator):
    """``S = H H^T`` for an ``n x K`` factor ``H``; S itself is never formed.

    The nonzero eigenvalues of ``P = (DH)(DH)^T`` are those of the ``K x K``
    Gram matrix ``(DH)^T (DH)``, which is built in row blocks of dense
    products (a single large ``A @ A.T`` is both wasteful and, with some
    multithreaded BLAS builds, unsafe).  Subclasses say how H is held: they
    provide ``H`` (a sparse ``n x K`` array, used by every method not
    overridden), :meth:`null_draw`, :meth:`_with_scale`, :meth:`_state` and
    :meth:`from_state`.

    Parameters
    ----------
    n : int
        The number of elements (rows of H).
    scale : ndarray of shape (n,), optional
        The diagonal of ``D``; None for S itself.
    groups : array_like of int, optional
        Column offsets of the runs when H holds label runs.

    Attributes
    ----------
    H : scipy.sparse.csr_array of shape (n, K)
        The factor.
    groups : ndarray of int or None
        Run j owns columns ``groups[j]:groups[j+1]`` of H; None for other
        factors (shared nearest neighbours).
    """

    def __init__(self, n: int, scale=None, groups=None):
        super().__init__(n, scale)
        self.groups = None if groups is None else np.asarray(groups, dtype=np.int64)

    def _left(self, X):
        """``H^T X``."""
        return self.H.T @ X

    def _right(self, Z):
        """``H Z``."""
        return self.H @ Z

    def _product(self, X):
        return self._right(self._left(X))

    def factor_transpose(self, X) -> np.ndarray:
        """The product ``(DH)^T X``: X's entries summed per cluster, each weighted by its ``d_i``.

        Parameters
        ----------
        X : array_like of shape (n,) or (n, s)
            A vector or ``s`` columns over the elements.

        Returns
        -------
        ndarray of shape (K,) or (K, s)
            ``(DH)^T X``.
        """
        X = np.asarray(X, dtype=float)
        if self.scale is not None:
            X = (self.scale if X.ndim == 1 else self.scale[:, None]) * X
        return self._left(X)

    def factor(self, Z) -> np.ndarray:
        """The product ``(DH) Z``: each element's clusters' entries summed, times ``d_i``.

        Parameters
        ----------
        Z : array_like of shape (K,) or (K, s)
            A vector or ``s`` columns over the clusters of H.

        Returns
        -------
        ndarray of shape (n,) or (n, s)
            ``(DH) Z``.
        """
        Y = self._right(np.asarray(Z, dtype=float))
        if self.scale is not None:
            Y *= self.scale if Y.ndim == 1 else self.scale[:, None]
        return Y

    @property
    def H_by_cluster(self):
        """``H^T`` as a CSR array (``K x n``): each cluster's elements.

        Its arrays are those of H's CSC form.
        """
        return self.H.T.tocsr()

    @property
    def small_k(self) -> bool:
        """Whether K is small beside n (:data:`SMALL_K_RATIO`)."""
        return SMALL_K_RATIO * self.n_clusters <= self.n

    def factor_gram(self):
        """The Gram matrix ``(DH)^T (DH)`` once the spectrum has formed it, if K is small.

        Returns
        -------
        ndarray of shape (K, K) or None
            The Gram matrix when K is small beside n (:attr:`small_k`) and it is
            at hand, else None.
        """
        return self._gram if self.small_k else None

    def _raw_diagonal(self):
        return np.asarray(self.H.multiply(self.H).sum(axis=1)).ravel()

    def _raw_entries(self, rows, cols):
        return np.asarray(self.H[rows].multiply(self.H[cols]).sum(axis=1)).ravel()

    def within_sums(self, labels):
        """For each i, ``sum_j (D S D)_ij`` over the j in i's cluster, through H.

        Parameters
        ----------
        labels : array_like of int, shape (n,)
            Each element's cluster, ``0 .. c - 1``.

        Returns
        -------
        ndarray of shape (n,)
            Each element's row sum of P within its own cluster.
        """
        labels = np.asarray(labels, dtype=np.int64)
        s = np.ones(self.n) if self.scale is None else self.scale
        E = sp.csr_array((s, (np.arange(self.n), labels)), shape=(self.n, int(labels.max()) + 1))
        M = (self.H.T @ E).toarray()  # K x k: scaled cluster counts per column of H
        out = np.empty(self.n)
        for lo in range(0, self.n, _CHUNK_ROWS):
            block = self.H[lo : lo + _CHUNK_ROWS]
            rows = np.repeat(np.arange(block.shape[0]), np.diff(block.indptr))
            values = block.data * M[block.indices, labels[lo : lo + _CHUNK_ROWS][rows]]
            out[lo : lo + block.shape[0]] = np.bincount(rows, values, minlength=block.shape[0])
        return out * s

    def _sandwich(self, B):
        A = B.T @ self.H  # c x K: B^T S B = A A^T
        return np.asarray((A @ A.T).toarray())

    def _pattern(self):
        """Cluster graph: clusters a, b joined when an element lies in both.

        Every element joins its first cluster to each of its others, so the
        components of this K-node graph, read at each element's first
        cluster, are those of ``H H^T`` -- found without forming it, in
        chunks of rows so the edge list stays small.
        """
        H, K = self.H, self.n_clusters
        first = H.indices[H.indptr[:-1]].astype(np.int64)
        edges = set() if K > _DENSE_EDGE_MAX_K else np.zeros(K * K, dtype=bool)
        for start in range(0, self.n, _CHUNK_ROWS):
            lo, hi = H.indptr[start], H.indptr[min(start + _CHUNK_ROWS, self.n)]
            rows = np.repeat(
                first[start : start + _CHUNK_ROWS],
                np.diff(H.indptr[start : start + _CHUNK_ROWS + 1]),
            )
            codes = rows * K + H.indices[lo:hi]
            if isinstance(edges, set):
                edges.update(np.unique(codes).tolist())
            else:
                edges[codes] = True
        pairs = np.flatnonzero(edges) if not isinstance(edges, set) else np.array(sorted(edges))
        a, b = np.divmod(pairs, K)
        return sp.csr_array((np.ones(a.size), (a, b)), shape=(K, K)), first

    def _components(self):
        """:meth:`components`, found on the clusters' graph: connected
        components of the graph of ``H H^T``.

        Returns
        -------
        count : int
            The number of components.
        labels : ndarray of int, shape (n,)
            Each element's component.
        """
        graph, first = self._pattern()
        _, labels = csgraph.connected_components(graph, directed=False)
        count_labels = np.unique(labels[first], return_inverse=True)
        return int(count_labels[0].size), count_labels[1].ravel()


class FactoredOperator(FactorOperator):
    """``S = H H^T`` with ``H`` held as a sparse ``n x K`` matrix.

    Parameters
    ----------
    H : sparse array or matrix of shape (n, K)
        The membership matrix of an ensemble (one column per cluster of each
        run) or the neighbourhood matrix of shared nearest neighbours.
    scale : ndarray of shape (n,), optional
        The diagonal of ``D``; None for S itself.
    groups : array_like of int, optional
        Column offsets of the runs when H holds label runs (run j owns
        columns ``groups[j]:groups[j+1]``); None for other factors.
    """

    kind = "factored"

    def __init__(self, H, scale=None, groups=None):
        H = sp.csr_array(H)
        super().__init__(H.shape[0], scale, groups)
        self.H = H

    def _with_scale(self, scale):
        return FactoredOperator(self.H, scale, self.groups)

    def null_draw(self, rng):
        """One draw of the null model of H: the same memberships, placed at random.

        Label runs: each run's labels permuted over the elements it clustered
        (every run keeps its cluster sizes, co-membership across runs is lost).
        Other factors: each row's entries moved to random columns (every element
        keeps its number of memberships, e.g. random neighbourhoods of the same size).

        Parameters
        ----------
        rng : numpy.random.Generator
            The source of the permutations.

        Returns
        -------
        FactoredOperator
            The unscaled null operator, with the same ``groups``.
        """
        H, r = self.H, None if self.groups is None else self.groups.size - 1
        if r is not None and H.nnz == self.n * r and np.all(np.diff(H.indptr) == r):
            # Every element in every run: row i's j-th entry is its run-j label.  A
            # random order of the elements, then each run rotated by its own random
            # offset: as good as r independent permutations, and a quarter of the work.
            codes = H.indices.reshape(self.n, r)[rng.permutation(self.n)]
            for j, shift in enumerate(rng.integers(0, self.n, r)):
                codes[:, j] = np.roll(codes[:, j], shift)
            data = H.data if np.all(H.data == 1) else np.ones(H.nnz)
            null = sp.csr_array((data, codes.ravel(), H.indptr), shape=H.shape)
            return FactoredOperator(null, groups=self.groups)
        H = H.tocoo()
        rows, cols = H.row.astype(np.int64), H.col.astype(np.int64)
        if r is None:
            cols = rng.integers(0, self.n_clusters, cols.size)
        else:
            run = np.searchsorted(self.groups, cols, side="right") - 1
            order = np.argsort(run, kind="stable")
            starts = np.searchsorted(run[order], np.arange(r + 1))
            for lo, hi in zip(starts[:-1], starts[1:]):
                block = order[lo:hi]
                rows[block] = rng.permutation(rows[block])
        null = sp.csr_array((np.ones(rows.size), (rows, cols)), shape=self.H.shape)
        null.data[:] = 1.0  # an entry drawn twice counts once
        return FactoredOperator(null, groups=self.groups)

    def _state(self):
        arrays = {
            "indices": self.H.indices,
            "indptr": self.H.indptr,
            "K": np.array(self.n_clusters),
        }
        if self.groups is not None:
            arrays["groups"] = self.groups
        if not np.all(self.H.data == 1):
            arrays["data"] = self.H.data
        return arrays

    @classmethod
    def from_state(cls, state):
        """The factored operator that :meth:`state` returned ``state`` for.

        Parameters
        ----------
        state : dict of str to ndarray
            The arrays of :meth:`state`: ``n``, ``K``, the CSR ``indices`` and
            ``indptr`` of H, and, when present, ``data``, ``groups`` and ``scale``.

        Returns
        -------
        FactoredOperator
            The operator, scaled as it was.
        """
        indices, indptr = state["indices"], state["indptr"]
        data = state.get("data")
        if data is None:
            data = np.ones(indices.size)
        H = sp.csr_array((data, indices, indptr), shape=(int(state["n"]), int(state["K"])))
        return cls(H, state.get("scale"), state.get("groups"))
