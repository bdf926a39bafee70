"""Element ids: checked once, and the elements of results and answers named by them.

A result is computed with 0-based element indices (how the service's worker
stores it); :func:`with_ids` names its clusters by the elements' ids when it
is shown, and :func:`namer` does the same for a query's answer.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping

from ..errors import SCAError

#: Most bytes of one element id in UTF-8.  Ids name elements in answers, paths
#: and plots' labels: a longer one costs every answer and drawing that shows it.
MAX_ID_BYTES = 256


def check_id(element, field: str) -> str:
    """One element id as text: at most :data:`MAX_ID_BYTES` bytes of valid
    Unicode, without control characters (SCAError naming ``field`` otherwise).

    JSON may carry a lone surrogate (``"\\ud800"``): Python keeps it in the
    string, but it has no UTF-8 form, so it could neither be drawn in a plot
    nor written in a path; a control character cannot be shown either.
    """
    text = str(element)
    for char in text:
        category = unicodedata.category(char)
        if category == "Cs":
            raise SCAError(
                f"{field} holds a lone surrogate (U+{ord(char):04X}): not valid Unicode", field
            )
        if category == "Cc":
            raise SCAError(
                f"{field} holds the control character U+{ord(char):04X}; ids are printable text",
                field,
            )
    size = len(text.encode("utf-8"))
    if size > MAX_ID_BYTES:
        raise SCAError(f"{field} is {size} bytes in UTF-8; at most {MAX_ID_BYTES}", field)
    return text


def check_ids(ids, n: int, field: str = "ids"):
    """Element ids: n distinct strings (or None), each as :func:`check_id`
    wants it (its error names ``field[i]``)."""
    if ids is None:
        return None
    ids = [check_id(element, f"{field}[{i}]") for i, element in enumerate(ids)]
    if len(ids) != n:
        raise SCAError(f"ids has {len(ids)} entries for n = {n} elements", "ids")
    repeated = [i for i, count in Counter(ids).items() if count > 1]
    if repeated:
        raise SCAError(f"ids must be distinct; {repeated[0]!r} repeats", "ids")
    return ids


def resolve_element(element, ids, n: int) -> int:
    """An element given by id (when ids exist) or by 0-based index."""
    if ids is not None and str(element) in ids:
        return ids.index(str(element))
    try:
        index = int(element)
    except (TypeError, ValueError):
        raise SCAError(f"no element {element!r}", "element") from None
    if str(index) != str(element).strip() or not 0 <= index < n:
        raise SCAError(f"no element {element!r}", "element")
    return index


def namer(ids: list | None) -> Callable:
    """Element index -> the element's id (its index when there are no ids)."""
    return (lambda i: ids[i]) if ids is not None else int


def with_ids(result: Mapping, ids: list | None) -> dict:
    """A result of :func:`result_dict` (element indices) with its clusters, and
    those of its trace, as lists of element ids."""
    out = dict(result)
    if ids is None:
        return out
    name = namer(ids)
    if "clusters" in result:  # a paged result lists no members
        out["clusters"] = [[name(i) for i in members] for members in result["clusters"]]
    if out.get("trace"):
        out["trace"] = [
            dict(
                step,
                clusters=None
                if step.get("clusters") is None
                else [[name(i) for i in members] for members in step["clusters"]],
            )
            for step in out["trace"]
        ]
    return out
