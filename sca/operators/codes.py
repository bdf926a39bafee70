"""A label matrix as the label operator's codes (:mod:`sca.operators.labels`).

An ``n x r`` label matrix suits :class:`~sca.operators.labels.LabelOperator`
when every element is in every run and run j's labels are ``0..spans[j]-1``,
not much sparser than n (:func:`label_spans`); its codes are then the labels in
the smallest unsigned type that holds them (:func:`label_codes`), read in row
blocks, or lazily for a Dask array (:func:`is_dask`).  A null draw's codes are
packed in the groups of the labels it was drawn from (:func:`repack`).
"""

from __future__ import annotations

import numpy as np

from . import kernels
from .packing import Packings, smallest_unsigned

#: Label runs whose labels span more than this (in all) are renumbered first.
_SPAN_SLACK = 1024
_BLOCK_ROWS = 1 << 16


def is_dask(array) -> bool:
    """Whether ``array`` is a Dask array (its chunks may live on other machines)."""
    return type(array).__module__.startswith("dask.")


def label_spans(L) -> np.ndarray | None:
    """Run j's labels ``0..spans[j]-1`` when the ``n x r`` label matrix ``L`` suits
    :class:`~sca.operators.labels.LabelOperator` (every element in every run,
    labels not much sparser than n); None when H must be the sparse matrix of
    the labels used."""
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


def label_codes(L) -> tuple | None:
    """``(codes, spans)`` for an ``n x r`` label matrix with every element in every
    run and labels ``0..m`` not much sparser than n; None otherwise (the caller
    then builds the sparse H).  ``L`` is used as is when its dtype is already
    the smallest that holds its labels (a memory-mapped ``.npy`` is not read
    into memory); otherwise it is converted in row blocks (lazily for a Dask array)."""
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
    return L, spans


def repack(mine: Packings, its: Packings, permuted: np.ndarray) -> None:
    """Fill ``its`` with the packings ``mine`` has made, in the same groups, of the
    codes ``permuted`` (``r x n``: a null draw of the same runs), and share
    ``mine``'s marginals, which a permutation of the elements leaves as they are."""
    its.marginals.update(mine.marginals)
    for limit, packing in mine.packed.items():
        codes = kernels.pack_columns(permuted, packing.groups, packing.radix, packing.codes.dtype)
        its.packed[limit] = packing._replace(codes=codes)
    if mine.wide_known and mine.wide is not None:
        wide = mine.wide
        codes = kernels.pack_columns(
            permuted, wide.groups, wide.radix, wide.codes.dtype, rowmajor=True
        )
        its.wide, its.wide_known = wide._replace(codes=codes), True
