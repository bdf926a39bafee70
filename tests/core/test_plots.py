"""Plots: the numbers behind them (all three operator forms) and the images."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import sca
from sca import plots
from sca.plots import data
from sca.progress import StageProgress
from tests.conftest import BASEBALL_CSV, BASEBALL_IDS, BASEBALL_S, ROOT, Terminal


def png_size(image: bytes) -> tuple[int, int]:
    assert image[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", image[16:24])


def _forms(S_dense):
    """The same S as a dense, a sparse and a factored operator."""
    return [sca.DenseOperator(S_dense), sca.SparseOperator(sp.csr_array(S_dense))]


@pytest.fixture(scope="module")
def baseball_run():
    """The baseball example run with four starts and the trace: result, S, P, custom cluster."""
    S = sca.consensus_operator(np.array(BASEBALL_S, dtype=float))
    balanced, spec, result, timings = sca.run_stages(S, {"starts": 4, "trace": True})
    out = sca.result_dict(
        S,
        balanced.P,
        sca.balance_dict(balanced),
        sca.spectrum_dict(spec),
        result,
        BASEBALL_IDS,
        timings,
    )
    custom = sca.custom_result(balanced.P, "Rose", BASEBALL_IDS, spec.k, 1, 3)
    return {"result": out, "S": S, "P": balanced.P, "custom": custom}


@pytest.fixture(scope="module")
def labelled():
    """A factored S from label runs with its dense equivalent."""
    rng = np.random.default_rng(3)
    truth = np.repeat([0, 1, 2], [40, 25, 35])
    runs = np.column_stack(
        [np.where(rng.random(100) < 0.1, rng.integers(0, 3, 100), truth) for _ in range(12)]
    )
    S = sca.membership_operator(runs)
    return S, S.to_dense(), truth


def test_aggregate_is_the_reordered_matrix_for_small_n(labelled):
    S, dense, truth = labelled
    scale = np.linspace(0.5, 1.5, S.n)
    for op in [S, *_forms(dense)]:
        for scaled in (op, op.scaled(scale)):
            agg = data.aggregate(scaled, truth)
            order = agg["order"]
            expected = scaled.to_dense()[np.ix_(order, order)]
            np.testing.assert_allclose(agg["image"], expected, atol=1e-12)
            assert list(agg["bounds"]) == [0, 40, 65, 100]


def test_aggregate_block_means_are_bounded_and_exact(labelled):
    S, dense, truth = labelled
    for op in [S, *_forms(dense)]:
        agg = data.aggregate(op, truth, max_cells=7)
        assert agg["image"].shape == (7, 7)
        edges, order = agg["edges"], agg["order"]
        reordered = dense[np.ix_(order, order)]
        a, b = slice(edges[2], edges[3]), slice(edges[5], edges[6])
        assert agg["image"][2, 5] == pytest.approx(reordered[a, b].mean())


@pytest.mark.slow
def test_aggregate_of_a_large_factored_operator_stays_small():
    n = 200_000
    labels = np.arange(n) % 4
    S = sca.membership_operator(np.column_stack([labels, (labels + np.arange(n) // 7) % 4]))
    agg = data.aggregate(S, labels)
    assert agg["image"].shape == (data.MAX_CELLS, data.MAX_CELLS)
    assert np.all(np.isfinite(agg["image"]))


def test_consensus_values_all_pairs_and_sample(labelled):
    S, dense, _ = labelled
    for op in [S, *_forms(dense)]:
        values, total, sampled = data.consensus_values(op)
        assert (total, sampled) == (4950, False)
        np.testing.assert_allclose(np.sort(values), np.sort(dense[np.triu_indices(100, 1)]))
        values, total, sampled = data.consensus_values(op, max_pairs=500, seed=1)
        assert (values.size, total, sampled) == (500, 4950, True)
        assert set(np.round(values, 9)) <= set(np.round(dense[np.triu_indices(100, 1)], 9))


def test_sample_elements_is_bounded_and_keeps_every_cluster():
    labels = np.array([0] * 500 + [1] * 3 + [2] * 97)
    picked = data.sample_elements(labels, 50)
    assert picked.size <= 52 and len(set(picked)) == picked.size
    assert set(labels[picked]) == {0, 1, 2}
    assert list(data.sample_elements(labels[:10], 50)) == list(range(10))


def test_trajectory_is_the_standardised_evolution(baseball_run):
    P = baseball_run["P"]
    xs = data.trajectory(P, 5, np.arange(6), seed=2)
    rng = np.random.default_rng(2)
    x = sca.iteration.random_start(6, rng, 1e-3 / np.sqrt(6))
    for _ in range(5):
        x = P.matmat(x)
    np.testing.assert_allclose(xs[5], (x - x.mean()) / x.std(), atol=1e-9)


@pytest.mark.parametrize("name", plots.NAMES)
@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_every_plot_renders(baseball_run, name, fmt):
    image = plots.render(
        name,
        baseball_run["result"],
        fmt,
        S=baseball_run["S"],
        P=baseball_run["P"],
        custom=baseball_run["custom"],
    )
    if fmt == "png":
        width, height = png_size(image)
        assert width == 800 and 250 <= height <= 1000
    else:
        text = image.decode()
        assert text.lstrip().startswith("<?xml") and "<svg" in text
        assert "Rose" in text or name == "spectrum" or name == "histogram"


def test_plots_are_reproducible(baseball_run):
    one = plots.render("consensus", baseball_run["result"], "svg", S=baseball_run["S"])
    two = plots.render("consensus", baseball_run["result"], "svg", S=baseball_run["S"])
    assert one == two


def test_titles_and_labels_use_the_result(baseball_run):
    fig = plots.figure("spectrum", baseball_run["result"])
    ax = fig.axes[0]
    assert "k = 2" in ax.get_title()
    assert ax.get_xlabel() and ax.get_ylabel()
    fig = plots.figure("consensus", baseball_run["result"], S=baseball_run["S"])
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == BASEBALL_IDS
    fig = plots.figure("custom", None, custom=baseball_run["custom"])
    assert "Rose, Cobb, Fisk" in fig.axes[0].get_title()


def test_unavailable_plots_say_why(baseball_run):
    one_start = dict(baseball_run["result"], membership=None, trace=None)
    with pytest.raises(plots.PlotUnavailable, match="starts > 1"):
        plots.figure("membership", one_start)
    with pytest.raises(plots.PlotUnavailable, match="consensus matrix"):
        plots.figure("histogram", one_start)
    with pytest.raises(plots.PlotUnavailable, match="balanced matrix"):
        plots.figure("trace", one_start)
    with pytest.raises(plots.PlotUnavailable, match="custom-cluster query"):
        plots.figure("custom", one_start)
    with pytest.raises(plots.PlotUnavailable, match="no plot"):
        plots.figure("pie", one_start)
    with pytest.raises(plots.PlotUnavailable, match="format"):
        plots.render("spectrum", one_start, "gif")
    assert plots.available(one_start) == ["spectrum"]


def test_core_imports_without_matplotlib():
    code = (
        "import sys; import sca, sca.plots, sca_client, sca.cli; "
        "print(sorted(m for m in ('matplotlib', 'requests', 'flask') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out.replace("'", '"')) == []


@pytest.mark.slow
def test_cli_cluster_writes_plots(tmp_path, capsys):
    from sca.cli import main

    consensus = BASEBALL_CSV
    assert (
        main(
            [
                "cluster",
                "--consensus",
                str(consensus),
                "--starts",
                "3",
                "--plots",
                str(tmp_path / "plots"),
                "--plot-format",
                "both",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "trace" not in out and out["k"] == 2
    written = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert written == sorted(f"{n}.{f}" for n in plots.NAMES[:-1] for f in ("png", "svg"))
    assert "wrote 10 plots" in captured.err and "\r" not in captured.err
    assert (
        main(
            [
                "custom",
                "--consensus",
                str(consensus),
                "--element",
                "Rose",
                "--min-size",
                "1",
                "--max-size",
                "3",
                "--plots",
                str(tmp_path / "custom"),
            ]
        )
        == 0
    )
    assert [p.name for p in (tmp_path / "custom").iterdir()] == ["custom.png"]


def test_progress_bar_only_on_a_terminal():
    quiet = io.StringIO()
    bar = StageProgress(quiet)
    bar("ensemble", 0.5)
    bar.close()
    assert quiet.getvalue() == ""
    tty = Terminal()
    bar = StageProgress(tty, min_interval=0)
    for j in range(1, 5):
        bar("ensemble", j / 4, f"{j}/4 runs")
    bar("balancing", 0.0)
    bar.close("done")
    text = tty.getvalue()
    assert "ensemble" in text and "100%" in text and "4/4 runs" in text
    assert "\rbalancing" in text and "\rdone" in text and text.endswith("\n")
    assert text.count("\n") == 1  # one line, redrawn in place


def test_cluster_reports_each_stage_to_progress(iris):
    seen = []
    X, _ = iris
    sca.cluster(
        data=X,
        ensemble=[{"algorithm": "kmeans", "k": [3], "runs": 5}],
        progress=lambda stage, fraction: seen.append((stage, round(fraction, 2))),
    )
    assert [s for s, _ in seen] == ["ensemble"] * 5 + ["balancing", "spectral", "iteration"]
    assert seen[4] == ("ensemble", 1.0)


def _extents(fig):
    renderer = fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else None
    if renderer is None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw_without_rendering()
    return renderer


@pytest.mark.parametrize("score", [0.3, 0.97])
def test_custom_legend_covers_no_value(score):
    # a cohort's neighbours are often all close: values printed near x = 1 on every bar
    ranked = [{"id": f"p{i}", "score": score - 0.001 * i} for i in range(1, 31)]
    custom = {"element": "p0", "cluster": ["p0"] + [r["id"] for r in ranked[:9]], "ranked": ranked}
    fig = plots.figure("custom", None, custom=dict(custom, iterations=7))
    renderer = _extents(fig)
    legends = fig.legends + [a.get_legend() for a in fig.axes if a.get_legend()]
    assert legends, "the custom plot names its colours"
    values = [t for t in fig.axes[0].texts if t.get_text()]
    assert len(values) == 25
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for text in values:
            assert not box.overlaps(text.get_window_extent(renderer)), text.get_text()


def test_trace_shades_the_steps_after_the_stop(baseball_run):
    fig = plots.figure("trace", baseball_run["result"], P=baseball_run["P"])
    ax = fig.axes[0]
    stop = baseball_run["result"]["iterations"]
    last = max(float(np.max(line.get_xdata())) for line in ax.get_lines() if len(line.get_xdata()))
    assert last > stop  # the trace runs on past the stop ...
    shaded = [p for p in ax.patches if p.get_label() == "after the stop (not used)"]
    assert len(shaded) == 1  # ... and says so: the span from the stop to the end
    corners = shaded[0].get_patch_transform().transform(shaded[0].get_path().vertices)
    assert corners[:, 0].min() == pytest.approx(stop)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "after the stop (not used)" in labels


def test_spectrum_draws_each_eigenvalues_noise_floor_and_names_the_rule(iris):
    """The noise rule's floor falls along the spectrum: the plot draws it, the
    result reports it, and k_signal counts the eigenvalues above their own floors."""
    X, _ = iris
    result = sca.cluster(data=X, options={"seed": 0})
    floors = result["noise_floors"]
    assert result["rule"] == "noise" and floors and floors[0] == result["noise_floor"]
    values = result["eigenvalues"]
    above = [v > f for v, f in zip(values[1:], floors)]
    assert above[: result["k_signal"] - 1] == [True] * (result["k_signal"] - 1)
    assert result["k_signal"] - 1 == len(above) or not above[result["k_signal"] - 1]
    ax = plots.figure("spectrum", result).axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("noise floor" in label for label in labels)
    assert not any("Perron" in label for label in labels)  # the noise rule, not the paper's
    drawn = [line for line in ax.get_lines() if "noise floor" in str(line.get_label())]
    assert len(drawn) == 1 and len(drawn[0].get_ydata()) >= 2


def test_label_runs_report_their_floors_too():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), 40)[:, None] == np.arange(3)
    runs = np.where(
        rng.random((120, 20)) < 0.2, rng.integers(0, 3, (120, 20)), labels.argmax(1)[:, None]
    )
    result = sca.cluster(labels=runs)
    assert result["k"] == 3 and len(result["noise_floors"]) >= 2
    assert result["noise_floors"][0] == result["noise_floor"]


def test_trace_title_stays_on_the_figure():
    """A cohort's trace (a sample of its elements, a seeded start) has the longest
    title; with the legend beside the axes it must still fit on the figure."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 1.0, (200, 5)) for c in (0, 6, 12)])
    result = sca.cluster(data=X, options={"seed": 0})
    S, _ = sca.pipeline.build_operator(data=X, seed=0)
    fig = plots.figure("trace", result, P=sca.balance(S).P)
    renderer = _extents(fig)
    titles = [t for t in [fig._suptitle, *(a.title for a in fig.axes)] if t and t.get_text()]
    assert titles and any("n = 600" in t.get_text() for t in titles)
    for title in titles:
        box = title.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= fig.bbox.width, (title.get_text(), box)


def test_ids_that_cannot_be_laid_out_are_drawn_short_and_printable(baseball_run):
    """Ids are checked when a job is submitted, but the core draws whatever it is
    given: a 20 kB id is cut, a lone surrogate or control character is U+FFFD."""
    ids = ["x" * 20_000, "\ud800", "bell\x07", "Ott", "y" * 20_000, "Mays"]
    for name in ("consensus", "membership", "trace"):
        fig = plots.figure(
            name, baseball_run["result"], S=baseball_run["S"], P=baseball_run["P"], ids=ids
        )
        for fmt in ("png", "svg"):
            assert plots.to_bytes(fig, fmt)
    fig = plots.figure("consensus", baseball_run["result"], S=baseball_run["S"], ids=ids)
    ticks = {t.get_text() for t in fig.axes[0].get_xticklabels()}
    assert {"\ufffd", "bell\ufffd", "Ott", "Mays"} <= ticks
    assert max(map(len, ticks)) <= 32 and "x" * 31 + "…" in ticks
