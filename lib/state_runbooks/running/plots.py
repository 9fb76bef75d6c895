"""The runbooks' figures (matplotlib). Each function returns the Figure it drew: sizes in MiB,
as the text says them; batch ids on whole numbers; every legend outside the data it names."""
from __future__ import annotations

MIB = 1024 ** 2


def _batch_axis(ax) -> None:
    """Batch ids are whole numbers: no tick between two batches."""
    from matplotlib.ticker import MaxNLocator

    ax.set_xlabel("batch id")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _legend_outside(ax) -> None:
    """The legend to the right of the axes, where it covers no bar and no line."""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)


def rows_per_partition(reports, max_columns: int = 3):
    """One bar chart per store: rows in each state partition, the mean as a dashed line."""
    import matplotlib.pyplot as plt

    n = max(len(reports), 1)
    cols = min(n, max_columns)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    for ax, report in zip(axes.flat, reports):
        parts = list(range(report.num_partitions))
        ax.bar(parts, report.rows_per_partition, color="#4C72B0")
        if report.rows:
            ax.axhline(report.rows / report.num_partitions, color="black", linestyle="--",
                       linewidth=1, label="mean")
            ax.set_ylim(top=max(report.rows_per_partition) * 1.3)  # headroom for the legend
            ax.legend(loc="upper right", fontsize=8)
        skew = "n/a" if report.skew_ratio is None else f"{report.skew_ratio:.2f}"
        ax.set_title(f"{report.label} ({report.operator_name})\nskew {skew}", fontsize=9)
        ax.set_xlabel("partition")
        ax.set_ylabel("rows")
        if report.num_partitions <= 16:
            ax.set_xticks(parts)
    for ax in list(axes.flat)[len(reports):]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def growth(table, title: str = "State rows per batch"):
    """One line per store over the sampled batches (a table from ``state_growth.growth``)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    for store in table.columns:
        ax.plot(table.index, table[store], marker="o", label=store)
    _batch_axis(ax)
    ax.set_ylabel("rows in state")
    ax.set_title(title)
    _legend_outside(ax)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def provider_benchmark(table, title: str = "The same workload on each state store provider"):
    """One bar chart per measured figure, one bar per provider setup (a table from
    ``enable_rocksdb.benchmark_table``). Sizes in MiB; a missing figure (n/a) draws no bar."""
    import matplotlib.pyplot as plt

    panels = [("batch_ms", "batch duration (ms, median)", 1),
              ("commit_ms", "state commit (ms, median)", 1),
              ("memoryUsedBytes", "memoryUsedBytes (MiB)", MIB),
              ("heap_retained_bytes", "JVM heap retained (MiB)", MIB),
              ("disk_bytes", "bytes on disk (MiB)", MIB)]
    panels = [p for p in panels if p[0] in table.columns]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.0 * len(panels), 3.2), squeeze=False)
    colors = ["#4C72B0", "#DD8452", "#55A868", "#C44E52"]
    for ax, (column, label, scale) in zip(axes.flat, panels):
        values = table[column].astype(float) / scale
        ax.bar(range(len(table.index)), values.fillna(0),
               color=colors[:len(table.index)] * (len(table.index) // len(colors) + 1))
        ax.set_xticks(range(len(table.index)))
        ax.set_xticklabels(table.index, rotation=30, ha="right", fontsize=8)
        ax.set_title(label, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def estimate_vs_reported(table, title: str = "Memory estimate against Spark's memoryUsedBytes"):
    """Grouped bars per workload (a table from ``sizing.plot_table``: one column per figure, in
    bytes); MiB on a log scale, since the widely quoted rule of thumb and RocksDB sit far below the rest."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(8, 3.8))
    columns = list(table.columns)
    width = 0.8 / max(len(columns), 1)
    colors = ["#8C8C8C", "#4C72B0", "#55A868", "#DD8452", "#C44E52"]
    for i, column in enumerate(columns):
        xs = [x + (i - (len(columns) - 1) / 2) * width for x in range(len(table.index))]
        ax.bar(xs, table[column].astype(float) / MIB, width, label=column,
               color=colors[i % len(colors)])
    ax.set_xticks(range(len(table.index)))
    ax.set_xticklabels(table.index)
    ax.set_yscale("log")
    # Plain numbers (0.1, 1, 10) where a log axis would print powers of ten.
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.set_ylabel("MiB (log scale)")
    ax.set_title(title, fontsize=10)
    _legend_outside(ax)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def growth_projection(table, projection_batches, projection_rows, title: str = "State rows: "
                      "measured and projected"):
    """Total rows over the sampled batches (a table from ``state_growth.growth``), and a dashed line
    to the projected rows ``projection_batches`` later."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    totals = table.sum(axis=1)
    ax.plot(totals.index, totals.values, marker="o", label="measured (all stores)")
    last = totals.index[-1]
    ax.plot([last, last + projection_batches], [totals.values[-1], projection_rows],
            linestyle="--", marker="x", label=f"projected, {projection_batches} batches ahead")
    _batch_axis(ax)
    ax.set_ylabel("rows in state")
    ax.set_title(title, fontsize=10)
    _legend_outside(ax)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def category_counts(counts: dict, title: str = "Join keys per category"):
    """Horizontal bars, one per category (a ``{category: count}`` dict, in its order), each
    labelled with its count; categories with no key keep their row, so charts compare."""
    import matplotlib.pyplot as plt

    names = list(counts)
    values = [counts[n] for n in names]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(names) + 1.2))
    bars = ax.barh(range(len(names)), values, color="#4C72B0")
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=9)
    ax.invert_yaxis()
    ax.bar_label(bars, labels=[f"{v:,}" for v in values], padding=3, fontsize=8)
    ax.set_xlabel("keys")
    ax.set_title(title, fontsize=10)
    ax.margins(x=0.15)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def state_history(rows, memory, commit_share, late_rows, title: str = "State over time"):
    """Four panels over batches, one line per operator (tables from ``History.series`` and
    ``monitoring``): rows in state, memoryUsedBytes (MiB), commit time as a share of the batch, and
    rows dropped behind the watermark (bars)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 6), sharex=True)
    panels = [(axes[0][0], rows, 1, "rows in state"),
              (axes[0][1], memory, MIB, "memoryUsedBytes (MiB)"),
              (axes[1][0], commit_share, 0.01, "commit per instance (% of batch)")]
    for ax, table, scale, label in panels:
        for column in table.columns:
            ax.plot(table.index, table[column].astype(float) / scale, marker=".", label=column)
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3)
    _legend_outside(axes[0][1])  # one legend for the four panels: the same operators
    ax = axes[1][1]
    width = 0.8 / max(len(late_rows.columns), 1)
    for i, column in enumerate(late_rows.columns):
        ax.bar(late_rows.index + i * width, late_rows[column].astype(float), width, label=column)
    ax.set_title("rows dropped behind the watermark", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    for ax in axes[1]:
        _batch_axis(ax)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


ROLE_COLOURS = {"metadata": "#8172B2", "offsets": "#4C72B0", "commits": "#55A868",
                "sources": "#CCB974", "state": "#C44E52", "other": "#777777"}


def checkpoint_folder(outline, title: str = "The checkpoint on disk"):
    """The checkpoint's folders as a tree (``core.outline.folder_outline``), each top entry in
    its own colour, each line saying what it holds."""
    import matplotlib.pyplot as plt

    from state_runbooks.core.outline import description

    step, height = 0.32, 0.3
    fig, ax = plt.subplots(figsize=(9.5, 0.5 + height * len(outline)))
    parents: dict[int, int] = {}
    for i, line in enumerate(outline):
        y, x = -i, line.depth * step
        if line.depth and line.depth - 1 in parents:  # the elbow from its folder
            top = -parents[line.depth - 1]
            ax.plot([x - step + 0.08, x - step + 0.08, x - 0.04], [top - 0.35, y, y],
                    color="#BBBBBB", linewidth=1)
        parents[line.depth] = i
        colour = ROLE_COLOURS.get(line.role, ROLE_COLOURS["other"])
        ax.text(x, y, line.name, color=colour, fontsize=9, family="monospace", va="center",
                weight="bold" if line.name.endswith("/") else "normal")
        if description(line):
            ax.text(x + 0.09 * len(line.name) + 0.15, y, description(line), color="#555555",
                    fontsize=8, va="center")
    ax.set_xlim(-0.1, 10)
    ax.set_ylim(-len(outline) + 0.4, 0.6)
    ax.axis("off")
    ax.set_title(title, fontsize=10, loc="left")
    fig.tight_layout()
    return fig


def batch_timeline(points, title: str = "Each batch: its logs, its state version, its "
                                        "watermarks"):
    """Per batch: the offsets entry written before it runs, the commit after, the state version
    it wrote; below, the watermark it applied and the one its commit recorded for the next
    (``core.outline.batch_timeline``), in seconds of event time after the first."""
    import matplotlib.pyplot as plt

    batches = [p.batch_id for p in points]
    fig, (lanes, marks) = plt.subplots(2, 1, figsize=(8.5, 4.6), sharex=True,
                                       gridspec_kw={"height_ratios": [1.1, 1]})
    # Top to bottom in the order a batch writes them.
    rows = (("1. offsets/<batch>", [True] * len(points), ROLE_COLOURS["offsets"]),
            ("2. state version", [p.state_version is not None for p in points],
             ROLE_COLOURS["state"]),
            ("3. commits/<batch>", [p.committed for p in points], ROLE_COLOURS["commits"]))
    for y, (label, present, colour) in enumerate(reversed(rows)):
        xs = [b for b, ok in zip(batches, present) if ok]
        lanes.scatter(xs, [y] * len(xs), color=colour, s=60, marker="s", zorder=3)
        if label.endswith("state version"):
            for p in points:
                if p.state_version is not None:
                    lanes.annotate(str(p.state_version), (p.batch_id, y), textcoords="offset "
                                   "points", xytext=(0, 7), ha="center", fontsize=7)
    lanes.set_yticks(range(len(rows)), [label for label, *_ in reversed(rows)], fontsize=8)
    lanes.set_ylim(-0.6, len(rows) - 0.4)
    lanes.grid(axis="x", color="#EEEEEE")
    first = next((w for p in points for w in (p.watermark_applied_ms, p.watermark_next_ms)
                  if w), 0)

    def seconds(ms):
        return None if not ms else (ms - first) / 1000
    applied = [seconds(p.watermark_applied_ms) for p in points]
    recorded = [seconds(p.watermark_next_ms) for p in points]
    marks.plot(batches, applied, "-s", color=ROLE_COLOURS["offsets"], markersize=5,
               label="applied (offsets)")
    marks.plot(batches, recorded, "o", color=ROLE_COLOURS["commits"],
               label="for the next batch (commits)")
    marks.set_ylabel("watermark: s of event time\nafter the first recorded", fontsize=8)
    _batch_axis(marks)
    _legend_outside(marks)
    lanes.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
