"""The label-matrix operator: ``S = H H^T`` read off the label runs themselves.

The membership matrix H of ``r`` label runs (Meyer & Wessell, Sec. 1 and 3)
has exactly one 1 per run in each row, so the ``n x r`` label matrix, in
the smallest unsigned integer type that holds its labels, says all that H
does in a fraction of the memory (one byte per entry for runs of up to 256
labels, against twelve for a sparse H).  :class:`LabelOperator` keeps that
matrix (a ``.npy`` stays memory-mapped), packs runs in groups whose
combined codes fit a byte (:mod:`sca.operators.packing`), and computes every product with S from the
packed codes in row blocks (:mod:`sca.operators.kernels`): ``H^T x`` as weighted
counts, ``H y`` as gathers, the ``K x K`` Gram matrix ``H^T D^2 H`` as
weighted counts of pairs of codes.  Each is a map over row blocks followed
by a sum of small arrays, so the label matrix may also be a Dask array
whose chunks live on other machines (docs/scale.md).  Whether a label matrix
suits it, and its codes, are :mod:`sca.operators.codes`'s.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import kernels, pairs
from .base import ConsensusOperator
from .codes import is_dask, label_codes, label_spans, repack
from .factored import FactorOperator
from .gram import GRAM_MAX_K
from .lanczos import BLOCK
from .packing import (
    PACKED_CODES,
    Marginals,
    Packing,
    Packings,
    group_codes,
    layout,
    marginals,
)
from .reads import SANDWICH_ENTRIES

# Imported from here before the label matrix's codes had a module of their own.
__all__ = ["LabelOperator", "is_dask", "label_codes", "label_operator", "label_spans"]

#: The one-column products read wider groups (runs of five labels: five runs,
#: 3125 codes), row by row: fewer, less conflicting updates for a table that
#: still fits a core's cache ...
WIDE_CODES = 4096
#: ... once n is this many times their number of codes (its cost per product).
WIDE_MIN_RATIO = 1
#: From this many elements the Gram matrix is counted from the packed codes ...
JOINT_MIN_N = 2_000
#: ... below this many, from narrower groups (runs of five labels: pairs of runs,
#: 25 codes): more pairs of groups to count, but tables that stay in the core's
#: fastest cache and a twelfth of the cells to put onto the labels; the byte
#: codes pay from about 10^6 elements.
NARROW_CODES = 32
NARROW_MAX_N = 1 << 19
#: Beyond GRAM_MAX_K clusters the Gram matrix is still counted up to this many
#: (a 512 MiB G) ...
GRAM_COUNTS_MAX_K = 8192
#: ... while the counts of all pairs of groups take no more than this.
GRAM_COUNTS_BYTES = 512 << 20
#: A block's product reads the labels once for each this many of its columns (at
#: most; the passes even): a wider pass reads the codes fewer times, until a run's
#: share of the table (its labels times the columns) leaves the core's cache.
PASS_COLUMNS = 40
#: From this many columns a product passes over the labels once for all of them ...
BLOCK_MIN_COLUMNS = 8
#: ... unless the packed codes read fewer than 1 / BLOCK_MAX_READS as many entries a row.
BLOCK_MAX_READS = 2


def label_operator(L) -> LabelOperator | None:
    """The operator of an in-memory ``n x r`` label matrix (:func:`label_codes`);
    None when it needs the sparse H.  A Dask array's is
    :func:`sca.operators.chunked.chunked_label_operator`."""
    found = label_codes(L)
    return None if found is None else LabelOperator(*found)


class LabelOperator(FactorOperator):
    """``S = H H^T`` from the ``n x r`` label matrix ``codes`` (every element in
    every run; run j's labels in ``0..spans[j]-1``); H is never formed.

    A :class:`~sca.operators.factored.FactorOperator`, as the sparse H's
    :class:`~sca.operators.factored.FactoredOperator` is: every stage sees the
    same operator, and what is not computed from the labels here falls back
    to the sparse H, built on first use.

    Parameters
    ----------
    codes : ndarray, numpy.memmap or dask.array.Array of shape (n, r)
        The labels, of unsigned integer type.
    spans : array_like of int, shape (r,)
        Run j's labels are ``0..spans[j]-1``.
    scale : ndarray of shape (n,), optional
        The diagonal of ``D``; None for S itself.
    packings : Packings, optional
        The packings of the same labels, shared with the operator this one
        rescales.
    """

    kind = "labels"
    #: Whether the label matrix is a Dask array (:mod:`sca.operators.chunked`).
    chunked = False
    #: Run j owns columns ``groups[j]:groups[j + 1]`` of H (always known here).
    groups: np.ndarray

    def __init__(self, codes, spans, scale=None, packings: Packings | None = None):
        spans = np.asarray(spans, dtype=np.int64)
        super().__init__(codes.shape[0], scale, np.concatenate([[0], np.cumsum(spans)]))
        self.codes = codes
        self.spans = spans
        self._row_major: np.ndarray | None = None
        self._packings = Packings() if packings is None else packings

    # -- the packed codes ---------------------------------------------------
    @property
    def packing(self) -> Packing:
        """The byte codes: groups of up to :data:`~sca.operators.packing.PACKED_CODES`
        codes, ``codes`` of shape ``(groups, n)``."""
        return self._packed(PACKED_CODES)

    def _packed(self, limit: int) -> Packing:
        """The runs packed in groups of up to ``limit`` combined codes, column-major
        (``codes`` of shape ``(groups, n)``)."""
        if limit not in self._packings.packed:
            grouping = layout(self.spans, limit)
            packed = self._pack(grouping)
            self._packings.packed[limit] = Packing(*grouping, codes=packed)
        return self._packings.packed[limit]

    def _pack(self, grouping) -> np.ndarray:
        """The codes packed by ``grouping`` (:func:`~sca.operators.packing.layout`)."""
        return kernels.pack(np.asarray(self.codes), grouping.groups, grouping.radix, grouping.dtype)

    @property
    def wide(self) -> Packing | None:
        """Codes of up to :data:`WIDE_CODES` a group, row-major ``(n, groups)``, for
        one-column products; None for a chunked label matrix, or below
        :data:`WIDE_MIN_RATIO` elements per code."""
        if not self._packings.wide_known:
            codes = sum(group_codes(self.spans, WIDE_CODES))
            self._packings.wide, self._packings.wide_known = None, True
            if (
                not self.chunked
                and self.n >= WIDE_MIN_RATIO * codes
                and self.n >= kernels.COMPILED_MIN_ROWS
            ):
                grouping = layout(self.spans, WIDE_CODES)
                rows = kernels.pack(
                    np.asarray(self.codes),
                    grouping.groups,
                    grouping.radix,
                    grouping.dtype,
                    rowmajor=True,
                )
                self._packings.wide = Packing(*grouping, codes=rows)
        return self._packings.wide

    def _map(self, kernel, *args, by_row=(), limit=PACKED_CODES, gather=False):
        """``kernel(codes, binoff, *by_row, *args)`` on the packing of ``limit`` codes
        (a chunked operator maps it over row blocks: its results summed, or,
        with ``gather``, concatenated)."""
        packing = self._packed(limit)
        return kernel(packing.codes, packing.binoff, *by_row, *args)

    def _weights(self) -> np.ndarray:
        """The diagonal of ``D^2`` (ones unscaled), the Gram matrix's weights."""
        return np.ones(self.n) if self.scale is None else self.scale**2

    @property
    def gram_cheap(self) -> bool:
        """Up to :data:`GRAM_MAX_K` clusters as for any factor; beyond, up to
        :data:`GRAM_COUNTS_MAX_K` where K is small beside n, while the pair counts of byte codes fit
        :data:`GRAM_COUNTS_BYTES` (runs of many labels: one run to a group,
        each pair's table small), so that the spectrum's few largest
        eigenvalues come from G, not from products with P."""
        if self.n_clusters <= GRAM_MAX_K:
            return True
        if self.n_clusters > GRAM_COUNTS_MAX_K or not self.small_k or not self._small:
            return False  # with K near n, G is no smaller than P
        sizes = group_codes(self.spans, PACKED_CODES)
        g, B = len(sizes), max(sizes)
        return g * (g - 1) // 2 * B * B * 8 <= GRAM_COUNTS_BYTES

    @property
    def _small(self) -> bool:
        """Whether every group's combined codes fit a byte (pairs of them: 65536 counts),
        as they do unless a run alone has more labels."""
        return int(self.spans.max()) <= PACKED_CODES

    @property
    def _gram_limit(self) -> int:
        """The codes per group of the packing that the Gram matrix and the
        components are counted from."""
        narrow = self.n < NARROW_MAX_N and not self.chunked
        return NARROW_CODES if narrow else PACKED_CODES

    def marginals(self, limit: int = PACKED_CODES) -> Marginals:
        """The :class:`~sca.operators.packing.Marginals` of the packing of ``limit`` codes."""
        if limit not in self._packings.marginals:
            self._packings.marginals[limit] = marginals(self._packed(limit), self.groups)
        return self._packings.marginals[limit]

    @property
    def threaded_kernels(self) -> bool:
        """Whether products run the compiled kernels on threads (see
        :func:`sca.operators.threads.one_blas_thread`)."""
        return not self.chunked and self.n >= kernels.COMPILED_MIN_ROWS

    # -- the operator ----------------------------------------------------------
    @property
    def n_clusters(self) -> int:
        return int(self.groups[-1])

    @property
    def H(self):
        """The sparse membership matrix, for the few uses not computed here."""
        return self._membership[0]

    @property
    def H_by_cluster(self):
        """``H^T`` as a CSR array, built with H and kept beside it."""
        return self._membership[1]

    @property
    def _membership(self) -> tuple:
        """``H`` and ``H^T`` as CSR arrays, built once for every scaling of these labels."""
        if self._packings.membership is None:
            codes = np.asarray(self.codes)
            index = np.int32 if self.n * self.spans.size < 2**31 else np.int64
            indices = (codes.astype(index) + self.groups[:-1].astype(index)).ravel()
            indptr = np.arange(0, indices.size + 1, self.spans.size, dtype=index)
            H = sp.csr_array(
                (np.ones(indices.size), indices, indptr), shape=(self.n, self.n_clusters)
            )
            self._packings.membership = (H, H.T.tocsr())
        return self._packings.membership

    @property
    def _sparse_products(self) -> bool:
        """Whether products go through the sparse H: below
        :data:`~sca.operators.kernels.COMPILED_MIN_ROWS` elements in memory, where
        numpy's counts take a Python step for each group of runs and each column."""
        return not self.chunked and self.n < kernels.COMPILED_MIN_ROWS

    def _by_block(self, X) -> bool:
        """Whether a product with the columns of X passes over the labels once for
        all of them (:data:`BLOCK_MIN_COLUMNS` or more, in memory, from
        :data:`~sca.operators.kernels.COMPILED_MIN_ROWS` rows): the labels
        themselves, not the wide codes, whose tables of many columns no cache holds."""
        if self.chunked or self.n < kernels.COMPILED_MIN_ROWS:
            return False
        if X.size // max(X.shape[0], 1) < BLOCK_MIN_COLUMNS:
            return False
        # the labels read a run each where the packed codes read a group of runs: the
        # block pays while that is at most BLOCK_MAX_READS times as many entries a row
        packing = self.wide if self.wide is not None else self.packing
        return self.spans.size <= BLOCK_MAX_READS * len(packing.groups)

    def _scatter(self, X, weights=None, dtype=np.float64):
        """``H^T W X`` (W the diagonal of ``weights``) of a block, over the labels, in ``dtype``."""
        out = kernels.scatter_wide(
            self._rows, self.groups, X.reshape(self.n, -1), PASS_COLUMNS, weights, dtype
        )
        return out.reshape((self.n_clusters,) + X.shape[1:])

    def _gather(self, Z, weights=None):
        """``W H Z`` of a block, in passes over the labels."""
        K = self.n_clusters
        out = kernels.gather_wide(self._rows, self.groups, Z.reshape(K, -1), PASS_COLUMNS, weights)
        return out.reshape((self.n,) + Z.shape[1:])

    # A block's products weigh each row by D inside their passes, not in passes of their own.
    def matmat(self, X, single=False):
        X = np.asarray(X, dtype=float)
        if not self._by_block(X):
            return super().matmat(X)
        table = self._scatter(X, self.scale, np.float32 if single else np.float64)
        return self._gather(table, self.scale)

    def factor_transpose(self, X):
        X = np.asarray(X, dtype=float)
        return self._scatter(X, self.scale) if self._by_block(X) else super().factor_transpose(X)

    def factor(self, Z):
        Z = np.asarray(Z, dtype=float)
        return self._gather(Z, self.scale) if self._by_block(Z) else super().factor(Z)

    @property
    def krylov_block(self) -> int:
        """:data:`~sca.operators.lanczos.BLOCK` columns where a block passes over the
        labels once (:meth:`_by_block`); one where each column costs a pass anyway
        (one vector a step is the fewest products for a Krylov space)."""
        return BLOCK if self._by_block(np.empty((1, BLOCK))) else 1

    @property
    def _rows(self) -> np.ndarray:
        """The label matrix in memory, row-major, for the block products (a null
        draw's runs are held by run: made row-major once)."""
        if self._row_major is None:
            self._row_major = np.ascontiguousarray(self.codes)
        return self._row_major

    def _left(self, X):
        K, wide = self.n_clusters, self.wide
        if self._sparse_products:
            out = self._membership[1] @ X.reshape(self.n, -1)
        elif self._by_block(X):
            return self._scatter(X)  # a block of columns in one pass over the labels
        elif wide is not None:  # column by column: one column's tables stay in cache
            columns = X.reshape(self.n, -1).T
            out = np.column_stack(
                [wide.columns.T @ kernels.rvec(wide.codes, wide.binoff, x) for x in columns]
            )
        else:
            counts = self._map(kernels.rmat, by_row=(X.reshape(self.n, -1),))
            out = self.packing.columns.T @ counts
        return out.reshape((K,) + X.shape[1:])

    def _right(self, Z):
        wide = self.wide
        if self._sparse_products:
            out = self._membership[0] @ Z.reshape(self.n_clusters, -1)
        elif self._by_block(Z):
            return self._gather(Z)
        elif wide is not None:
            table = wide.columns @ Z.reshape(self.n_clusters, -1)
            out = kernels.mat_wide(wide.codes, wide.binoff, table)
        else:
            table = self.packing.columns @ Z.reshape(self.n_clusters, -1)
            out = self._map(kernels.mat, table, gather=True)
        return out.reshape((self.n,) + Z.shape[1:])

    def _raw_diagonal(self):
        return np.full(self.n, float(self.spans.size))

    def _raw_entries(self, rows, cols):
        codes = self.codes
        a, b = codes[np.asarray(rows)], codes[np.asarray(cols)]
        return np.asarray((np.asarray(a) == np.asarray(b)).sum(axis=1), dtype=float)

    # The generic sum through products, not the factor's, which reads the sparse H.
    within_sums = ConsensusOperator.within_sums

    def _sandwich(self, B):
        """``B^T S B = (H^T B)^T (H^T B)`` for a sparse ``n x c`` B: the counts of
        a product without its gathers, a few columns of B at a time."""
        step = max(1, SANDWICH_ENTRIES // self.n)
        A = np.column_stack(
            [self._left(B[:, s : s + step].toarray()) for s in range(0, B.shape[1], step)]
        )
        return A.T @ A

    def gram(self, dtype=np.float64) -> np.ndarray:
        """``(DH)^T (DH)`` from weighted counts of pairs of combined codes (below
        :data:`JOINT_MIN_N` elements, dense products of H's row blocks are cheaper)."""
        if not self._small or (self.n < JOINT_MIN_N and not self.chunked):
            return super().gram(dtype)
        return pairs.packed_gram(self, dtype)

    def _components(self):
        """Components of the cluster graph (as :meth:`FactorOperator._pattern`:
        each element joins its run-0 cluster to its others), read at run 0: from
        the Gram matrix's packing (which the null draw then packs too), or run by
        run where a run has more labels than a packed group holds."""
        if self._small:
            run0, used = pairs.packed_run0_components(self)
        elif self.chunked:
            return super()._components()
        else:
            run0 = pairs.run0_components(self.codes, self.spans)
            used = np.ones(run0.size, dtype=bool)
        return self._elements_components(run0, used)

    def _elements_components(self, run0: np.ndarray, used: np.ndarray) -> tuple:
        """The components' count and each element's, from the component of each
        run-0 label (``run0``; ``used``: the labels some element has)."""
        count_labels = np.unique(run0[np.asarray(self.codes[:, 0])], return_inverse=True)
        return int(count_labels[0].size), count_labels[1].ravel()

    def _with_scale(self, scale):
        return LabelOperator(self.codes, self.spans, scale, self._packings)

    def null_draw(self, rng):
        """Each run's labels permuted over the elements, as
        :meth:`FactoredOperator.null_draw` draws them (the same draw): one random
        order of the elements, then each run rotated by its own random offset."""
        perm = rng.permutation(self.n)
        shifts = rng.integers(0, self.n, self.spans.size)
        permuted = kernels.permuted_columns(np.asarray(self.codes), perm)  # (r, n)
        for j, shift in enumerate(shifts):
            permuted[j] = np.roll(permuted[j], shift)
        null = LabelOperator(permuted.T, self.spans)
        if self._small:
            self._packed(self._gram_limit)  # S's Gram needs it too: then both are packed here
        repack(self._packings, null._packings, permuted)  # the same groups, the null's codes
        return null

    def _state(self):
        return {"codes": np.asarray(self.codes), "spans": self.spans}

    @classmethod
    def from_state(cls, state):
        return cls(state["codes"], state["spans"], state.get("scale"))
