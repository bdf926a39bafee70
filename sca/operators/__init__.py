"""The consensus operator S (and P = D S D) in each of its forms.

Every stage talks to S only through :class:`ConsensusOperator`
(:mod:`~sca.operators.base`).  The forms:

* :mod:`~sca.operators.dense` -- :class:`DenseOperator`, an ``n x n`` array;
* :mod:`~sca.operators.sparse` -- :class:`SparseOperator`, a ``scipy.sparse`` matrix;
* :mod:`~sca.operators.factored` -- ``S = H H^T`` (:class:`FactorOperator`),
  with H held as a sparse matrix (:class:`FactoredOperator`);
* :mod:`~sca.operators.labels` -- :class:`LabelOperator`, H read off the label
  runs, packed into combined codes (:mod:`~sca.operators.packing`) that the
  row-block kernels (:mod:`~sca.operators.kernels`, numba loops in
  :mod:`~sca.operators.compiled`, their threads :mod:`~sca.operators.threads`)
  count and gather;
* :mod:`~sca.operators.chunked` -- :class:`ChunkedLabelOperator`, the same on
  a Dask label matrix, every vector over the elements kept on the cluster;
* :mod:`~sca.operators.stacked` -- :class:`StackedOperator`, P of a label
  matrix and balancing vector on disk, read a block at a time (queries);
* :mod:`~sca.operators.state` -- an operator as plain arrays, and back.

The modules import one another in that order only (eigen, reads; base; dense, sparse,
factored; packing, threads, kernels, codes; labels; chunked; stacked; state).
"""

from .base import ConsensusOperator
from .chunked import ChunkedLabelOperator, chunked_label_operator
from .codes import is_dask, label_spans
from .dense import DenseOperator
from .factored import FactoredOperator, FactorOperator
from .labels import LabelOperator, label_operator
from .sparse import SparseOperator
from .stacked import StackedOperator
from .state import operator_from_state, operator_state

__all__ = [
    "ChunkedLabelOperator",
    "ConsensusOperator",
    "DenseOperator",
    "FactorOperator",
    "FactoredOperator",
    "LabelOperator",
    "SparseOperator",
    "StackedOperator",
    "chunked_label_operator",
    "is_dask",
    "label_operator",
    "label_spans",
    "operator_from_state",
    "operator_state",
]
