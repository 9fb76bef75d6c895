"""The runbooks' figures as a reader sees them: sizes in MiB as the text says them, batch ids on
whole numbers, and no legend over the data (drawn off screen, without Spark)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from state_runbooks.running import plots  # noqa: E402

BATCHES = pd.Index([0, 1, 2, 3], name="batch")
ROWS = pd.DataFrame({"0/default": [5, 10, 15, 15], "1/default": [20, 60, 120, 120]}, index=BATCHES)


def _drawn(fig):
    fig.canvas.draw()
    return fig


def _legends_clear_of_their_axes(fig) -> bool:
    """Each legend lies outside its axes' plotting area, or (bars) inside it above every bar."""
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        box, area = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
        outside = box.x0 >= area.x1 or box.y0 >= area.y1
        tops = [ax.transData.transform((0, p.get_height()))[1] for p in ax.patches]
        above = bool(tops) and all(box.y0 >= top for top in tops)
        if not (outside or above):
            return False
    return True


def _integer_batch_ticks(fig) -> bool:
    axes = [ax for ax in fig.axes if ax.get_xlabel() == "batch id"]
    return bool(axes) and all(float(t).is_integer() for ax in axes for t in ax.get_xticks())


@pytest.mark.parametrize("draw", [
    lambda: plots.growth(ROWS),
    lambda: plots.growth_projection(ROWS, 10, 400),
    lambda: plots.state_history(ROWS, ROWS * 1024 ** 2, ROWS / 100, ROWS),
], ids=["growth", "projection", "history"])
def test_batch_ids_are_whole_and_legends_cover_no_line(draw):
    fig = _drawn(draw())
    assert _integer_batch_ticks(fig) and _legends_clear_of_their_axes(fig)


def test_sizes_are_in_mib_as_the_text_says_them():
    table = pd.DataFrame({"batch_ms": [10.0, 12.0], "memoryUsedBytes": [2 * 1024 ** 2, 1024 ** 2]},
                         index=["hdfs", "rocksdb"])
    fig = _drawn(plots.provider_benchmark(table))
    titles = [ax.get_title() for ax in fig.axes]
    assert "memoryUsedBytes (MiB)" in titles and not any("(MB)" in t for t in titles)
    assert fig.axes[1].patches[0].get_height() == pytest.approx(2.0)


def test_the_estimate_chart_keeps_its_legend_off_the_bars_and_reads_plain_numbers():
    table = pd.DataFrame({"estimate": [4.35 * 1024 ** 2, 0.2 * 1024 ** 2],
                          "memoryUsedBytes": [4.87 * 1024 ** 2, 0.25 * 1024 ** 2]},
                         index=["window_agg", "dedup"])
    fig = _drawn(plots.estimate_vs_reported(table))
    assert _legends_clear_of_their_axes(fig)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels() if t.get_text()]
    assert labels and not any("10^" in t or "$" in t for t in labels)


def test_the_mean_line_legend_sits_above_the_tallest_bar():
    class Report:
        label, operator_name, num_partitions = "0/default", "dedupe", 4
        rows_per_partition, rows, skew_ratio = [10, 40, 12, 10], 72, 2.2

    fig = _drawn(plots.rows_per_partition([Report()]))
    assert _legends_clear_of_their_axes(fig)
