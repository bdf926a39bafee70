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

    def null_draw(self, rng: np.random.Generator) -> ConsensusOperator:
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

    @property
    def rank_bound(self) -> int:
        """An upper bound on the rank of S (n; a factor's number of columns)."""
        return self.n

    def factor_gram(self) -> np.ndarray | None:
        """For ``P = F F^T`` with a factor F of K << n columns: the ``K x K`` Gram
        matrix ``F^T F`` when it is already at hand (computed for the spectrum),
        else None.  The iteration then runs on K-vectors (:func:`sca.iteration.evolve`)."""
        return None

    def diagonal(self) -> np.ndarray:
        diag = self._raw_diagonal()
        return diag if self.scale is None else diag * self.scale**2

    def scaled(self, d: np.ndarray) -> ConsensusOperator:
        """The operator ``D S D`` for ``D = diag(d)`` (composed with any scale)."""
        d = np.asarray(d, dtype=float)
        return self._with_scale(d if self.scale is None else self.scale * d)

    def unscaled(self) -> ConsensusOperator:
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
        count = int(labels.max()) + 1
        for start in range(0, count, step):
            inside = (labels >= start) & (labels < start + step)
            E = np.zeros((self.n, min(step, count - start)))
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
            out[:, start : start + step] = B.T @ self._product(B[:, start : start + step].toarray())
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
        return eigsh(linop, k=k_hat, which="LA", tol=tol, v0=v0, return_eigenvectors=False)

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


def __getattr__(name: str):
    # The factored form lives in its own module, which imports this one: it is
    # reachable from here on first use, whichever of the two is imported first.
    if name == "FactoredOperator":
        from .factored import FactoredOperator

        return FactoredOperator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        from .factored import FactoredOperator

        return FactoredOperator(H, scale, state.get("groups"))
    if kind == "labels":
        from .labels import LabelOperator

        return LabelOperator(state["codes"], state["spans"], scale)
    raise ValueError(f"unknown operator kind {kind!r}")


def operator_state(op: ConsensusOperator) -> dict[str, np.ndarray]:
    return op.state()
