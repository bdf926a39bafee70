"""How many of P's largest eigenvalues are computed: k̂ (Meyer & Wessell, Sec. 3).

All of them when that is cheap; else :data:`DEFAULT_K_HAT`, grown by the
``"noise"`` rule until the spectrum reaches its floor, up to ``max_k_hat`` and
the eigensolver's memory budget (:func:`grown_eigenvalues`): ``eigsh``'s
(:func:`sca.components.affordable`), or a kept Krylov space's where P's form
has one (``eigenvalue_budget``: 2,492 eigenvalues of G at K = 4·10⁴, where
``eigsh`` on P at n = 10⁵ would stop at 335).  A
disconnected S has its components' eigenvalues 1 counted rather than computed
(:func:`split_eigenvalues`).
"""

from __future__ import annotations

import numpy as np

from .components import Components, affordable, nontrivial_eigenvalues
from .null import ZERO
from .operators import ConsensusOperator

#: Eigenvalues computed first when not all of them are cheap (the noise rule grows from here).
DEFAULT_K_HAT = 20
#: The noise rule grows k̂ no further than this (and never past n).
MAX_K_HAT = 1000
#: Eigenvalues past k̂ looked at before k̂ is doubled (two: the candidates read one past k).
PROBE = 2


def grown_eigenvalues(
    P: ConsensusOperator, k_hat: int | None, floor: float | None, max_k_hat: int
) -> tuple[np.ndarray, bool, int | None]:
    """P's largest eigenvalues: k_hat of them, all when cheap, or grown to the floor;
    whether k̂ stopped at its cap above the floor, and the budget when it set the cap."""
    limit = P.n if P.full_spectrum_cheap else max(affordable(P.n), P.eigenvalue_budget)
    if k_hat is not None:
        return P.eigenvalues(min(k_hat, limit)), False, (limit if k_hat > limit else None)
    if P.full_spectrum_cheap:
        # past the rank only zeros: one of them, not n - rank (an n-vector)
        values = P.eigenvalues(min(P.n, P.rank_bound + 1))
        # the zeros past the rank of S (label runs) say nothing: keep one
        return values[: max(2, min(values.size, int(np.sum(values > ZERO)) + 1))], False, None
    wanted = min(max(int(max_k_hat), DEFAULT_K_HAT), P.n)
    k_hat, cap = min(DEFAULT_K_HAT, P.n, limit), min(wanted, limit)
    while True:
        # k̂ eigenvalues and a look just past the last, in one solve (an iterative
        # solver restarts from scratch for each): the signal often ends there, and
        # the bulk beyond it (many near-equal eigenvalues) is what a doubled k̂ pays most for
        values = P.eigenvalues(k_hat if floor is None else min(k_hat + PROBE, cap), floor=floor)
        if floor is None or values[min(k_hat, values.size) - 1] <= floor:
            return values[:k_hat], False, None
        if k_hat >= cap:
            return values[:k_hat], True, (limit if wanted > limit else None)
        if values[-1] <= floor:
            return values, False, None
        if values.size >= cap:
            return values, True, (limit if wanted > limit else None)
        # a kept Krylov space may already show more above the floor: straight to them
        known = P.known_above(floor)
        k_hat = min(known if known > values.size else 2 * k_hat, cap)


def split_eigenvalues(
    P: ConsensusOperator,
    parts: Components,
    k_hat: int | None,
    floor: float | None,
    max_k_hat: int,
) -> tuple[np.ndarray, bool, int | None]:
    """:func:`grown_eigenvalues` of a disconnected S: its components' 1s counted, the rest
    computed (:mod:`sca.components`)."""
    ones = np.ones(parts.count if k_hat is None else min(parts.count, k_hat))
    total = parts.nontrivial

    def listed(count: int) -> np.ndarray:
        return np.concatenate([ones, nontrivial_eigenvalues(P, parts, count)])

    if k_hat is not None:
        values = listed(k_hat - ones.size)
        return values, False, (values.size if values.size < k_hat else None)
    if floor is None:
        return listed(max(DEFAULT_K_HAT - ones.size, 1)), False, None
    cap = min(max(int(max_k_hat), DEFAULT_K_HAT), total)
    count = min(DEFAULT_K_HAT, cap)
    while True:
        values = listed(count)
        rest = values[ones.size :]
        if rest.size == 0 or rest[-1] <= floor or rest.size >= total:
            return values, False, None
        if rest.size < count:  # the budget, not the spectrum, ended the list
            return values, True, int(rest.size)
        if count >= cap:
            return values, True, None
        count = min(2 * count, cap)


def components_note(parts: Components) -> str:
    """The note of a spectrum whose S has several connected components."""
    single = parts.singletons
    alone = f", {single} of them single elements" if single else ""
    return (
        f"S has {parts.count} connected components{alone}: as many eigenvalues 1, "
        "counted from the components, not computed"
    )
