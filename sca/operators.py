"""The consensus operator: one interface over dense, sparse and factored S.

Every stage (balancing, spectrum, iteration, custom clustering, diagnostics)
talks to S, and later to P = D S D, only through :class:`ConsensusOperator`.
Three implementations sit behind it:

* :class:`DenseOperator` -- an ``n x n`` array (a user's similarity matrix);
* :class:`SparseOperator` -- a ``scipy.sparse`` matrix;
* :class:`FactoredOperator` -- ``S = H H^T`` with ``H`` the sparse ``n x K``
  0/1 membership matrix of an ensemble (``K`` clusters over all runs), or the
  neighbourhood matrix of the shared-nearest-neighbour measure.  ``S`` is never
  formed: a product costs ``O(nnz H)``.

The diagonal scaling ``D`` of Sinkhorn-Knopp is kept apart from the matrix, so
``P = D S D`` costs no extra copy of ``S`` (Meyer & Wessell, Sec. 2.3).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph
from scipy.sparse.linalg import eigsh

#: Below this order a spectrum is computed densely with ``eigvalsh``.
DENSE_SPECTRUM_MAX_N = 1000
#: Largest K for which the K x K Gram matrix of a factored operator is formed.
GRAM_MAX_K = 2048
_GRAM_BLOCK_ROWS = 4096
_CHUNK_ROWS = 65536
#: Entries of a dense n x step block formed at once by the generic B^T S B.
_SANDWICH_ENTRIES = 8_000_000
_DENSE_EDGE_MAX_K = 4096
#: Up to this order a dense null draw permutes the upper triangle exactly.
_EXACT_SHUFFLE_MAX_N = 2000


class ConsensusOperator:
    """Symmetric nonnegative ``n x n`` operator ``D S D`` (``D = I`` unless scaled).

    Subclasses implement :meth:`_product` (``S @ X``), :meth:`_raw_diagonal`,
    :meth:`_pattern` and :meth:`_state`; everything else is shared.
    """

    kind = "abstract"

    def __init__(self, n: int, scale: np.ndarray | None = None):
        self.n = int(n)
        self.scale = None if scale is None else np.asarray(scale, dtype=float)

    # -- what each form provides -------------------------------------------
    def _product(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _raw_diagonal(self) -> np.ndarray:
        raise NotImplementedError

    def _pattern(self) -> sp.sparray:
        """A sparse matrix whose graph has the connectivity of S."""
        raise NotImplementedError

    def _state(self) -> dict:
        raise NotImplementedError

    def _with_scale(self, scale):
        raise NotImplementedError

    def _all_eigenvalues(self) -> np.ndarray:
        """Every eigenvalue of ``D S D`` (small forms only)."""
        return np.linalg.eigvalsh(self.to_dense())

    def null_draw(self, rng: np.random.Generator) -> "ConsensusOperator":
        """One draw of S's null model: same kind of entries, no cluster structure.

        Returns an unscaled operator of the same form; :mod:`sca.null` balances
        it and reads its largest nontrivial eigenvalue (the noise floor).
        """
        raise NotImplementedError

    @property
    def full_spectrum_cheap(self) -> bool:
        """Whether every eigenvalue costs no more than a few products (small or low-rank forms)."""
        return self.n <= DENSE_SPECTRUM_MAX_N

    # -- shared behaviour ---------------------------------------------------
    def matmat(self, X: np.ndarray) -> np.ndarray:
        """``(D S D) X`` for ``X`` of shape ``(n,)`` or ``(n, s)``.

        P is symmetric, so this is also the row-vector product ``x^T P`` of the
        paper's evolution equation ``x_t^T = x_{t-1}^T P`` (Sec. 2.1, Eq. (2)).
        """
        X = np.asarray(X, dtype=float)
        if self.scale is None:
            return self._product(X)
        s = self.scale if X.ndim == 1 else self.scale[:, None]
        return s * self._product(s * X)

    def row_sums(self) -> np.ndarray:
        return self.matmat(np.ones(self.n))

    def diagonal(self) -> np.ndarray:
        diag = self._raw_diagonal()
        return diag if self.scale is None else diag * self.scale**2

    def scaled(self, d: np.ndarray) -> "ConsensusOperator":
        """The operator ``D S D`` for ``D = diag(d)`` (composed with any scale)."""
        d = np.asarray(d, dtype=float)
        return self._with_scale(d if self.scale is None else self.scale * d)

    def unscaled(self) -> "ConsensusOperator":
        """S itself (``D = I``), sharing this operator's arrays."""
        return self._with_scale(None)

    def components(self) -> tuple[int, np.ndarray]:
        """Connected components of the graph of S (``scipy.sparse.csgraph``)."""
        count, labels = csgraph.connected_components(self._pattern(), directed=False)
        return int(count), labels[: self.n]

    def block_sums(self, labels: np.ndarray) -> np.ndarray:
        """``c x c`` matrix of ``e_a^T (D S D) e_b`` over groups ``a, b`` of ``labels``.

        The scaling is folded into the sparse indicator ``B = D E``, so each
        form only computes ``B^T S B`` (:meth:`_sandwich`), never S itself.
        """
        labels = np.asarray(labels, dtype=np.int64)
        count = int(labels.max()) + 1
        weights = np.ones(self.n) if self.scale is None else self.scale
        B = sp.csr_array((weights, (np.arange(self.n), labels)), shape=(self.n, count))
        return self._sandwich(B)

    def within_sums(self, labels: np.ndarray) -> np.ndarray:
        """For each i, ``sum_j (D S D)_ij`` over the j with ``labels[j] == labels[i]``.

        For a doubly stochastic P this is the probability that one step of the
        walk from i stays in i's cluster.
        """
        labels = np.asarray(labels, dtype=np.int64)
        step = max(1, _SANDWICH_ENTRIES // self.n)
        out = np.zeros(self.n)
        for start in range(0, int(labels.max()) + 1, step):
            inside = (labels >= start) & (labels < start + step)
            E = np.zeros((self.n, step))
            E[np.flatnonzero(inside), labels[inside] - start] = 1.0
            Y = self.matmat(E)
            out[inside] = Y[np.flatnonzero(inside), labels[inside] - start]
        return out

    def _sandwich(self, B: sp.csr_array) -> np.ndarray:
        """``B^T S B`` for a sparse ``n x c`` B, a few columns of products at a time."""
        c = B.shape[1]
        step = max(1, _SANDWICH_ENTRIES // self.n)
        out = np.empty((c, c))
        for start in range(0, c, step):
            out[:, start:start + step] = B.T @ self._product(B[:, start:start + step].toarray())
        return out

    def entries(self, rows, cols) -> np.ndarray:
        """The entries ``(D S D)_ij`` for index arrays ``rows`` and ``cols``."""
        rows, cols = np.asarray(rows), np.asarray(cols)
        values = np.asarray(self._raw_entries(rows, cols), dtype=float)
        return values if self.scale is None else values * self.scale[rows] * self.scale[cols]

    def _raw_entries(self, rows, cols):
        raise NotImplementedError

    def eigenvalues(self, k_hat: int | None = None, few: bool = False) -> np.ndarray:
        """The ``k_hat`` largest eigenvalues of ``D S D``, descending (all if None).

        ``few=True`` says a rough figure will do (a null draw's edge): the
        iterative solver then stops at a relative tolerance of 1e-4.
        Small operators are solved densely; large ones with ``eigsh`` using
        ``which="LA"`` (a general similarity matrix need not be semidefinite,
        so "largest magnitude" could pick negative eigenvalues) and a modest
        tolerance (machine precision spends most work on the bulk near zero).
        """
        k_hat = self.n if k_hat is None else min(int(k_hat), self.n)
        if self.n <= DENSE_SPECTRUM_MAX_N or k_hat >= self.n - 1:
            values = self._all_eigenvalues()
        else:
            values = self._top_eigenvalues(k_hat, 1e-4 if few else 1e-10)
        return np.sort(values)[::-1][:k_hat]

    def _top_eigenvalues(self, k_hat: int, tol: float = 1e-10) -> np.ndarray:
        linop = sp.linalg.LinearOperator(
            (self.n, self.n), matvec=self.matmat, matmat=self.matmat, dtype=float
        )
        v0 = np.full(self.n, 1.0 / np.sqrt(self.n))
        return eigsh(linop, k=k_hat, which="LA", tol=tol, v0=v0,
                     return_eigenvectors=False)

    def to_dense(self) -> np.ndarray:
        """Materialise ``D S D`` (for small n: display and tests only)."""
        return self.matmat(np.eye(self.n))

    def state(self) -> dict[str, np.ndarray]:
        """Plain numeric arrays that :func:`operator_from_state` restores."""
        arrays = {"kind": np.array(self.kind), "n": np.array(self.n)}
        if self.scale is not None:
            arrays["scale"] = self.scale
        arrays.update(self._state())
        return arrays

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.state().values())

    def __repr__(self):
        scaled = "" if self.scale is None else ", scaled"
        return f"{type(self).__name__}(n={self.n}{scaled})"


class DenseOperator(ConsensusOperator):
    """S held as a dense array."""

    kind = "dense"

    def __init__(self, S: np.ndarray, scale=None):
        super().__init__(S.shape[0], scale)
        self.S = np.asarray(S, dtype=float)

    def _product(self, X):
        return self.S @ X

    def _raw_diagonal(self):
        return np.diag(self.S).copy()

    def _raw_entries(self, rows, cols):
        return self.S[rows, cols]

    def _pattern(self):
        return sp.csr_array(self.S != 0)

    def _with_scale(self, scale):
        return DenseOperator(self.S, scale)

    def null_draw(self, rng):
        """Off-diagonal entries shuffled symmetrically; the diagonal kept.

        Keeps the distribution of similarities, destroys which pairs hold them.
        """
        return DenseOperator(_shuffled_symmetric(self.S, rng))

    def _state(self):
        return {"S": self.S}

    def to_dense(self):
        s = np.ones(self.n) if self.scale is None else self.scale
        return s[:, None] * self.S * s[None, :]


class SparseOperator(ConsensusOperator):
    """S held as a ``scipy.sparse`` CSR matrix."""

    kind = "sparse"

    def __init__(self, S, scale=None):
        super().__init__(S.shape[0], scale)
        self.S = sp.csr_array(S, dtype=float)

    def _product(self, X):
        return self.S @ X

    def _raw_diagonal(self):
        return self.S.diagonal()

    def _raw_entries(self, rows, cols):
        return np.asarray(self.S[rows, cols]).ravel()

    def _sandwich(self, B):
        return np.asarray((B.T @ self.S @ B).toarray())

    def _pattern(self):
        return self.S

    def _with_scale(self, scale):
        return SparseOperator(self.S, scale)

    def null_draw(self, rng):
        """Off-diagonal entries shuffled symmetrically (sparse: rows and columns
        relabelled independently, upper triangle mirrored); the diagonal kept."""
        return SparseOperator(_shuffled_symmetric(self.S, rng))

    def _state(self):
        return {"data": self.S.data, "indices": self.S.indices, "indptr": self.S.indptr}


class FactoredOperator(ConsensusOperator):
    """``S = H H^T`` with ``H`` sparse ``n x K``; S itself is never formed.

    The nonzero eigenvalues of ``P = (DH)(DH)^T`` are those of the ``K x K``
    Gram matrix ``(DH)^T (DH)``, which is built in row blocks of dense
    products (a single large ``A @ A.T`` is both wasteful and, with some
    multithreaded BLAS builds, unsafe).
    """

    kind = "factored"

    def __init__(self, H, scale=None, groups=None):
        H = sp.csr_array(H)
        super().__init__(H.shape[0], scale)
        self.H = H
        #: Column offsets of the runs (run j owns columns groups[j]:groups[j+1]) when
        #: H holds label runs; None for other factors (shared nearest neighbours).
        self.groups = None if groups is None else np.asarray(groups, dtype=np.int64)

    @property
    def n_clusters(self) -> int:
        return self.H.shape[1]

    def _product(self, X):
        return self.H @ (self.H.T @ X)

    def _raw_diagonal(self):
        return np.asarray(self.H.multiply(self.H).sum(axis=1)).ravel()

    def _raw_entries(self, rows, cols):
        return np.asarray(self.H[rows].multiply(self.H[cols]).sum(axis=1)).ravel()

    def within_sums(self, labels):
        labels = np.asarray(labels, dtype=np.int64)
        s = np.ones(self.n) if self.scale is None else self.scale
        E = sp.csr_array((s, (np.arange(self.n), labels)), shape=(self.n, int(labels.max()) + 1))
        M = (self.H.T @ E).toarray()  # K x k: scaled cluster counts per column of H
        out = np.empty(self.n)
        for lo in range(0, self.n, _CHUNK_ROWS):
            block = self.H[lo:lo + _CHUNK_ROWS]
            rows = np.repeat(np.arange(block.shape[0]), np.diff(block.indptr))
            values = block.data * M[block.indices, labels[lo:lo + _CHUNK_ROWS][rows]]
            out[lo:lo + block.shape[0]] = np.bincount(rows, values, minlength=block.shape[0])
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
            rows = np.repeat(first[start:start + _CHUNK_ROWS],
                             np.diff(H.indptr[start:start + _CHUNK_ROWS + 1]))
            codes = rows * K + H.indices[lo:hi]
            if isinstance(edges, set):
                edges.update(np.unique(codes).tolist())
            else:
                edges[codes] = True
        pairs = np.flatnonzero(edges) if not isinstance(edges, set) else np.array(sorted(edges))
        a, b = np.divmod(pairs, K)
        return sp.csr_array((np.ones(a.size), (a, b)), shape=(K, K)), first

    def components(self):
        graph, first = self._pattern()
        _, labels = csgraph.connected_components(graph, directed=False)
        count_labels = np.unique(labels[first], return_inverse=True)
        return int(count_labels[0].size), count_labels[1].ravel()

    def _with_scale(self, scale):
        return FactoredOperator(self.H, scale, self.groups)

    @property
    def full_spectrum_cheap(self):
        return self.n_clusters <= GRAM_MAX_K or self.n <= DENSE_SPECTRUM_MAX_N

    def null_draw(self, rng):
        """Label runs: each run's labels permuted over the elements it clustered
        (every run keeps its cluster sizes, co-membership across runs is lost).
        Other factors: each row's entries moved to random columns (every element
        keeps its number of memberships, e.g. random neighbourhoods of the same size).
        """
        H, r = self.H, None if self.groups is None else self.groups.size - 1
        if r is not None and H.nnz == self.n * r and np.all(np.diff(H.indptr) == r):
            # Every element in every run: row i's j-th entry is its run-j label.  A
            # random order of the elements, then each run rotated by its own random
            # offset: as good as r independent permutations, and a quarter of the work.
            codes = H.indices.reshape(self.n, r)[rng.permutation(self.n)]
            for j, shift in enumerate(rng.integers(0, self.n, r)):
                codes[:, j] = np.roll(codes[:, j], shift)
            null = sp.csr_array((np.ones(H.nnz), codes.ravel(), H.indptr), shape=H.shape)
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
        arrays = {"indices": self.H.indices, "indptr": self.H.indptr,
                  "K": np.array(self.n_clusters)}
        if self.groups is not None:
            arrays["groups"] = self.groups
        if not np.all(self.H.data == 1):
            arrays["data"] = self.H.data
        return arrays

    def gram(self) -> np.ndarray:
        """The ``K x K`` matrix ``(DH)^T (DH)``, accumulated in row blocks."""
        K = self.n_clusters
        G = np.zeros((K, K))
        for start in range(0, self.n, _GRAM_BLOCK_ROWS):
            block = self.H[start:start + _GRAM_BLOCK_ROWS].toarray()
            if self.scale is not None:
                block *= self.scale[start:start + _GRAM_BLOCK_ROWS, None]
            G += block.T @ block
        return G

    def eigenvalues(self, k_hat=None, few=False):
        if self.n_clusters > GRAM_MAX_K:
            return super().eigenvalues(k_hat, few)
        k_hat = self.n if k_hat is None else min(int(k_hat), self.n)
        gram = self.gram()
        if few and k_hat < self.n_clusters - 1 and self.n_clusters > DENSE_SPECTRUM_MAX_N:
            values = eigsh(gram, k=k_hat, which="LA", tol=1e-4, return_eigenvectors=False)
        else:
            values = np.linalg.eigvalsh(gram)
        values = np.sort(values)[::-1]
        # P has rank at most K: the remaining n - K eigenvalues are zero.
        values = np.concatenate([values, np.zeros(max(0, k_hat - values.size))])
        return values[:k_hat]


def _shuffled_symmetric(S, rng: np.random.Generator):
    """S with its off-diagonal entries placed at random, symmetric, diagonal kept.

    Small dense S: the upper-triangle entries are permuted exactly.  Larger or
    sparse S: rows and columns are relabelled by two independent permutations
    and the upper triangle of the result is mirrored, which moves every entry
    to a random pair in O(n^2) dense or O(nnz) sparse work.
    """
    n = S.shape[0]
    if sp.issparse(S):
        M = sp.csr_array(S)[rng.permutation(n)][:, rng.permutation(n)]
        upper = sp.triu(M, k=1, format="csr")
        off = upper + upper.T
        return sp.csr_array(off + sp.diags_array(S.diagonal()))
    if n <= _EXACT_SHUFFLE_MAX_N:
        iu = np.triu_indices(n, 1)
        out = np.zeros_like(S)
        out[iu] = rng.permutation(S[iu])
    else:
        out = np.triu(S[rng.permutation(n)][:, rng.permutation(n)], 1)
    out += out.T
    out[np.diag_indices(n)] = np.diag(S)
    return out


def operator_from_state(state: dict) -> ConsensusOperator:
    """Rebuild an operator from :meth:`ConsensusOperator.state`."""
    kind = str(state["kind"])
    n = int(state["n"])
    scale = state.get("scale")
    if kind == "dense":
        return DenseOperator(state["S"], scale)
    if kind == "sparse":
        S = sp.csr_array((state["data"], state["indices"], state["indptr"]), shape=(n, n))
        return SparseOperator(S, scale)
    if kind == "factored":
        indices, indptr = state["indices"], state["indptr"]
        data = state.get("data")
        if data is None:
            data = np.ones(indices.size)
        H = sp.csr_array((data, indices, indptr), shape=(n, int(state["K"])))
        return FactoredOperator(H, scale, state.get("groups"))
    raise ValueError(f"unknown operator kind {kind!r}")


def operator_state(op: ConsensusOperator) -> dict[str, np.ndarray]:
    return op.state()
