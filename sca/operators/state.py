"""An operator as plain numeric arrays, and back (a worker's saved artifacts)."""

from __future__ import annotations

import numpy as np

from .base import ConsensusOperator
from .dense import DenseOperator
from .factored import FactoredOperator
from .labels import LabelOperator
from .sparse import SparseOperator

#: Every form that :func:`operator_from_state` restores, by its ``kind``.
FORMS: dict[str, type[ConsensusOperator]] = {
    form.kind: form for form in (DenseOperator, SparseOperator, FactoredOperator, LabelOperator)
}


def operator_state(op: ConsensusOperator) -> dict[str, np.ndarray]:
    """The arrays of :meth:`ConsensusOperator.state <sca.operators.base.ConsensusOperator.state>`.

    Parameters
    ----------
    op : ConsensusOperator
        The operator to save, in any form and scaled or not.

    Returns
    -------
    dict of str to ndarray
        Plain numeric arrays (``kind``, ``n``, ``scale`` when scaled, and the
        form's own) that :func:`operator_from_state` restores.

    See Also
    --------
    operator_from_state : The operator back from these arrays.
    """
    return op.state()


def operator_from_state(state: dict) -> ConsensusOperator:
    """Rebuild an operator from :func:`operator_state`.

    Parameters
    ----------
    state : dict of str to ndarray
        The arrays of :func:`operator_state`.

    Returns
    -------
    ConsensusOperator
        An operator of the form named by ``state["kind"]``.

    Raises
    ------
    ValueError
        If ``state["kind"]`` names no form.

    See Also
    --------
    operator_state : The arrays this function reads.
    """
    kind = str(state["kind"])
    form = FORMS.get(kind)
    if form is None:
        raise ValueError(f"unknown operator kind {kind!r}")
    return form.from_state(state)
