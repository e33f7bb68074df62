"""Every figure, rendered from fixtures and checked through matplotlib's artists (no pixels).

Conventions checked: heatmaps have layer 0 at the bottom, heads left to right and a labelled
colour bar (leaderboard and ``headscope rank`` alike); legends sit outside every axes; the
``none`` baseline is drawn over the curves; error bars wherever a stderr exists, with the
stderr's length; a single k gives one tick at k; every figure is also a PDF.
"""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402

from harness.probes.plots import heatmap_figure, layer_lines_figure  # noqa: E402
from harness.schema.results import MetricDefRecord, MetricRecord, ResultEntry, RunResults  # noqa: E402
from leaderboards import load_sources  # noqa: E402
from leaderboards.figures import build_figures, write_figures  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "leaderboards"
RUNS = [DATA / "run_a", DATA / "run_b", DATA / "run_c"]


@pytest.fixture(scope="module")
def sources():
    return load_sources(RUNS)


@pytest.fixture(scope="module")
def figures(sources):
    return dict(build_figures(sources))


def _renderer(fig):
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _data_axes(fig):
    return [ax for ax in fig.axes if not hasattr(ax, "_colorbar")]


def _check_legend_outside(fig):
    renderer = _renderer(fig)
    assert all(ax.get_legend() is None for ax in fig.axes)  # no legend inside an axes
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    for ax in _data_axes(fig):
        assert not box.overlaps(ax.get_window_extent(renderer)), "legend covers an axes"
    whole = fig.bbox
    assert whole.x0 <= box.x0 and box.x1 <= whole.x1 and whole.y0 <= box.y0, "legend cut off"
    return legend


def _check_heatmap(fig, matrix, label):
    (ax,) = _data_axes(fig)
    (image,) = ax.images
    assert image.origin == "lower"
    bottom, top = ax.get_ylim()
    assert bottom < top and bottom < 0 < top  # layer 0 at the bottom
    left, right = ax.get_xlim()
    assert left < 0 < right  # head 0 at the left
    assert ax.get_xlabel() == "head" and ax.get_ylabel() == "layer"
    np.testing.assert_array_equal(np.asarray(image.get_array()), np.asarray(matrix))
    (cbar_ax,) = [a for a in fig.axes if a is not ax]
    assert cbar_ax.get_ylabel() == label


def test_leaderboard_heatmap_follows_the_convention(sources, figures):
    ranking = sources.rankings[0].ranking
    task = ranking.task_names[0]
    name = next(n for n in figures if n.startswith("ram__") and n.endswith(task))
    _check_heatmap(figures[name], ranking.matrix(task), "mean RAM")


def test_rank_heatmap_follows_the_same_convention():
    matrix = np.arange(12.0).reshape(3, 4)  # 3 layers, 4 heads: not square, not symmetric
    _check_heatmap(heatmap_figure(matrix, "RAM — combined"), matrix, "mean RAM")


def test_ablation_curves_error_bars_baseline_and_ticks(sources, figures):
    fig = figures["ablation__tiny-qwen2vl__attn_implementation=sdpa__refcocog_toy"]
    legend = _check_legend_outside(fig)
    (ax,) = fig.axes
    labels = [t.get_text() for t in legend.get_texts()]
    assert any(lb.startswith("top") and lb.endswith("± stderr") for lb in labels)
    assert any(lb.startswith("bottom") for lb in labels)
    assert any(lb.startswith("random") and "mean ± sd over draws" in lb for lb in labels)
    base = next(line for line in ax.lines if line.get_label().startswith("none"))
    curves = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(curves) == len(labels) - 1
    assert all(base.get_zorder() > c.lines[0].get_zorder() for c in curves)  # drawn on top
    assert base.get_color() == "black"
    # bottom-k at k=0.05 in run_a: accuracy 0.5125 ± stderr 0.08 (results.json).
    bottom = next(c for c in curves if c.get_label().startswith("bottom"))
    assert bottom.has_yerr
    (segment,) = bottom.lines[2][0].get_segments()
    assert (segment[0][1], segment[1][1]) == pytest.approx((0.5125 - 0.08, 0.5125 + 0.08))
    low, high = ax.get_ylim()  # every point and error bar in view
    for c in curves:
        ys = [v for seg in c.lines[2][0].get_segments() for _, v in seg]
        ys += list(c.lines[0].get_ydata())
        assert low <= min(ys) and max(ys) <= high, c.get_label()
    ks = sorted({x for c in curves for x in c.lines[0].get_xdata()})
    assert list(ax.get_xticks()) == pytest.approx(ks)
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"{k:g}" for k in ks]
    assert ax.get_xlabel().startswith("k ") and ax.get_ylabel() == "accuracy"


def _entry(name, args, value, stderr):
    label = name + (":" + ",".join(f"{k}={v}" for k, v in sorted(args.items())) if args else "")
    return ResultEntry(
        task="t",
        task_args={},
        split="test",
        task_settings={},
        intervention=label,
        intervention_spec={"name": name, "args": args},
        intervention_resolved={},
        metrics=[MetricRecord("acc", value, stderr, 8)],
        n_samples=8,
    )


def test_single_k_gives_one_meaningful_tick(tmp_path):
    entries = [
        _entry("none", {}, 0.9, 0.03),
        _entry("ablate", {"select": "top", "k": 0.1, "mode": "zero"}, 0.4, 0.05),
        _entry("ablate", {"select": "bottom", "k": 0.1, "mode": "zero"}, 0.88, 0.04),
    ]
    RunResults(
        spec_passed={},
        spec_resolved={},
        headscope_version="0",
        git={},
        environment={},
        model={"family": "f", "pretrained": "m", "dtype": "float32"},
        settings={"dtype": "float32"},
        metric_defs={"t": [MetricDefRecord("acc", True)]},
        entries=entries,
    ).save(tmp_path / "results.json")
    ((_, fig),) = build_figures(load_sources([tmp_path]))
    (ax,) = fig.axes
    _renderer(fig)
    assert list(ax.get_xticks()) == [0.1]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.1"]
    low, high = ax.get_xlim()
    assert low < 0.1 < high and high - low >= 0.1  # not a ±0.004 sliver around k
    assert (0.1 - low) == pytest.approx(high - 0.1)
    (band,) = ax.patches  # the baseline ± stderr
    ys = band.get_path().transformed(band.get_patch_transform()).vertices[:, 1]
    assert (min(ys), max(ys)) == pytest.approx((0.87, 0.93))
    top = next(c for c in ax.containers if c.get_label().startswith("top"))
    (segment,) = top.lines[2][0].get_segments()
    assert (segment[0][1], segment[1][1]) == pytest.approx((0.35, 0.45))


def test_speedup_diagnostics_and_sparsity_figures(figures):
    speed = figures["speedup__tiny-qwen2vl__layer"]
    _check_legend_outside(speed)
    (ax,) = speed.axes
    assert ax.get_xlabel() == "context length (tokens)" and ax.get_xscale() == "log"
    diag = next(f for n, f in figures.items() if n.startswith("diagnostics__"))
    _check_legend_outside(diag)
    assert [a.get_xlabel() for a in diag.axes] == ["layer", "layer"]
    assert [a.get_ylabel() for a in diag.axes] == ["RID", "MixIG"]
    sparsity = figures["sparsity"]
    _check_legend_outside(sparsity)
    assert [a.get_yscale() for a in sparsity.axes] == ["log", "log"]


def test_leaderboard_diagnostics_draw_the_noise_baselines(sources, figures):
    """As headscope diagnose's own plot: each baseline (and ε_RoPE) as a reference level."""
    from leaderboards.diagnostics import unique_diagnostics

    for d in unique_diagnostics(sources.diagnostics):
        assert d.baselines  # the fixtures hold noise baselines
    name, fig = next((n, f) for n, f in figures.items() if n.startswith("diagnostics__"))
    d = next(x for x in unique_diagnostics(sources.diagnostics) if x.variant in name)
    rid, mixig = fig.axes
    for ax, metric in ((rid, "RID"), (mixig, "MixIG")):
        levels = {ln.get_label(): ln.get_ydata()[0] for ln in ax.lines if ln.get_color() == "grey"}
        for base, vals in d.baselines.items():
            assert levels[base] == pytest.approx(vals[metric])
    if d.erope_floor is not None:
        assert any(ln.get_label() == "ε_RoPE" for ln in rid.lines)


def test_sparsity_figure_gives_each_task_its_colour_and_separates_the_curves(sources, figures):
    from matplotlib.colors import to_hex

    left, right = figures["sparsity"].axes
    tasks = {t for f in sources.rankings for t in f.ranking.task_names}
    assert len(tasks) > 1
    by_task = {}
    for line in right.lines:
        if line.get_label().startswith("_"):
            continue
        task = line.get_label().split()[-1]
        by_task.setdefault(task, set()).add(to_hex(line.get_color()))
    assert set(by_task) == tasks
    assert len({c for colours in by_task.values() for c in colours}) == len(tasks)
    # the right panel draws 1 - cumulative share on a log axis: curves that all reach ~1
    # within a few heads still differ there
    curves = [ln.get_ydata() for ln in right.lines if not ln.get_label().startswith("_")]
    assert any(not np.allclose(a, b, equal_nan=True) for a in curves for b in curves)


def test_error_bars_of_an_accuracy_stay_in_0_1(tmp_path):
    entries = [
        _entry("none", {}, 0.99, 0.01),
        _entry("ablate", {"select": "random", "k": 0.1, "mode": "zero"}, 0.95, 0.2),
        _entry("ablate", {"select": "top", "k": 0.1, "mode": "zero"}, 0.1, 0.3),
    ]
    RunResults(
        spec_passed={},
        spec_resolved={},
        headscope_version="0",
        git={},
        environment={},
        model={"family": "f", "pretrained": "m", "dtype": "float32"},
        settings={"dtype": "float32"},
        metric_defs={"t": [MetricDefRecord("acc", True)]},
        entries=entries,
    ).save(tmp_path / "results.json")
    ((_, fig),) = build_figures(load_sources([tmp_path]))
    (ax,) = fig.axes
    bars = {c.get_label().split()[0]: c for c in ax.containers}
    (random,) = bars["random"].lines[2][0].get_segments()
    assert (random[0][1], random[1][1]) == pytest.approx((0.75, 1.0))  # 0.95 ± 0.2, cut at 1
    (top,) = bars["top"].lines[2][0].get_segments()
    assert (top[0][1], top[1][1]) == pytest.approx((0.0, 0.4))  # 0.1 ± 0.3, cut at 0
    (band,) = ax.patches
    ys = band.get_path().transformed(band.get_patch_transform()).vertices[:, 1]
    assert (min(ys), max(ys)) == pytest.approx((0.98, 1.0))


def test_probe_layer_lines_legend_outside_with_reference_levels():
    series = {"RID": {"attention": [0.3, 0.2], "ffn": [0.4, 0.1]}, "MixIG": {"attention": [0, 1]}}
    fig = layer_lines_figure(series, "diag", {"RID": {"noise_delta": 0.6, "ε_RoPE": 0.1}})
    legend = _check_legend_outside(fig)
    assert {"attention", "ffn", "noise_delta", "ε_RoPE"} == {t.get_text() for t in legend.texts}


def test_every_figure_is_written_as_png_and_vector_pdf(sources, tmp_path):
    written = write_figures(sources, tmp_path)
    pngs = sorted(p for p in written if p.suffix == ".png")
    assert pngs and sorted(p for p in written if p.suffix == ".pdf") == [
        p.with_suffix(".pdf") for p in pngs
    ]
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.with_suffix(".pdf").read_bytes()[:5] == b"%PDF-"
