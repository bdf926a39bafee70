"""The checks of options' values, from their records (:mod:`sca.options.records`)."""

from __future__ import annotations

import numbers
from typing import Any

from ..errors import SCAError
from .records import GROUPS, OPTIONS, PREFIX, Option, options_for


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _range_text(option: Option, low=None, high=None) -> str:
    low = option.minimum if low is None else low
    high = option.maximum if high is None else high
    if option.exclusive_minimum:
        return f"> {low:g}"
    if high is None:
        return f">= {low:g}" if low is not None else ""
    return f"in [{low:g}, {high}]"


def check(name: str, value, group: str = "clustering", n: int | None = None):
    """Check one option's value (None means the default); returns it.

    Raises :class:`SCAError` naming the field (``options.k`` for a clustering
    option) and the reason.  With ``n``, the bounds that depend on n (k,
    min_k and k_hat at most n) are checked too.
    """
    options = {o.name: o for o in GROUPS[group]}
    if name not in options:
        raise SCAError(
            f"unknown option {name!r}; known: {sorted(options)}", PREFIX[group].rstrip(".") or name
        )
    option = options[name]
    if value is None:
        if option.required:
            raise SCAError(f"{name} is required", PREFIX[group] + name)
        return None
    field_name = PREFIX[group] + name
    high = option.maximum
    if n is not None and group == "clustering" and name in ("k", "min_k", "k_hat"):
        high = n
    kind = option.type
    if kind == "integer":
        ok = (
            _is_int(value)
            and (option.minimum is None or value >= option.minimum)
            and (high is None or value <= high)
        )
        if not ok:
            bound = (
                f"[{option.minimum:g}, n] = [{option.minimum:g}, {n}]"
                if high == n and n is not None
                else None
            )
            where = f"in {bound}" if bound else _range_text(option, high=high)
            raise SCAError(f"{name} must be an integer {where}, got {value!r}", field_name)
    elif kind == "number":
        ok = (
            isinstance(value, numbers.Real)
            and not isinstance(value, bool)
            and (
                option.minimum is None
                or float(value) > option.minimum
                or (not option.exclusive_minimum and value == option.minimum)
            )
        )
        if not ok:
            raise SCAError(
                f"{name} must be a number {_range_text(option)}, got {value!r}", field_name
            )
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise SCAError(f"{name} must be true or false, got {value!r}", field_name)
    elif kind == "string":
        if value not in (option.choices or ()):
            raise SCAError(f"{name} must be one of {option.choices}, got {value!r}", field_name)
    elif kind == "element":
        if isinstance(value, bool) or not isinstance(value, (str, numbers.Integral)):
            raise SCAError(
                f"{name} must be an element id (string) or 0-based index (integer), got {value!r}",
                field_name,
            )
    return value


def validate(
    options: dict | None, group: str = "clustering", n: int | None = None, scope: str | None = None
) -> dict:
    """Check a dict of options; returns it with every default filled in.

    Unknown names (for ``scope``, when given) are refused; each value is
    checked by :func:`check`; then the rules between options: ``min_k <=
    max_k``, ``min_size <= max_size``, ``k_hat`` large enough for its rule
    and, with ``k`` given, more than k (the gap after λ_k needs λ_{k+1}).
    The first fault raises :class:`SCAError` naming its field.  Without
    ``scope`` every option of the group is known (the clustering group's
    ``ensemble_seed`` too); ``scope="core"`` is what :func:`sca.cluster` takes.
    """
    known = {o.name: o for o in (GROUPS[group] if scope is None else options_for(scope, group))}
    options = dict(options or {})
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise SCAError(
            f"unknown options {unknown}; known: {sorted(known)}",
            PREFIX[group].rstrip(".") or unknown[0],
        )
    out: dict[str, Any] = {name: o.default for name, o in known.items()}
    for name, value in options.items():
        if value is not None:
            out[name] = check(name, value, group, n)
        elif known[name].required:
            check(name, value, group, n)
    if group == "clustering":
        _check_spectral(out, n)
    elif group == "custom":
        low, high = out.get("min_size"), out.get("max_size")
        # min_size first: past n it is the one at fault, whatever max_size (n by default)
        if n is not None and low is not None and low > n:
            raise SCAError(f"min_size must be at most n = {n}, got {low}", "min_size")
        if low is not None and high is not None and high < low:
            raise SCAError(f"max_size must be at least min_size = {low}, got {high}", "max_size")
    return out


def _check_spectral(opts: dict, n: int | None) -> None:
    """The rules between k, k_hat, min_k, max_k and rule."""
    k, k_hat, min_k, max_k = (opts.get(name) for name in ("k", "k_hat", "min_k", "max_k"))
    rule = opts.get("rule") or OPTIONS["rule"].default
    low = max(min_k or 1, 1)
    if max_k is not None and max_k < low:
        raise SCAError(f"max_k must be an integer >= min_k = {low}, got {max_k!r}", "options.max_k")
    if k_hat is None:
        return
    if k is not None:
        # the gap after λ_k needs λ_{k+1}; the same with or without n (the API's
        # schema checks before n is known)
        if k_hat <= k:
            raise SCAError(
                f"k_hat must exceed k = {k} (the gap after λ_k needs λ_(k+1)), got {k_hat}",
                "options.k_hat",
            )
        return
    # "gap" reads λ_j - λ_{j+1} for j >= min_k (2), "perron" needs one gap; "noise" counts.
    least = 1 if rule == "noise" else (2 if rule == "perron" else (min_k or 2) + 1)
    if k_hat < least or (n is not None and k_hat > n):
        raise SCAError(
            f"k_hat must be an integer in [{least}, n] = [{least}, "
            f"{'n' if n is None else n}] for rule {rule!r}, got {k_hat!r}",
            "options.k_hat",
        )
