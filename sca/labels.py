"""The label-matrix operator: ``S = H H^T`` read off the label runs themselves.

The membership matrix H of ``r`` label runs (Meyer & Wessell, Sec. 1 and 3)
has exactly one 1 per run in each row, so the ``n x r`` label matrix, in
the smallest unsigned integer type that holds its labels, says all that H
does in a fraction of the memory (one byte per entry for runs of up to 256
labels, against twelve for a sparse H).  :class:`LabelOperator` keeps that
matrix (a ``.npy`` stays memory-mapped), packs runs in groups whose
combined codes fit a byte, and computes every product with S from the
packed codes in row blocks (:mod:`sca.kernels`): ``H^T x`` as weighted
counts, ``H y`` as gathers, the ``K x K`` Gram matrix ``H^T D^2 H`` as
weighted counts of pairs of codes.  Each is a map over row blocks followed
by a sum of small arrays, so the label matrix may also be a Dask array
whose chunks live on other machines (docs/scale.md).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from .factored import FactoredOperator
from .operators import _SANDWICH_ENTRIES, GRAM_MAX_K, ConsensusOperator

#: Combined codes of a group of runs fit a byte.
PACKED_CODES = 256
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
#: fastest cache and a twelfth of the cells to put onto the labels (float64 G
#: at n = 10^5: 48 against 94 ms; at 5*10^5, 218 against 262 ms, and the same
#: for float32 counts; the byte codes are faster from about 10^6 elements).
NARROW_CODES = 32
NARROW_MAX_N = 1 << 19
#: Beyond GRAM_MAX_K clusters the Gram matrix is still counted up to this many
#: (a 512 MiB G) ...
GRAM_COUNTS_MAX_K = 8192
#: ... while the counts of all pairs of groups take no more than this.
GRAM_COUNTS_BYTES = 512 << 20
#: Label runs whose labels span more than this (in all) are renumbered first.
_SPAN_SLACK = 1024
_BLOCK_ROWS = 1 << 16
#: The wide codes' key in an operator's cache of packings.
_WIDE = ("wide", WIDE_CODES)


def is_dask(array) -> bool:
    return type(array).__module__.startswith("dask.")


def smallest_unsigned(top: int) -> np.dtype:
    """The smallest unsigned integer dtype holding ``0..top``."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.uint64)


def label_spans(L) -> np.ndarray | None:
    """Run j's labels ``0..spans[j]-1`` when the ``n x r`` label matrix ``L`` suits
    :class:`LabelOperator` (every element in every run, labels not much sparser
    than n); None when H must be the sparse matrix of the labels used."""
    n, r = L.shape
    if is_dask(L):
        low, high = (np.asarray(v) for v in (L.min(axis=0), L.max(axis=0)))
    else:
        low, high = np.full(r, np.iinfo(np.int64).max), np.full(r, -1)
        for lo in range(0, n, _BLOCK_ROWS):
            block = L[lo : lo + _BLOCK_ROWS]
            low, high = np.minimum(low, block.min(axis=0)), np.maximum(high, block.max(axis=0))
    if low.min() < 0 or high.sum() + r > 4 * n + _SPAN_SLACK:
        return None
    return high.astype(np.int64) + 1


def label_operator(L) -> LabelOperator | None:
    """The operator of an ``n x r`` label matrix with every element in every run
    and labels ``0..m`` not much sparser than n; None otherwise (the caller
    then builds the sparse H).  ``L`` is used as is when its dtype is already
    the smallest that holds its labels (a memory-mapped ``.npy`` is not read
    into memory); otherwise it is converted in row blocks."""
    spans = label_spans(L)
    if spans is None:
        return None
    n, r = L.shape
    dtype = smallest_unsigned(int(spans.max()) - 1)
    if L.dtype != dtype:
        if is_dask(L):
            L = L.astype(dtype)
        else:
            codes = np.empty((n, r), dtype=dtype)
            for lo in range(0, n, _BLOCK_ROWS):
                codes[lo : lo + _BLOCK_ROWS] = L[lo : lo + _BLOCK_ROWS]
            L = codes
    return LabelOperator(L, spans)


def _grouped(spans: np.ndarray, limit: int) -> list[list[int]]:
    """Consecutive runs grouped while the product of their spans fits ``limit``."""
    groups: list[list[int]] = []
    current: list[int] = []
    width = 1
    for j, span in enumerate(spans):
        if current and width * span > limit:
            groups.append(current)
            current, width = [], 1
        current.append(j)
        width *= int(span)
    groups.append(current)
    return groups


def _group_codes(spans: np.ndarray, limit: int) -> list[int]:
    """How many combined codes each group of :func:`_grouped` has (a packing without its codes)."""
    return [int(np.prod(spans[runs])) for runs in _grouped(spans, limit)]


def _packing(spans: np.ndarray, limit: int = PACKED_CODES):
    """Runs grouped while the product of their spans fits ``limit`` codes:
    ``(runs per group, radix per run, bin offsets, marginal matrix M)``.

    M (bins x K, sparse 0/1) maps a group's combined code to its runs'
    columns of H, so ``H = Hp M`` with Hp the one-hot matrix of combined codes.
    """
    groups = _grouped(spans, limit)
    offsets = np.concatenate([[0], np.cumsum(spans)])
    radix = np.ones(spans.size, dtype=np.int64)
    sizes: list[int] = []
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    for runs in groups:
        radix[runs] = np.cumprod(np.concatenate([[1], spans[runs][:-1]]))
        size = int(np.prod(spans[runs]))
        code = np.arange(size)
        for j in runs:
            rows.append(sum(sizes) + code)
            cols.append(offsets[j] + (code // radix[j]) % spans[j])
        sizes.append(size)
    binoff = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    M = sp.csr_array(
        (np.ones(sum(r.size for r in rows)), (np.concatenate(rows), np.concatenate(cols))),
        shape=(int(binoff[-1]), int(offsets[-1])),
    )
    return groups, radix, binoff, M


def _codes_dtype(binoff: np.ndarray) -> np.dtype:
    """The type of a packing's combined codes: the smallest that holds its largest group's."""
    return smallest_unsigned(int(np.diff(binoff).max()) - 1)


class LabelOperator(FactoredOperator):
    """``S = H H^T`` from the ``n x r`` label matrix ``codes`` (every element in
    every run; run j's labels in ``0..spans[j]-1``); H is never formed.

    A subclass of :class:`FactoredOperator`: every stage sees the same
    operator, and what is not computed from the labels here falls back to
    the sparse H, built on first use.
    """

    kind = "labels"

    def __init__(self, codes, spans, scale=None, cache: dict | None = None):
        ConsensusOperator.__init__(self, codes.shape[0], scale)
        self.codes = codes
        self.spans = np.asarray(spans, dtype=np.int64)
        self.groups = np.concatenate([[0], np.cumsum(self.spans)])
        #: The packings, built once and shared by every scaling of this operator.
        self._cache = {} if cache is None else cache

    # -- the packed codes ---------------------------------------------------
    @property
    def packing(self):
        """``(groups, radix, binoff, M, packed)``: byte codes, ``(groups, n)``."""
        return self._packed(PACKED_CODES)

    def _packed(self, limit: int):
        """The runs packed in groups of up to ``limit`` combined codes, column-major:
        ``(groups, radix, binoff, M, packed)`` with ``packed`` of shape ``(groups, n)``."""
        key = ("packing", limit)
        if key not in self._cache:
            from . import kernels

            groups, radix, binoff, M = _packing(self.spans, limit)
            dtype = _codes_dtype(binoff)
            if is_dask(self.codes):
                codes = self.codes.rechunk({1: -1})
                packed = codes.map_blocks(
                    lambda block: kernels.pack(block, groups, radix, dtype).T,
                    dtype=dtype,
                    chunks=(codes.chunks[0], (len(groups),)),
                ).T.persist()
            else:
                packed = kernels.pack(np.asarray(self.codes), groups, radix, dtype)
            self._cache[key] = (groups, radix, binoff, M, packed)
        return self._cache[key]

    @property
    def wide(self):
        """``(groups, radix, binoff, M, rows)``: codes of up to :data:`WIDE_CODES`,
        row-major ``(n, groups)``, for one-column products; None for a Dask
        array, or below :data:`WIDE_MIN_RATIO` elements per code."""
        if _WIDE not in self._cache:
            codes = sum(_group_codes(self.spans, WIDE_CODES))
            self._cache[_WIDE] = None
            from . import kernels

            if (
                not is_dask(self.codes)
                and self.n >= WIDE_MIN_RATIO * codes
                and self.n >= kernels.COMPILED_MIN_ROWS
            ):
                groups, radix, binoff, M = _packing(self.spans, WIDE_CODES)
                rows = kernels.pack(
                    np.asarray(self.codes), groups, radix, _codes_dtype(binoff), rowmajor=True
                )
                self._cache[_WIDE] = (groups, radix, binoff, M, rows)
        return self._cache[_WIDE]

    def _map(self, kernel, *args, by_row=(), limit=PACKED_CODES):
        """``kernel(packed[:, block], binoff, *(a[block] for a in by_row), *args)`` for
        each block of rows of the packing of ``limit`` codes, summed (gathers:
        concatenated); in memory, one block."""
        from . import kernels

        _, _, binoff, _, packed = self._packed(limit)
        function = getattr(kernels, kernel)
        if not is_dask(packed):
            return function(packed, binoff, *by_row, *args)
        import dask

        parts, lo = [], 0
        for block, size in zip(packed.to_delayed().ravel(), packed.chunks[1]):
            rows = (a[lo : lo + size] for a in by_row)
            parts.append(dask.delayed(function)(block, binoff, *rows, *args))
            lo += size
        results = dask.compute(*parts)
        return np.concatenate(results) if kernel == "mat" else sum(results)

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
        sizes = _group_codes(self.spans, PACKED_CODES)
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
        narrow = self.n < NARROW_MAX_N and not is_dask(self.codes)
        return NARROW_CODES if narrow else PACKED_CODES

    def marginals(self, limit: int = PACKED_CODES) -> tuple[np.ndarray, np.ndarray]:
        """The packing's ``M`` group by group: ``marginal[a, code, c] = 1`` where
        group a's combined code holds label ``index[a, c]`` (a column of H), zero-padded
        to ``(groups, B, width)``; the padding's index is K (a spare row)."""
        key = ("marginals", limit)
        if key not in self._cache:
            groups, _, binoff, M, _ = self._packed(limit)
            first = np.array([self.groups[runs[0]] for runs in groups])
            last = np.array([self.groups[runs[-1] + 1] for runs in groups])
            width = int((last - first).max())
            marginal = np.zeros((len(groups), int(np.diff(binoff).max()), width))
            entries = M.tocoo()
            group = np.searchsorted(binoff, entries.row, side="right") - 1
            marginal[group, entries.row - binoff[group], entries.col - first[group]] = 1.0
            index = first[:, None] + np.arange(width)
            index[index >= last[:, None]] = self.n_clusters
            self._cache[key] = (marginal, index)
        return self._cache[key]

    @property
    def threaded_kernels(self) -> bool:
        """Whether products run the compiled kernels on threads (see
        :func:`sca.kernels.one_blas_thread`)."""
        from . import kernels

        return not is_dask(self.codes) and self.n >= kernels.COMPILED_MIN_ROWS

    # -- the operator ----------------------------------------------------------
    @property
    def n_clusters(self) -> int:
        return int(self.groups[-1])

    @cached_property
    def H(self):
        """The sparse membership matrix, for the few uses not computed here."""
        codes = np.asarray(self.codes)
        index = np.int32 if self.n * self.spans.size < 2**31 else np.int64
        indices = (codes.astype(index) + self.groups[:-1].astype(index)).ravel()
        indptr = np.arange(0, indices.size + 1, self.spans.size, dtype=index)
        return sp.csr_array(
            (np.ones(indices.size), indices, indptr), shape=(self.n, self.n_clusters)
        )

    def _left(self, X):
        K, wide = self.n_clusters, self.wide
        if wide is not None:  # column by column: one column's tables stay in cache
            from . import kernels

            _, _, binoff, M, rows = wide
            columns = X.reshape(self.n, -1).T
            out = np.column_stack([M.T @ kernels.rvec(rows, binoff, x) for x in columns])
        else:
            out = self.packing[3].T @ self._map("rmat", by_row=(X.reshape(self.n, -1),))
        return out.reshape((K,) + X.shape[1:])

    def _right(self, Z):
        wide = self.wide
        if wide is not None:
            from . import kernels

            _, _, binoff, M, rows = wide
            out = kernels.mat_wide(rows, binoff, M @ Z.reshape(self.n_clusters, -1))
        else:
            out = self._map("mat", self.packing[3] @ Z.reshape(self.n_clusters, -1))
        return out.reshape((self.n,) + Z.shape[1:])

    def _raw_diagonal(self):
        return np.full(self.n, float(self.spans.size))

    def _raw_entries(self, rows, cols):
        codes = self.codes
        a, b = codes[np.asarray(rows)], codes[np.asarray(cols)]
        return np.asarray((np.asarray(a) == np.asarray(b)).sum(axis=1), dtype=float)

    within_sums = ConsensusOperator.within_sums

    def _sandwich(self, B):
        """``B^T S B = (H^T B)^T (H^T B)`` for a sparse ``n x c`` B: the counts of
        a product without its gathers, a few columns of B at a time."""
        step = max(1, _SANDWICH_ENTRIES // self.n)
        A = np.column_stack(
            [self._left(B[:, s : s + step].toarray()) for s in range(0, B.shape[1], step)]
        )
        return A.T @ A

    def gram(self, dtype=np.float64) -> np.ndarray:
        """``(DH)^T (DH)`` from weighted counts of pairs of combined codes (below
        :data:`JOINT_MIN_N` elements, dense products of H's row blocks are cheaper)."""
        if not self._small or (self.n < JOINT_MIN_N and not is_dask(self.codes)):
            return super().gram(dtype)
        limit = self._gram_limit
        groups, _, binoff, _, _ = self._packed(limit)
        w = np.ones(self.n) if self.scale is None else self.scale**2
        g = len(groups)
        pairs = [(a, b) for a in range(g) for b in range(a + 1, g)]
        B = int(np.diff(binoff).max())
        # A group with itself: each element's code paired with itself, so its
        # block of counts is diagonal, the weighted counts of the group's codes.
        own = self._map("rmat", by_row=(w[:, None],), limit=limit).ravel()
        # Onto the runs' labels: block (a, b) of G is marginal_a^T counts_ab marginal_b,
        # one product per group on each side (marginals zero-padded to one shape).
        marginal, index = self.marginals(limit)
        marginal = marginal.astype(dtype, copy=False)
        width = index.shape[1]
        G = np.zeros((self.n_clusters + 1, self.n_clusters + 1))
        for a in range(g):  # G's diagonal blocks, upper triangle
            block = marginal[a, : binoff[a + 1] - binoff[a]]
            G[np.ix_(index[a], index[a])] = np.triu(
                block.T @ (own[binoff[a] : binoff[a + 1], None] * block)
            )
        if pairs:
            counts = self._map("joint", np.array(pairs), np.dtype(dtype), by_row=(w,), limit=limit)
            pa, pb = np.array(pairs).T
            right = np.empty((len(pairs), B, width), dtype=dtype)
            for b in range(g):  # counts_ab marginal_b: one product per b
                at = np.flatnonzero(pb == b)
                right[at] = (counts[at].reshape(-1, B) @ marginal[b]).reshape(at.size, B, width)
            blocks = np.empty((len(pairs), width, width))
            for a in range(g):  # marginal_a^T (...): one product per a
                at = np.flatnonzero(pa == a)
                stacked = right[at].transpose(1, 0, 2).reshape(B, -1)
                blocks[at] = (
                    (marginal[a].T @ stacked).reshape(width, at.size, width).transpose(1, 0, 2)
                )
            G[index[pa][:, :, None], index[pb][:, None, :]] = blocks  # disjoint cells
        G = G[:-1, :-1]
        G = G + np.triu(G, 1).T
        return G.astype(dtype, copy=False)

    def components(self):
        """Components of the cluster graph (as :meth:`FactoredOperator._pattern`:
        each element joins its run-0 cluster to its others), read at run 0, from
        the Gram matrix's packing (which the null draw then packs too)."""
        if not self._small:
            return super().components()
        limit = self._gram_limit
        groups, _, binoff, _, _ = self._packed(limit)
        pairs = np.array([(0, b) for b in range(len(groups))])  # group 0 against every group
        counts = self._map("joint", pairs, by_row=(np.ones(self.n),), limit=limit)
        marginal, index = self.marginals(limit)
        first = marginal[0, : binoff[1], : self.spans[0]]  # combined code -> run-0 label
        K = self.n_clusters
        graph = np.zeros((K, K + 1), dtype=bool)  # the last column: the marginals' padding
        for b in range(len(groups)):
            size = binoff[b + 1] - binoff[b]
            seen = counts[b, : binoff[1], :size] > 0
            graph[: self.spans[0], index[b]] |= (first.T @ seen @ marginal[b, :size]) > 0
        graph = graph[:, :K]
        _, labels = csgraph.connected_components(sp.csr_array(graph), directed=False)
        run0 = np.asarray(self.codes[:, 0])
        count_labels = np.unique(labels[run0], return_inverse=True)
        return int(count_labels[0].size), count_labels[1].ravel()

    def _with_scale(self, scale):
        return LabelOperator(self.codes, self.spans, scale, self._cache)

    def null_draw(self, rng):
        """Each run's labels permuted over the elements, as
        :meth:`FactoredOperator.null_draw` draws them (the same draw): one random
        order of the elements, then each run rotated by its own random offset."""
        from . import kernels

        perm = rng.permutation(self.n)
        shifts = rng.integers(0, self.n, self.spans.size)
        # A global shuffle: the Dask form gathers the labels for it (docs/scale.md).
        columns = kernels.permuted_columns(np.asarray(self.codes), perm)  # (r, n)
        for j, shift in enumerate(shifts):
            columns[j] = np.roll(columns[j], shift)
        if is_dask(self.codes):
            import dask.array as da

            return LabelOperator(da.from_array(columns.T, chunks=self.codes.chunks), self.spans)
        null = LabelOperator(columns.T, self.spans)
        if self._small:
            self._packed(self._gram_limit)  # S's Gram needs it too: then both are packed here
        for key, layout in list(self._cache.items()):  # the same groups, the null's codes
            if key[0] == "marginals":
                null._cache[key] = layout
            elif key[0] in ("packing", "wide") and layout is not None:
                groups, radix, binoff, M, codes = layout
                packed = kernels.pack_columns(
                    columns, groups, radix, codes.dtype, rowmajor=key == _WIDE
                )
                null._cache[key] = (groups, radix, binoff, M, packed)
        return null

    def _state(self):
        return {"codes": np.asarray(self.codes), "spans": self.spans}
