"""P = D S D of a label matrix on disk, read a block of rows at a time.

:class:`StackedOperator` is the balanced operator of a clustering whose
label matrix and balancing vector are files (an npy stack or a ``.npy``
file, :mod:`sca.storage`): the queries on a clustering too large to hold
(the custom cluster of Sec. 5.3, an element's row of P) run on it in one
process.  A product ``D H H^T D X`` reads every block once for ``H^T (D X)``
(the K-sized weighted counts of each run's labels) and once more for
``D H`` of those counts, each by the in-memory label operator of the block
(:class:`~sca.operators.labels.LabelOperator`), each block memory-mapped
and let go: the process
holds one block's rows, the K counts and the vectors it multiplies, never
the matrix.  :meth:`StackedOperator.row_blocks` gives one element's row of P
block by block, so the most similar elements are found holding one block.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .. import storage
from .base import ConsensusOperator
from .labels import LabelOperator
from .packing import smallest_unsigned

#: Rows gathered at once within a block (``rows x runs x columns`` floats).
ROWS = 1 << 14


class StackedOperator(ConsensusOperator):
    """``P = D H H^T D`` from a label matrix and a balancing vector on disk.

    Parameters
    ----------
    labels : str
        The ``n x r`` label matrix: an npy stack or a ``.npy`` file (every
        element in every run, labels ``0, 1, ...``).
    scale : str
        The diagonal of D as an npy stack (:func:`sca.storage.write_labels`).
    spans : array_like of int, shape (r,), optional
        Run j's labels are ``0..spans[j]-1``; read off the labels (one pass
        over the blocks) when not given.

    Notes
    -----
    It is P itself (its ``scale`` is None: D is applied as each block is
    read), so it has no unscaled form.
    """

    kind = "stacked"

    def __init__(self, labels: str, scale: str, spans=None):
        self.blocks = storage.stack_blocks(labels)
        self.scale_location = scale
        super().__init__(sum(rows for _, rows in self.blocks))
        if spans is None:
            top = None
            for _, codes in self._codes():
                high = codes.max(axis=0).astype(np.int64)
                top = high if top is None else np.maximum(top, high)
            assert top is not None
            spans = top + 1
        self.spans = np.asarray(spans, dtype=np.int64)

    def _codes(self) -> Iterator[tuple[int, np.ndarray]]:
        """``(start, codes)`` for each run of :data:`ROWS` rows, in order."""
        start = 0
        for path, rows in self.blocks:
            codes = np.load(path, mmap_mode="r", allow_pickle=False).reshape(rows, -1)
            for lo in range(0, rows, ROWS):
                yield start + lo, np.asarray(codes[lo : lo + ROWS])
            start += rows

    def _rows(self) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """``(start, codes, d)`` for each run of :data:`ROWS` rows, in order."""
        for start, codes in self._codes():
            yield start, codes, storage.stack_rows(self.scale_location, start, start + len(codes))

    def _blocks(self) -> Iterator[tuple[int, LabelOperator]]:
        """``(start, D H of those rows)`` for each run of :data:`ROWS` rows, in order:
        the in-memory label operator's products (:class:`LabelOperator`), on one block."""
        dtype = smallest_unsigned(int(self.spans.max()) - 1)
        for start, codes, d in self._rows():
            yield start, LabelOperator(codes.astype(dtype, copy=False), self.spans, d)

    def _product(self, X: np.ndarray) -> np.ndarray:
        flat = np.asarray(X, dtype=float).reshape(self.n, -1)
        counts = np.zeros((int(self.spans.sum()), flat.shape[1]))
        for start, block in self._blocks():  # (DH)^T X, summed over the blocks
            counts += block.factor_transpose(flat[start : start + block.n])
        out = np.empty_like(flat)
        for start, block in self._blocks():  # then (DH) of those counts
            out[start : start + block.n] = block.factor(counts)
        return out.reshape(np.shape(X))

    def _raw_diagonal(self) -> np.ndarray:
        d = storage.stack_rows(self.scale_location, 0, self.n)
        return float(self.spans.size) * d**2

    def row_blocks(self, element: int) -> Iterator[tuple[int, np.ndarray]]:
        """Element ``element``'s row of P, ``p_ij = d_i d_j s_ij`` (``s_ij`` the
        runs that put i and j together), as ``(start, entries)`` per block."""
        found = next(
            (codes[element - start], d[element - start])
            for start, codes, d in self._rows()
            if start <= element < start + codes.shape[0]
        )
        target, d_element = found
        for start, codes, d in self._rows():
            yield start, d_element * d * (codes == target).sum(axis=1)
