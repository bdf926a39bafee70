"""The six figures, drawn with matplotlib's object API (no pyplot, no global state).

Each function takes plain arrays (see :mod:`sca.plots.data`) and returns a
:class:`matplotlib.figure.Figure` of 800 px width at 100 dpi.  Element ids
label the axes when n is small; otherwise clusters are named ``C1, C2 ...``
with their sizes.
"""

from __future__ import annotations

import unicodedata

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

WIDTH_IN = 8.0
DPI = 100
#: Up to this many elements the axes carry element ids.
IDS_MAX = 40
#: Characters of an element id drawn at most (longer ones are cut with "…").
LABEL_MAX = 32
#: Up to this many elements the trace names each element in its legend.
TRACE_IDS_MAX = 12
_STYLES = ("-", "--", ":", "-.")


def _figure(height: float = 5.0) -> Figure:
    fig = Figure(figsize=(WIDTH_IN, height), dpi=DPI, layout="constrained")
    return fig


def cluster_colours(k: int) -> list:
    """One colour per cluster: tab10, then tab20, then a sampled colormap."""
    if k <= 10:
        return [colormaps["tab10"](i) for i in range(k)]
    if k <= 20:
        return [colormaps["tab20"](i) for i in range(k)]
    return [colormaps["turbo"](v) for v in np.linspace(0.05, 0.95, k)]


def literal(text, limit: int = LABEL_MAX) -> str:
    """``text`` drawn as written, in at most ``limit`` characters.

    A ``$`` would otherwise start mathtext (an id such as ``$x^$`` is a
    mathtext error that fails the whole figure); a character with no UTF-8
    form (a lone surrogate) or a control character is a TypeError or a blank
    in the renderer, so it is drawn as U+FFFD; and laying out a label costs
    time in proportion to its length, so a longer one ends in "…".
    """
    text = str(text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = "".join("\ufffd" if unicodedata.category(c) in ("Cs", "Cc") else c for c in text)
    return text.replace("$", r"\$")


def _name(ids, i) -> str:
    return literal(ids[i]) if ids is not None else str(int(i))


#: How the legend names each rule's choice of k.
RULE_NAMES = {"gap": "largest gap", "perron": "Perron cluster", "noise": "noise floor"}


def spectrum(eigenvalues, k: int, gap, rule: str = "gap", floors=None) -> Figure:
    """Leading eigenvalues of P; the first k (chosen by ``rule``), the gap at k and,
    for the ``"noise"`` rule, each eigenvalue's noise floor (``floors``, from λ2)."""
    values = np.asarray(eigenvalues, dtype=float)
    m = min(values.size, max(k + 8, 12), 40)
    shown = values[:m]
    j = np.arange(1, m + 1)
    fig = _figure()
    ax = fig.add_subplot()
    ax.axvspan(0.5, k + 0.5, color="tab:blue", alpha=0.08, lw=0)
    ax.vlines(j, 0, shown, color="0.75", lw=1)
    rule_text = RULE_NAMES.get(rule, rule)
    chosen = "Perron cluster" if rule == "perron" else f"λ1 … λ{k}"
    ax.plot(j[:k], shown[:k], "o", ms=8, color="tab:blue", label=f"{chosen}: k = {k}")
    if floors:
        floor = np.asarray(floors, dtype=float)[: m - 1]
        ax.step(
            j[1 : floor.size + 1],
            floor,
            where="mid",
            color="tab:orange",
            lw=1.6,
            ls="--",
            label="noise floor (what chance alone gives)",
        )
    if m > k:
        ax.plot(j[k:], shown[k:], "o", ms=7, mfc="white", mec="0.35", label="other eigenvalues")
    if gap is not None and k < m:
        x = k + 0.5
        ax.annotate(
            "",
            xy=(x, shown[k]),
            xytext=(x, shown[k - 1]),
            arrowprops={"arrowstyle": "<->", "color": "tab:red", "lw": 1.6},
        )
        ax.annotate(
            f"gap λ{k} − λ{k + 1} = {gap:.3g}",
            xy=(x, (shown[k - 1] + shown[k]) / 2),
            xytext=(10, 0),
            textcoords="offset points",
            va="center",
            color="tab:red",
            fontsize=11,
        )
    ax.axhline(0, color="0.5", lw=0.8)
    ax.set_xlim(0.3, m + 0.7)
    ax.set_xticks(j if m <= 20 else j[::2])
    ax.set_xlabel("index j (eigenvalues in descending order)", fontsize=11)
    ax.set_ylabel("eigenvalue λj of P", fontsize=11)
    ax.set_title(
        f"Spectrum of P: k = {k} clusters ({rule_text}); {m} of {values.size} eigenvalues shown",
        fontsize=12,
    )
    ax.legend(loc="upper right", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return fig


def trace(
    xs, steps, elements, labels, stop: int | None, ids=None, computed: bool = False
) -> Figure:
    """The entries of x_t against t, coloured by final cluster; the stopping step marked.

    ``xs`` is ``len(steps) x len(elements)``; ``labels`` are the final
    clusters of all elements.  Steps after ``stop`` are shaded and named in the
    legend: they show the iterates holding their clusters, not a later answer.
    """
    xs = np.asarray(xs, dtype=float)
    elements = np.asarray(elements)
    labels = np.asarray(labels)
    k = int(labels.max()) + 1
    colours = cluster_colours(k)
    fig = _figure(5.2)
    ax = fig.add_subplot()
    few = elements.size <= TRACE_IDS_MAX
    alpha = 1.0 if few else max(0.25, min(0.8, 30 / elements.size))
    rank_in_cluster: dict = {}
    handles: list = []
    for col, e in enumerate(elements):
        c = int(labels[e])
        r = rank_in_cluster.get(c, 0)
        rank_in_cluster[c] = r + 1
        style = _STYLES[r % len(_STYLES)] if few else "-"
        (line,) = ax.plot(
            steps,
            xs[:, col],
            style,
            color=colours[c],
            lw=1.8 if few else 0.9,
            alpha=alpha,
            marker="o" if few and len(steps) <= 30 else None,
            ms=3,
        )
        if few:
            line.set_label(f"{_name(ids, e)} (C{c + 1})")
            handles.append(line)
    if not few:
        sizes = np.bincount(labels, minlength=k)
        handles = [
            Line2D([], [], color=colours[c], lw=2, label=f"C{c + 1} (n={sizes[c]})")
            for c in range(min(k, 12))
        ]
    if stop is not None:
        ax.axvline(stop, color="k", ls="--", lw=1.2)
        if steps[-1] > stop:
            # the steps after the stop show that x_t holds its clusters; they are
            # shaded apart so that the lines do not seem to run past the answer
            ax.axvspan(
                stop,
                steps[-1],
                color="0.88",
                alpha=0.6,
                lw=0,
                zorder=0,
                label="after the stop (not used)",
            )
            handles = [*handles, Patch(color="0.88", label="after the stop (not used)")]
        ax.annotate(
            f"stopped at t = {stop}",
            xy=(stop, 1),
            xycoords=("data", "axes fraction"),
            xytext=(4, -14),
            textcoords="offset points",
            fontsize=10,
        )
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("step t", fontsize=11)
    ax.set_ylabel(r"entry of $x_t$, standardised: $(x_t - 1/n)\,/\,\mathrm{sd}$", fontsize=11)
    n = labels.size
    shown = "" if elements.size == n else f"; {elements.size} shown"
    source = "; seeded start" if computed else ""
    # over the figure, not the axes: the legend beside the axes narrows them, and a
    # title centred on them ran off the figure's left edge
    fig.suptitle(
        r"Evolution $x_t^T = x_{t-1}^T P$ by final cluster" + f" (n = {n}{shown}{source})",
        fontsize=12,
    )
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=9)
    ax.grid(alpha=0.3)
    return fig


def consensus(image, edges, order, bounds, n: int, ids=None) -> Figure:
    """The consensus matrix reordered by cluster (block means when aggregated)."""
    image = np.asarray(image, dtype=float)
    g = image.shape[0]
    k = bounds.size - 1
    fig = _figure(7.0)
    ax = fig.add_subplot()
    im = ax.imshow(
        image, cmap="viridis", interpolation="nearest", extent=(0, n, n, 0), aspect="equal"
    )
    for b in bounds[1:-1]:
        ax.axhline(b, color="white", lw=1.2)
        ax.axvline(b, color="white", lw=1.2)
    if n <= IDS_MAX:
        ticks = np.arange(n) + 0.5
        names = [_name(ids, i) for i in order]
        ax.set_xticks(ticks, names, rotation=90, fontsize=9 if n > 20 else 10)
        ax.set_yticks(ticks, names, fontsize=9 if n > 20 else 10)
    elif k <= 20:
        centres = (bounds[:-1] + bounds[1:]) / 2
        names = [f"C{c + 1}\n{bounds[c + 1] - bounds[c]}" for c in range(k)]
        ax.set_xticks(centres, names, fontsize=9)
        ax.set_yticks(centres, [name.replace("\n", " n=") for name in names], fontsize=9)
    ax.set_xlabel("elements ordered by cluster", fontsize=11)
    ax.set_ylabel("elements ordered by cluster", fontsize=11)
    block = "" if g == n else f"; mean over {g}×{g} blocks of ~{n / g:.0f} elements"
    ax.set_title(f"Consensus matrix S by cluster (n = {n}, k = {k}){block}", fontsize=12)
    fig.colorbar(im, ax=ax, shrink=0.8, label="s_ij" if g == n else "mean s_ij")
    return fig


def histogram(values, total: int, sampled: bool) -> Figure:
    """Distribution of the off-diagonal consensus values (the paper's Fig. 4.1)."""
    values = np.asarray(values, dtype=float)
    fig = _figure(4.8)
    ax = fig.add_subplot()
    distinct = np.unique(values)
    if distinct.size <= 30 and np.allclose(distinct, np.round(distinct)):
        step = max(1.0, float(np.ceil((distinct[-1] - distinct[0] + 1) / 50)))
        bins: int | list[float] = np.arange(
            distinct[0] - 0.5 * step, distinct[-1] + step, step
        ).tolist()
    else:
        bins = 40
    ax.hist(values, bins=bins, color="tab:blue", edgecolor="white", lw=0.5)
    ax.set_xlabel("consensus value s_ij (i < j)", fontsize=11)
    ax.set_ylabel("number of pairs" + (" in the sample" if sampled else ""), fontsize=11)
    what = (
        f"a uniform sample of {values.size:,} of {total:,} pairs"
        if sampled
        else f"all {total:,} pairs"
    )
    ax.set_title(f"Distribution of consensus values: {what}", fontsize=12)
    ax.grid(axis="y", alpha=0.3)
    return fig


def membership(matrix, labels, ids=None, max_columns: int = 2000) -> Figure:
    """Each element's share of starts in each cluster (stacked), ordered by cluster."""
    M = np.asarray(matrix, dtype=float)
    labels = np.asarray(labels)
    n, k = M.shape
    own = M[np.arange(n), labels]
    order = np.lexsort((-own, labels))
    colours = cluster_colours(k)
    fig = _figure(5.2 if n > IDS_MAX else max(3.5, 1.2 + 0.22 * n))
    ax = fig.add_subplot()
    if n <= IDS_MAX:
        y = np.arange(n)
        left = np.zeros(n)
        for c in range(k):
            ax.barh(y, M[order, c], left=left, color=colours[c], label=f"C{c + 1}", height=0.8)
            left += M[order, c]
        ax.set_yticks(y, [_name(ids, i) for i in order], fontsize=9 if n > 20 else 10)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of starts", fontsize=11)
        ax.set_ylabel("element (ordered by cluster)", fontsize=11)
    else:
        cols = (
            order
            if n <= max_columns
            else order[np.linspace(0, n - 1, max_columns).round().astype(int)]
        )
        x = np.arange(cols.size)
        ax.stackplot(
            x, M[cols].T, colors=colours, labels=[f"C{c + 1}" for c in range(k)], step="mid"
        )
        ax.set_xlim(0, cols.size - 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel(
            "elements ordered by cluster, then by confidence"
            + ("" if cols.size == n else f" ({cols.size} of {n} shown)"),
            fontsize=11,
        )
        ax.set_ylabel("share of starts", fontsize=11)
    uncertain = int(np.sum(own < 1.0))
    ax.set_title(
        f"Membership across starts: {uncertain} of {n} elements not always in their cluster",
        fontsize=12,
    )
    ax.legend(
        loc="lower right" if n > IDS_MAX else "upper left",
        bbox_to_anchor=(1, 0) if n > IDS_MAX else (1.01, 1),
        fontsize=9,
        ncol=1 if k <= 12 else 2,
    )
    return fig


def custom(element, cluster, ranked, iterations, limit: int = 25) -> Figure:
    """A custom-cluster query: the target's neighbours ranked, the cluster's members marked."""
    total = len(ranked)
    ranked = list(ranked)[:limit]
    members = {str(m) for m in cluster}
    names = [str(r["id"]) for r in ranked]
    element, cluster = literal(element), [literal(m) for m in cluster]
    scores = [float(r["score"]) for r in ranked]
    inside = [name in members for name in names]
    fig = _figure(max(3.2, 1.4 + 0.28 * len(ranked)))
    ax = fig.add_subplot()
    y = np.arange(len(ranked))
    ax.barh(y, scores, color=["tab:blue" if i else "0.7" for i in inside], height=0.7)
    for yi, s in zip(y, scores):
        ax.text(min(s, 1.0) + 0.01, float(yi), f"{s:.3f}", va="center", fontsize=9)
    ax.set_yticks(y, [literal(name) for name in names], fontsize=10 if len(ranked) <= 20 else 9)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.12)
    ax.set_xlabel(f"closeness to {element} (1 = same entry of x_t)", fontsize=11)
    shown = "" if total <= limit else f"; {limit} of {total} shown"
    ax.set_ylabel(f"element (most similar first{shown})", fontsize=11)
    listed = ", ".join(str(m) for m in cluster[:8]) + (" …" if len(cluster) > 8 else "")
    ax.set_title(f"Custom cluster of {element} (t = {iterations}): {{{listed}}}", fontsize=12)
    # below the axes, not on them: inside, it covered the values printed beside the last bars
    fig.legend(
        handles=[
            Patch(color="tab:blue", label=f"in the cluster ({len(cluster)} with {element})"),
            Patch(color="0.7", label="outside"),
        ],
        loc="outside lower center",
        ncols=2,
        fontsize=9,
    )
    ax.grid(axis="x", alpha=0.3)
    return fig
