"""The runbooks' figures (matplotlib). Each function returns the Figure it drew."""
from __future__ import annotations


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
    """One line per store over the sampled batches (a table from ``inspection.growth``)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    for store in table.columns:
        ax.plot(table.index, table[store], marker="o", label=store)
    ax.set_xlabel("batch id")
    ax.set_ylabel("rows in state")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
