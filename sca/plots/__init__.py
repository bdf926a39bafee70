"""Plots of a clustering result: spectrum, trace, consensus, histogram, membership, custom.

matplotlib is imported only when a figure is drawn (``import sca`` and
``import sca.plots`` do not need it).  Figures use the Agg renderer for PNG
and matplotlib's SVG renderer for SVG; nothing touches pyplot's global state.

Inputs are the JSON-shaped result of :func:`sca.pipeline.result_dict` (the
same for the command line and the service) plus, where a plot needs them,
the consensus operator ``S`` (unscaled) and the balanced ``P``:

=============  =========================================================
``spectrum``   result (``eigenvalues``, ``k``, ``gap``)
``trace``      result ``trace`` with x_t, extended with ``P``; or ``P``
``consensus``  ``S`` (aggregated to at most 300 x 300 cells)
``histogram``  ``S`` (all pairs, or a sample of 200 000)
``membership`` result ``membership`` (jobs with ``starts > 1``)
``custom``     a custom-cluster answer (:func:`sca.pipeline.custom_result`)
=============  =========================================================

Examples
--------
>>> import sca, sca.plots  # doctest: +SKIP
>>> out = sca.cluster(consensus=S, ids=ids)  # doctest: +SKIP
>>> png = sca.plots.render("spectrum", out)  # doctest: +SKIP
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from ..errors import SCAError
from . import data

NAMES = ("spectrum", "trace", "consensus", "histogram", "membership", "custom")
MEDIA_TYPES = {"png": "image/png", "svg": "image/svg+xml"}
#: Elements drawn in the trace at most.
TRACE_MAX_ELEMENTS = 150


class PlotUnavailable(SCAError):
    """The plot cannot be drawn from what was given (e.g. membership with one start)."""


def _ids(result: dict, ids):
    return ids if ids is not None else result.get("ids")


def _trace_data(result: dict, P, seed: int):
    labels = np.asarray(result["labels"])
    stop = result.get("iterations")
    elements = data.sample_elements(labels, TRACE_MAX_ELEMENTS)
    horizon = int(min(max(round(1.5 * (stop or 0)) + 5, 15), 200))
    stored = result.get("trace") or []
    if stored and all(step.get("x") is not None for step in stored):
        steps = [int(step["t"]) for step in stored]
        xs = [data.standardise(step["x"])[elements] for step in stored]
        if P is not None and steps[-1] < horizon:
            y = data.standardise(stored[-1]["x"])
            for t in range(steps[-1] + 1, horizon + 1):
                y = data.standardise(P.matmat(y))
                steps.append(t)
                xs.append(y[elements])
        return np.array(xs), np.array(steps), elements, False
    if P is None:
        raise PlotUnavailable(
            "the trace plot needs x_t (run with trace on k = 2 or split "
            "'gaps') or the balanced matrix P",
            "trace",
        )
    return data.trajectory(P, horizon, elements, seed), np.arange(horizon + 1), elements, True


def figure(name: str, result: dict | None, S=None, P=None, ids=None, custom=None, seed: int = 0):
    """The matplotlib Figure of plot ``name`` (see the module docstring for inputs).

    Raises
    ------
    PlotUnavailable
        ``name`` is unknown or its inputs are missing.
    """
    from . import figures

    if name == "custom":
        if custom is None:
            raise PlotUnavailable("the custom plot needs a custom-cluster query", "custom")
        return figures.custom(
            custom["element"], custom["cluster"], custom["ranked"], custom["iterations"]
        )
    if name not in NAMES:
        raise PlotUnavailable(f"no plot {name!r}; plots are {', '.join(NAMES)}", "name")
    if result is None:
        raise PlotUnavailable(f"the {name} plot needs a clustering result", "result")
    if "labels" not in result and name != "spectrum":  # a paged result lists no element
        raise PlotUnavailable(
            f"the {name} plot draws every element; a paged result (per_element) has only "
            "the spectrum plot",
            "name",
        )
    ids = _ids(result, ids)
    labels = np.asarray(result.get("labels", []))
    if name == "spectrum":
        return figures.spectrum(
            result["eigenvalues"],
            int(result["k"]),
            result.get("gap"),
            result.get("rule", "gap"),
            result.get("noise_floors"),
        )
    if name == "trace":
        xs, steps, elements, computed = _trace_data(result, P, seed)
        return figures.trace(xs, steps, elements, labels, result.get("iterations"), ids, computed)
    if name == "membership":
        if result.get("membership") is None:
            raise PlotUnavailable(
                "membership is recorded only when several starts ran (starts > 1)", "membership"
            )
        return figures.membership(result["membership"], labels, ids)
    if S is None:
        raise PlotUnavailable(f"the {name} plot needs the consensus matrix", name)
    if name == "consensus":
        agg = data.aggregate(S, labels)
        return figures.consensus(agg["image"], agg["edges"], agg["order"], agg["bounds"], S.n, ids)
    values, total, sampled = data.consensus_values(S, seed=seed)
    return figures.histogram(values, total, sampled)


def to_bytes(fig, fmt: str) -> bytes:
    """PNG or SVG bytes of a figure (reproducible: no dates, fixed SVG ids)."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if fmt not in MEDIA_TYPES:
        raise PlotUnavailable(f"format must be one of {sorted(MEDIA_TYPES)}, got {fmt!r}", "format")
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    metadata = {"Date": None} if fmt == "svg" else {"Software": None}
    with matplotlib.rc_context({"svg.hashsalt": "sca-plots"}):
        fig.savefig(buffer, format=fmt, metadata=metadata)
    return buffer.getvalue()


def render(name: str, result: dict, fmt: str = "png", **inputs) -> bytes:
    """Plot ``name`` as PNG or SVG bytes; ``inputs`` as for :func:`figure`."""
    if fmt not in MEDIA_TYPES:
        raise PlotUnavailable(f"format must be one of {sorted(MEDIA_TYPES)}, got {fmt!r}", "format")
    return to_bytes(figure(name, result, **inputs), fmt)


def available(result: dict | None, S=None, P=None, custom=None) -> list[str]:
    """The plot names that :func:`figure` can draw from these inputs."""
    if result is None:
        return ["custom"] if custom is not None else []
    names = ["spectrum"]
    stored = result.get("trace") or []
    if P is not None or (stored and all(s.get("x") is not None for s in stored)):
        names.append("trace")
    if S is not None:
        names += ["consensus", "histogram"]
    if result.get("membership") is not None:
        names.append("membership")
    if custom is not None:
        names.append("custom")
    return names


def save_plots(
    directory,
    result: dict | None,
    S=None,
    P=None,
    ids=None,
    custom=None,
    formats=("png",),
    names=None,
    seed: int = 0,
    prefix: str = "",
) -> list[Path]:
    """Write every available plot (or ``names``) to ``directory`` as ``{prefix}{name}.{fmt}``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names or available(result, S, P, custom):
        fig = figure(name, result, S=S, P=P, ids=ids, custom=custom, seed=seed)
        for fmt in formats:
            path = directory / f"{prefix}{name}.{fmt}"
            path.write_bytes(to_bytes(fig, fmt))
            written.append(path)
    return written
