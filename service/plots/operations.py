"""Drawing a finished job's plots from its cached artifacts (no stage is recomputed).

The plots come from :mod:`sca.plots`.  Their inputs are the job's stored
result (element indices), its ids and its cached balanced operator P; the
consensus S is ``P.unscaled()``.  A drawn image is kept in the store beside
the job (``plot:<job>:<name>.<fmt>``, same TTL), so the job page's repeated
requests cost nothing.  matplotlib is imported on the first plot, not when
the app starts, and each figure is drawn in a process of its own within a
time budget (:mod:`.render`).
"""

from __future__ import annotations

from flask import current_app

from sca_worker.problems import store_full
from sca_worker.store import keys

from ..backend import backend
from ..errors import ProblemError, invalid
from ..jobs import operations as jobs


def _plots():
    import sca.plots
    import sca.plots.figures  # noqa: F401 - matplotlib loaded once, before a drawing forks

    return sca.plots


def check_name(name: str, fmt: str) -> None:
    """404 for an unknown plot name or format (before the job is looked up)."""
    plots = _plots()
    if name not in plots.NAMES or fmt not in plots.MEDIA_TYPES:
        raise ProblemError(
            404,
            "Not Found",
            f"no plot {name}.{fmt}; plots are {', '.join(plots.NAMES)} "
            f"as .{' or .'.join(plots.MEDIA_TYPES)}",
            errors={"name": ["unknown plot or format"]},
        )


def plot(job_id: str, name: str, fmt: str, query: dict) -> tuple[bytes, str]:
    """The image bytes and media type of plot ``name`` of job ``job_id``."""
    plots = _plots()
    record = jobs.succeeded(jobs.get_record(job_id))
    store = backend().store
    custom = None
    if name == "custom":
        if query.get("element") is None:
            raise invalid("element", "the custom plot needs ?element= (an element id or index)")
        custom = jobs.custom_clusters(record, query)
        cache_key = None
    else:
        if query:
            extra = sorted(query)
            raise invalid(
                extra[0],
                f"the {name} plot takes no query parameters "
                f"({', '.join(extra)}); they are for the custom plot",
            )
        cache_key = keys.plot(job_id, name, fmt)
        if store.has(cache_key):
            return store.load_bytes(cache_key), plots.MEDIA_TYPES[fmt]
    result = jobs.stored(record, "result")
    # The trace is extended (or, without a stored x_t, computed) with P.
    drawn = ("consensus", "histogram", "trace") if "labels" in result else ()  # paged: none
    P = jobs.balanced(record) if name in drawn else None
    S, ids, seed = (
        None if P is None else P.unscaled(),
        jobs.job_ids(job_id),
        record["options"]["seed"],
    )

    def draw() -> bytes:
        return plots.render(name, result, fmt, S=S, P=P, ids=ids, custom=custom, seed=seed)

    try:
        image = current_app.extensions["sca_plots"].run(draw, plots.PlotUnavailable)
    except plots.PlotUnavailable as exc:
        raise ProblemError(404, "Not Found", str(exc), errors={"name": [str(exc)]}) from None
    if cache_key is not None:
        try:
            store.save_bytes(cache_key, image)
        except Exception as exc:  # a full Redis costs the cache, not the plot
            if not store_full(exc):
                raise
    return image, plots.MEDIA_TYPES[fmt]
