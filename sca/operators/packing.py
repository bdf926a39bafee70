"""How :class:`~sca.operators.labels.LabelOperator` packs label runs into combined codes.

The runs of an ``n x r`` label matrix are grouped, consecutive runs while
the product of their numbers of labels ("spans") fits a limit, and each
group's labels of an element are read as one combined code,
``sum_j codes[:, j] * radix[j]`` over the group's runs j.  With ``Hp`` the
one-hot matrix of the combined codes and ``M`` the 0/1 map from each
combined code to its runs' labels (columns of H), ``H = Hp M`` (Meyer &
Wessell, Sec. 1 and 3), so every product with H is a count or a gather over
the combined codes (:mod:`sca.operators.kernels`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

#: Combined codes of a group of runs fit a byte.
PACKED_CODES = 256


def smallest_unsigned(top: int) -> np.dtype:
    """The smallest unsigned integer dtype holding ``0..top``."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.uint64)


class Layout(NamedTuple):
    """Runs grouped into combined codes: a :class:`Packing` without its codes.

    Attributes
    ----------
    groups : list of list of int
        The runs of each group, consecutive.
    radix : ndarray of int64, shape (r,)
        Run j's weight in its group's combined code.
    binoff : ndarray of int64, shape (g + 1,)
        Offsets of the groups' codes among all ``bins = binoff[-1]`` combined
        codes: group a's codes are bins ``binoff[a]:binoff[a + 1]``.
    columns : scipy.sparse.csr_array of shape (bins, K)
        M: row ``binoff[a] + c`` marks the columns of H (one label of each of
        group a's runs) that combined code c of group a stands for.
    """

    groups: list[list[int]]
    radix: np.ndarray
    binoff: np.ndarray
    columns: sp.csr_array

    @property
    def dtype(self) -> np.dtype:
        """The type of the combined codes: the smallest that holds the largest group's."""
        return smallest_unsigned(int(np.diff(self.binoff).max()) - 1)


class Packing(NamedTuple):
    """A :class:`Layout` with the combined codes of every element.

    Attributes
    ----------
    groups : list of list of int
        The runs of each group, consecutive.
    radix : ndarray of int64, shape (r,)
        Run j's weight in its group's combined code.
    binoff : ndarray of int64, shape (g + 1,)
        Offsets of the groups' codes among all combined codes.
    columns : scipy.sparse.csr_array of shape (bins, K)
        M, the map from combined codes to the columns of H.
    codes : ndarray or dask.array.Array
        The combined codes, of type :attr:`Layout.dtype`: shape ``(g, n)``
        (column-major, one group a row) for the packed products, ``(n, g)``
        (row-major) for the wide one-column products.
    """

    groups: list[list[int]]
    radix: np.ndarray
    binoff: np.ndarray
    columns: sp.csr_array
    codes: Any


class Marginals(NamedTuple):
    """M of a :class:`Layout` cut group by group, zero-padded to one shape.

    Attributes
    ----------
    blocks : ndarray of shape (g, B, width)
        ``blocks[a, c, i] = 1`` where group a's combined code c holds the
        label ``columns[a, i]``; ``B`` is the largest group's codes, ``width``
        its labels.
    columns : ndarray of int, shape (g, width)
        The columns of H of each group's labels; the padding's is K (a spare row).
    """

    blocks: np.ndarray
    columns: np.ndarray


@dataclass
class Packings:
    """The packings of one label matrix, built once and shared by every scaling
    of its operator (and, with new codes, by its null draws).

    Attributes
    ----------
    packed : dict of int to Packing
        Column-major packings by their limit of codes per group.
    marginals : dict of int to Marginals
        The marginals of those packings by the same limits.
    wide : Packing or None
        The row-major wide packing once :attr:`wide_known`; None where it does not pay.
    wide_known : bool
        Whether ``wide`` was decided.
    membership : tuple of two scipy.sparse.csr_array, or None
        ``H`` and ``H^T`` in CSR form, once built.
    counts : ndarray of int, shape (r, max span), or None
        Each run's label counts, once counted (a chunked operator's null draw).
    """

    packed: dict[int, Packing] = field(default_factory=dict)
    marginals: dict[int, Marginals] = field(default_factory=dict)
    wide: Packing | None = None
    counts: np.ndarray | None = None
    wide_known: bool = False
    membership: tuple | None = None


def grouped(spans: np.ndarray, limit: int) -> list[list[int]]:
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


def group_codes(spans: np.ndarray, limit: int) -> list[int]:
    """How many combined codes each group of :func:`grouped` has (a layout without M)."""
    return [int(np.prod(spans[runs])) for runs in grouped(spans, limit)]


def layout(spans: np.ndarray, limit: int = PACKED_CODES) -> Layout:
    """The :class:`Layout` of runs of ``spans`` labels in groups of up to ``limit`` codes.

    Parameters
    ----------
    spans : ndarray of int64, shape (r,)
        Run j's labels are ``0..spans[j]-1``.
    limit : int
        The most combined codes of one group (unless a run alone has more).

    Returns
    -------
    Layout
    """
    groups = grouped(spans, limit)
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
    return Layout(groups, radix, binoff, M)


def marginals(packing: Layout | Packing, offsets: np.ndarray) -> Marginals:
    """The :class:`Marginals` of a packing of runs whose columns of H start at ``offsets``.

    Parameters
    ----------
    packing : Layout or Packing
        The grouping of the runs.
    offsets : ndarray of int64, shape (r + 1,)
        Run j owns columns ``offsets[j]:offsets[j + 1]`` of H; ``offsets[-1]`` is K.

    Returns
    -------
    Marginals
    """
    groups, binoff = packing.groups, packing.binoff
    first = np.array([offsets[runs[0]] for runs in groups])
    last = np.array([offsets[runs[-1] + 1] for runs in groups])
    width = int((last - first).max())
    blocks = np.zeros((len(groups), int(np.diff(binoff).max()), width))
    entries = packing.columns.tocoo()
    group = np.searchsorted(binoff, entries.row, side="right") - 1
    blocks[group, entries.row - binoff[group], entries.col - first[group]] = 1.0
    index = first[:, None] + np.arange(width)
    index[index >= last[:, None]] = int(offsets[-1])
    return Marginals(blocks, index)
