"""What a reader of runbook 06 sees at the end: the summary's findings and figures, and what the
demo showed, each from the one result of the run's steps (:class:`~.monitor.Monitored`).
"""
from __future__ import annotations

import pandas as pd

from state_runbooks.common.formatting import format_bytes
from state_runbooks.core.state_limits import RESERVED_HEAP_BYTES
from state_runbooks.running.results import Summary

from .history import History, operators_summary
from .monitor import Monitored
from .verdicts import (
    MIN_TREND_BATCHES,
    SLOWING,
    Thresholds,
    _is_rocksdb,
    _later_half,
    _rise_per_batch,
    executor_heap,
    growth,
)


def summarize(summary: Summary, result: Monitored) -> None:
    """Every finding goes into the summary; so do the history's figures, in its details."""
    for finding in result.findings:
        summary.add(finding)
    h = result.run.history
    summary.details.update({
        "source": result.run.source,
        "query_id": h.query_id, "query_name": h.query_name,
        "batches_seen": h.batches_seen,
        "batch_ids": h.batches["batch_id"].astype(int).tolist(),
        "num_input_rows": h.batches["num_input_rows"].astype(int).tolist(),
        "batch_duration_ms": h.batches["batch_duration_ms"].astype(int).tolist(),
        "operators": operators_summary(h),
    })


def what_this_showed(result: Monitored) -> list[str]:
    """The demo's lessons, each with the figures of this run's history: where they came from, the
    state filling up and then levelling off as the watermark evicts, what the growth verdict
    judges, the rows dropped behind the watermark, and what memory is judged against."""
    history, thresholds = result.run.history, result.thresholds
    per_batch = history.operators.groupby("batch_id")[
        ["num_rows_total", "num_rows_updated", "num_rows_removed",
         "num_rows_dropped_by_watermark"]].sum().fillna(0).astype(int)
    operators = len(history.operator_names())
    return [f"the event log, read after the query ended, gave back the progress Spark reported "
            f"for each of its {history.batches_seen} batches "
            f"({int(history.batches['batch_id'].min())}-{int(history.batches['batch_id'].max())}):"
            f" one row per batch and stateful operator ({operators} here)",
            _eviction_lesson(per_batch),
            _growth_lesson(history, thresholds),
            _late_rows_lesson(history, per_batch),
            _memory_lesson(history, thresholds)]


def _amount(values: pd.Series) -> str:
    """The same number every time, or the range it took."""
    low, high = int(values.min()), int(values.max())
    return f"{low:,}" if low == high else f"{low:,} to {high:,}"


def _eviction_lesson(per_batch: pd.DataFrame) -> str:
    """Where the watermark starts evicting at least half of what each batch adds."""
    total = per_batch["num_rows_total"]
    evicting = per_batch[(per_batch["num_rows_removed"] > 0)
                         & (per_batch["num_rows_removed"] * 2 >= per_batch["num_rows_updated"])]
    if evicting.empty:
        return (f"nothing evicted half of what a batch added: the state went from "
                f"{int(total.iloc[0]):,} to {int(total.iloc[-1]):,} rows")
    start = int(evicting.index[0])
    before = total[total.index < start]
    later = per_batch[per_batch.index >= start]
    if before.empty:
        return (f"the watermark evicted {_amount(later['num_rows_removed'])} rows a batch from "
                f"batch {start} on")
    rise = total[total.index >= before.index[-1]].diff().dropna()
    return (f"the state filled up to {int(before.iloc[-1]):,} rows by batch "
            f"{int(before.index[-1])}; from batch {start} the watermark evicted {_amount(later['num_rows_removed'])} rows "
            f"a batch, and it rose by only {_amount(rise)} a batch")


def _growth_lesson(history: History, t: Thresholds) -> str:
    """What the growth verdict judged on the operator holding the most rows at the end."""
    names = history.operator_names()
    last = history.operators[history.operators["batch_id"] == history.operators["batch_id"].max()]
    largest = int(last.sort_values(["num_rows_total", "operator_index"],
                                   ascending=[False, True])["operator_index"].iloc[0])
    verdict = growth(history, t)[[i for i, _ in names].index(largest)]
    rows = history.operators[history.operators["operator_index"] == largest].sort_values("batch_id")
    if verdict.code == "growth_unknown":
        return (f"{len(rows)} batches are too few for a growth verdict (it needs "
                f"{MIN_TREND_BATCHES}): a young query filling up looks like growth")
    later, start, end, _share = _later_half(rows)
    window = f"over batches {int(later['batch_id'].iloc[0])}-{int(later['batch_id'].iloc[-1])}"
    change = f"{start:,} to {end:,} ({(end - start) / max(start, 1):+.1%})"
    if verdict.code == "state_bounded":
        return (f"{window} the rows fell in some batch, {change}: state_bounded, an info: the "
                "verdict judges the trend, not the size of the change")
    early, late = _rise_per_batch(later)
    if verdict.code == "state_levelling":
        return (f"{window} the rows never fell, {change}, and their rise slowed from {early:+,.1f} "
                f"to {late:+,.1f} a batch: state_levelling, an info. The verdict judges the trend, "
                "not the size of the change: a rise that does not slow is a warning however small")
    return (f"{window} the rows never fell, {change}, {early:+,.1f} then {late:+,.1f} a batch: "
            f"{verdict.code}, a {verdict.severity}, as "
            + ("a rise that does not slow is a warning however small" if late > early * SLOWING
               else f"it slows down but rose by more than {t.growth_warning_share:.0%}"))


def _late_rows_lesson(history: History, per_batch: pd.DataFrame) -> str:
    dropped = per_batch["num_rows_dropped_by_watermark"]
    inputs = int(history.batches["num_input_rows"].fillna(0).sum())
    if not dropped.sum():
        return (f"none of the {inputs:,} input rows came behind the watermark: "
                "numRowsDroppedByWatermark stayed 0")
    hit = dropped[dropped > 0]
    return (f"{int(dropped.sum()):,} of the {inputs:,} input rows came behind the watermark, "
            f"{_amount(hit)} a batch in {len(hit)} batches from batch {int(hit.index[0])}: "
            "dropped, missing from the output, and counted in numRowsDroppedByWatermark, which "
            "counts the rows behind the watermark of the batch before; a row behind only the "
            "batch's own watermark is not counted there, and the state does not keep it either")


def _memory_lesson(history: History, t: Thresholds) -> str:
    if _is_rocksdb(history.operators):
        return ("RocksDB keeps this state in native memory, outside the heap; memory and commit "
                "time vary by machine, so no check asserts them")
    heap, heap_source = executor_heap(history.facts)
    if not heap:
        return (f"memory could not be judged ({heap_source}); memory and commit time vary by "
                "machine, so no check asserts them")
    budget = max(heap - RESERVED_HEAP_BYTES, 0) * t.memory_share_warning
    return (f"HDFS-backed state lives on the heap: the memory verdict compares it with "
            f"{format_bytes(budget)} per executor ({t.memory_share_warning:.0%} of the heap above "
            f"300 MB; {heap_source}); memory and commit time vary by machine, so no check "
            "asserts them")
