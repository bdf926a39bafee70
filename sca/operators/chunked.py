"""The label-matrix operator on a Dask array: nothing of size n on the client.

:class:`ChunkedLabelOperator` is :class:`~sca.operators.labels.LabelOperator`
for an ``n x r`` label matrix held as a Dask array chunked by rows.  Every
vector over the elements (the scaling ``d`` of ``D``, products, iterates,
labels) is a Dask array chunked like the label matrix, and every product is a
map over row blocks followed by a tree sum of K-sized arrays (docs/scale.md):

* ``H^T X``: per block, the weighted counts of the packed codes
  (:func:`~sca.operators.kernels.rmat`), summed pairwise;
* ``H Z``: the small table ``M Z`` sent to every block, gathered there
  (:func:`~sca.operators.kernels.mat`);
* the Gram matrix and the components: per block, the pair counts
  (:func:`~sca.operators.kernels.joint`), summed pairwise.

A NumPy vector given to a product is sent to the blocks and the result
gathered, as any in-memory caller expects (the paper's gap split sorts one
n-vector; the custom cluster ranks the elements); a Dask vector stays on the
cluster.  The null draw of the k rule (:meth:`ChunkedLabelOperator.null_draw`)
is drawn without moving a row: see its notes.

Dask is an optional extra (``dask[array,distributed]``): this module imports
it inside the functions that need it, which run only for a Dask array.
"""

from __future__ import annotations

import numpy as np

from . import kernels
from .codes import is_dask, label_codes
from .labels import LabelOperator
from .lanczos import BLOCK
from .packing import PACKED_CODES


def _dask():
    """The ``dask`` and ``dask.array`` modules (an optional extra: imported on use)."""
    import dask
    import dask.array as da

    return dask, da


def tree_sum(parts, op=np.add):
    """The delayed ``parts`` combined by ``op`` in pairs, level by level: each
    level's adds run where their operands are, and only the total (a K-sized
    array) reaches the client.  Dask's own reductions want a result of known shape
    per block, which the kernels' tables (of varying shapes) are not."""
    dask, _ = _dask()
    add = dask.delayed(op, pure=True)
    while len(parts) > 1:
        pairs = [add(a, b) for a, b in zip(parts[::2], parts[1::2])]
        parts = pairs + parts[len(pairs) * 2 :]
    return parts[0].compute()


def chunked_label_operator(L) -> ChunkedLabelOperator | None:
    """The operator of an ``n x r`` Dask label matrix (every element in every
    run, labels ``0..m``), rechunked to one chunk across the runs; None otherwise."""
    found = label_codes(L)
    if found is None:
        return None
    codes, spans = found
    return ChunkedLabelOperator(codes.rechunk({1: -1}), spans)


class ChunkedLabelOperator(LabelOperator):
    """``S = H H^T`` from a Dask label matrix; vectors over the elements stay on the cluster.

    Parameters
    ----------
    codes : dask.array.Array of shape (n, r)
        The labels, unsigned, chunked by rows, one chunk across the runs.
    spans : array_like of int, shape (r,)
        Run j's labels are ``0..spans[j]-1``.
    scale : dask.array.Array or ndarray of shape (n,), optional
        The diagonal of ``D`` (rechunked like ``codes``); None for S itself.
    packings : Packings, optional
        The packings of the same labels, shared with the operator this one rescales.
    """

    chunked = True
    #: Each pass over the labels is a round trip to the cluster, whose latency
    #: outweighs a few columns' work: G's Krylov space grows a full block a pass
    #: (:meth:`~sca.operators.gram.GramSpectrum._lanczos_of`), never one column.
    pass_columns = BLOCK

    def __init__(self, codes, spans, scale=None, packings=None):
        super().__init__(codes, spans, None, packings)
        self.scale = None if scale is None else self.along(scale)

    # -- vectors over the elements -------------------------------------------
    @property
    def rows(self) -> tuple:
        """The row chunks of the label matrix, which every n-vector shares."""
        return self.codes.chunks[0]

    def along(self, X):
        """``X`` (``n`` or ``n x s``) as a float Dask array chunked like the rows
        (a NumPy array is sent to the cluster)."""
        _, da = _dask()
        if not is_dask(X):
            X = np.asarray(X, dtype=float)
            return da.from_array(X, chunks=(self.rows,) + X.shape[1:])
        chunks = (self.rows,) + tuple((size,) for size in X.shape[1:])
        X = X if X.dtype == float else X.astype(float)
        return X if X.chunks == chunks else X.rechunk(chunks)

    def ones(self):
        """The vector of ones, chunked like the rows."""
        _, da = _dask()
        return da.ones(self.n, chunks=(self.rows,))

    def hold(self, X):
        """``X`` computed and kept on the workers (a Dask array reused later)."""
        return X.persist() if is_dask(X) else X

    def extent(self, x) -> tuple[float, float]:
        dask, _ = _dask()
        low, high = dask.compute(x.min(), x.max())
        return float(low), float(high)

    def _weights(self):
        return self.ones() if self.scale is None else self.scale**2

    # -- the packed codes and the row-block map --------------------------------
    def _pack(self, grouping):
        groups, radix, dtype = grouping.groups, grouping.radix, grouping.dtype
        return self.codes.map_blocks(
            lambda block: kernels.pack(block, groups, radix, dtype).T,
            dtype=dtype,
            chunks=(self.rows, (len(groups),)),
        ).T.persist()

    def _map(self, kernel, *args, by_row=(), limit=PACKED_CODES, gather=False):
        """``kernel(codes[:, block], binoff, *(a[block] for a in by_row), *args)`` for
        each row block, tree-summed to the client (:func:`tree_sum`); with ``gather``
        the blocks' rows (of the elements) as a Dask array chunked like the rows."""
        dask, da = _dask()
        packing = self._packed(limit)
        binoff, packed = packing.binoff, packing.codes
        if gather:
            return packed.T.map_blocks(
                lambda block: kernel(block.T, binoff, *args),
                dtype=float,
                chunks=(self.rows, (args[0].shape[1],)),
            )
        columns = [packed.to_delayed().ravel()]
        for a in by_row:
            a = self.along(a)
            columns.append(a.to_delayed().reshape(a.numblocks[0], -1)[:, 0])
        run = dask.delayed(kernel, pure=True)
        return tree_sum([run(block, binoff, *rows, *args) for block, *rows in zip(*columns)])

    # -- products ------------------------------------------------------------
    def _left(self, X):
        X = self.along(X)
        counts = self._map(kernels.rmat, by_row=(X.reshape(self.n, -1),))
        return (self.packing.columns.T @ counts).reshape((self.n_clusters,) + X.shape[1:])

    def _right(self, Z):
        Z = np.asarray(Z, dtype=float)
        table = self.packing.columns @ Z.reshape(self.n_clusters, -1)
        out = self._map(kernels.mat, table, gather=True)
        return out[:, 0] if Z.ndim == 1 else out

    def _scaled_rows(self, X):
        """``D X`` for a Dask ``X`` (``X`` unscaled)."""
        if self.scale is None:
            return X
        return X * (self.scale if X.ndim == 1 else self.scale[:, None])

    def matmat(self, X, single=False):
        """``(D S D) X``: a Dask array (held on the workers) for a Dask ``X``; for a
        NumPy ``X``, computed and returned as NumPy (in double: ``single`` is
        :meth:`ConsensusOperator.matmat`'s)."""
        if not is_dask(X):
            return np.asarray(self.matmat(self.along(X)))
        out = self._scaled_rows(self._right(self._left(self._scaled_rows(self.along(X)))))
        return out.persist()

    def factor_transpose(self, X):
        return self._left(self._scaled_rows(self.along(X)))

    def factor(self, Z):
        """``(DH) Z`` as a Dask array chunked like the rows (lazy)."""
        return self._scaled_rows(self._right(Z))

    def within_sums(self, labels):
        """For each i, ``sum_j (D S D)_ij`` over the j of i's cluster; for Dask
        ``labels`` a Dask array, from one product with the clusters' indicator
        (built per block from the labels) read back at each row's own cluster."""
        if not is_dask(labels):
            return super().within_sums(labels)
        labels = labels.astype(np.int64).rechunk((self.rows,))
        count = int(labels.max().compute()) + 1
        E = labels.map_blocks(
            lambda block: np.eye(count)[block],
            new_axis=1,
            chunks=(self.rows, (count,)),
            dtype=float,
        )
        return (self.matmat(E) * E).sum(axis=1)

    def _raw_diagonal(self):
        _, da = _dask()
        return da.full(self.n, float(self.spans.size), chunks=(self.rows,))

    def scaled(self, d):
        d = self.along(d)
        return self._sharing(self._with_scale(d if self.scale is None else self.scale * d))

    def _with_scale(self, scale):
        return ChunkedLabelOperator(self.codes, self.spans, scale, self._packings)

    def _elements_components(self, run0, used):
        """Each element's component read off its run-0 label in a map; the count
        from the labels in use (``used``), never from the elements."""
        found = np.unique(run0[used])
        lookup = np.searchsorted(found, run0)
        elements = self.codes[:, 0].map_blocks(lambda codes: lookup[codes], dtype=np.int64)
        return int(found.size), elements

    # -- the null draw ---------------------------------------------------------
    def null_draw(self, rng):
        """Each run's labels permuted uniformly over the elements, drawn chunk by chunk.

        Notes
        -----
        A uniform permutation of run j's labels puts in row chunk b a multiset
        whose counts are multivariate hypergeometric: chunk by chunk, the
        chunk's size drawn without replacement from the labels not yet placed
        (``Generator.multivariate_hypergeometric`` over the run's label
        counts, a ``chunks x labels`` table on the client).  Given those
        counts the chunk's order is uniform, so each chunk lays out its own
        multiset in a random order of its own (a per-chunk seed), on the
        worker that holds it.  The result has the distribution of r
        independent uniform permutations of the runs: the model that the
        in-memory draw (one shared permutation, then each run rotated by
        its own offset, :meth:`LabelOperator.null_draw`) approximates at a
        quarter of the cost.  It is the same null, not the same draw: its
        floor differs from the in-memory one by the null's own fluctuation.
        """
        dask, da = _dask()
        counts = self._run_counts()
        sizes = np.asarray(self.rows, dtype=np.int64)
        tables = np.zeros((len(sizes), self.spans.size, int(self.spans.max())), dtype=np.int64)
        for j, span in enumerate(self.spans):
            left = counts[j, :span].copy()
            for b, size in enumerate(sizes):
                drawn = rng.multivariate_hypergeometric(left, size)
                tables[b, j, :span] = drawn
                left -= drawn
        seeds = rng.integers(0, 2**63, len(sizes))
        lay = dask.delayed(_lay_out, pure=True)
        blocks = [
            da.from_delayed(
                lay(table, seed, self.codes.dtype), (size, self.spans.size), self.codes.dtype
            )
            for table, seed, size in zip(tables, seeds, sizes)
        ]
        return ChunkedLabelOperator(da.concatenate(blocks), self.spans)

    def _run_counts(self) -> np.ndarray:
        """Each run's label counts, ``(r, max span)``: ``H^T 1`` by runs."""
        if self._packings.counts is None:
            totals = np.rint(self._left(self.ones())).astype(np.int64)
            counts = np.zeros((self.spans.size, int(self.spans.max())), dtype=np.int64)
            for j in range(self.spans.size):
                counts[j, : self.spans[j]] = totals[self.groups[j] : self.groups[j + 1]]
            self._packings.counts = counts
        return self._packings.counts

    def _state(self):
        return {"codes": np.asarray(self.codes), "spans": self.spans}


def _lay_out(table: np.ndarray, seed: int, dtype) -> np.ndarray:
    """A chunk of the null: run j's column holds label c ``table[j, c]`` times, in
    a uniformly random order (its own for each run)."""
    rng = np.random.default_rng(seed)
    size = int(table[0].sum())
    out = np.empty((size, table.shape[0]), dtype=dtype)
    labels = np.arange(table.shape[1])
    for j, counts in enumerate(table):
        out[:, j] = rng.permutation(np.repeat(labels, counts))
    return out
