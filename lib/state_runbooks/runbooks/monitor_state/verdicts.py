"""Verdicts on a query's history, each a :class:`~state_runbooks.running.results.Finding` with
the evidence it rests on in its message.

The thresholds are parameters of the runbook; their defaults and the reason for each are in
:class:`Thresholds`. A verdict that the history cannot decide (too few batches, memory unknown) says
so instead of guessing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from state_runbooks.common.formatting import format_bytes
from state_runbooks.common.spark_settings import (
    DRIVER_MEMORY_CONF,
    EXECUTOR_MEMORY_CONF,
    MASTER_CONF,
)
from state_runbooks.core.growth import is_rising, least_squares_slope
from state_runbooks.core.state_limits import RESERVED_HEAP_BYTES, STATE_HEAP_SHARE
from state_runbooks.running.results import Finding

from .history import History

MIN_TREND_BATCHES = 4  # fewer points cannot tell growth from the fill-up of a young query


@dataclass(frozen=True)
class Thresholds:
    # State that fills its watermark horizon levels off: each batch adds less than the one before.
    # A rise that slows down but still adds more than this share of the level over the later half
    # of the window is still worth a warning; one that does not slow down is one however small.
    growth_warning_share: float = 0.10
    # Every row dropped by the watermark is input that never reaches the output.
    late_rows_warning: int = 1
    # Commit time per state store instance over the batch duration: above one half a batch spends
    # more time writing state than doing its work, and a larger trigger interval or RocksDB with
    # changelog checkpointing is worth a look.
    commit_share_warning: float = 0.5
    # The HDFS-backed provider keeps state on the executor heap, in the part Spark leaves to user
    # objects (core/state_limits.py).
    memory_share_warning: float = STATE_HEAP_SHARE
    # Batches whose processing rate is below their input rate; more than half of them means the
    # backlog grows more often than it shrinks.
    falling_behind_share: float = 0.5


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)b?\s*$", re.IGNORECASE)


def parse_memory(text: str | None) -> int | None:
    """Bytes of a JVM memory setting (``4g``, ``512m``, ``2048``: MB when no unit, as Spark reads
    executor memory)."""
    if not text:
        return None
    match = _SIZE.match(str(text))
    if not match:
        return None
    number, unit = float(match.group(1)), match.group(2).lower()
    return int(number * 1024 ** {"": 2, "k": 1, "m": 2, "g": 3, "t": 4}[unit])


def executor_heap(facts: dict) -> tuple[int | None, str]:
    """Heap of one executor and where that figure comes from."""
    master = facts.get(MASTER_CONF, "")
    key = DRIVER_MEMORY_CONF if master.startswith("local") else EXECUTOR_MEMORY_CONF
    if key in facts:
        return parse_memory(facts[key]), f"{key}={facts[key]}"
    if master:
        return 1024 ** 3, f"{key} not set: Spark's default 1g"
    return None, "executor memory unknown"


def _fmt_duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _is_rocksdb(rows: pd.DataFrame) -> bool:
    return any(str(c).startswith("rocksdb") for c in rows.columns if rows[c].notna().any())


def _later_half(rows: pd.DataFrame) -> tuple[pd.DataFrame, int, int, float]:
    """The window growth is judged on: the later half of an operator's batches, its first and
    last row counts and the change between them as a share of the first."""
    later = rows.iloc[len(rows) // 2:]
    start, end = int(later["num_rows_total"].iloc[0]), int(later["num_rows_total"].iloc[-1])
    return later, start, end, (end - start) / max(start, 1)


SLOWING = 0.5  # the rise per batch has at least halved across the window: it is levelling off


def _rise_per_batch(later: pd.DataFrame) -> tuple[float, float]:
    """The mean rise per batch over the first and over the last half of the window's steps."""
    steps = later["num_rows_total"].diff().dropna().tolist()
    half = max(len(steps) // 2, 1)
    return sum(steps[:half]) / half, sum(steps[-half:]) / half


def growth(history: History, t: Thresholds) -> list[Finding]:
    """Per operator: does the state keep rising at the end of the window, and when would it reach
    the memory it has?"""
    out = []
    heap, heap_source = executor_heap(history.facts)
    executors = max(int(history.facts.get("executors", 1) or 1), 1)
    for operator_index, name in history.operator_names():
        rows = history.operators[history.operators["operator_index"] == operator_index] \
            .sort_values("batch_id")
        label = f"operator {operator_index} ({name})"
        if len(rows) < MIN_TREND_BATCHES:
            out.append(Finding("growth_unknown", "info", f"{label}: {len(rows)} batches are too few "
                               f"to tell growth from a young query filling up (need "
                               f"{MIN_TREND_BATCHES})"))
            continue
        later, start, end, share = _later_half(rows)
        per_batch = least_squares_slope(later["batch_id"], later["num_rows_total"])
        evidence = (f"{label}: {start:,} -> {end:,} rows over batches {int(later['batch_id'].iloc[0])}"
                    f"-{int(later['batch_id'].iloc[-1])} ({share:+.1%}, {per_batch:+,.1f} rows "
                    f"per batch)")
        if not is_rising(later["num_rows_total"], min_points=2):  # the window has >= 4
            out.append(Finding("state_bounded", "info", f"{evidence}: bounded: it fell in some "
                               "batch of the window, so something evicts it"))
            continue
        early, late = _rise_per_batch(later)
        slowing = late <= early * SLOWING
        if slowing and share <= t.growth_warning_share:
            out.append(Finding("state_levelling", "info", f"{evidence}: it never fell, and its rise "
                               f"slowed from {early:+,.1f} to {late:+,.1f} rows a batch across the "
                               "window: levelling off"))
            continue
        trend = (f"its rise slowed from {early:+,.1f} to {late:+,.1f} rows a batch, but it rose by "
                 f"more than {t.growth_warning_share:.0%}" if slowing else
                 f"it never fell and its rise does not slow ({early:+,.1f} then {late:+,.1f} rows a "
                 "batch): nothing in the window shows it levelling off")
        seconds = (later["timestamp"] - later["timestamp"].iloc[0]).dt.total_seconds()
        memory_rate = least_squares_slope(seconds, later["memory_used_bytes"])
        projection = ""
        if heap and not _is_rocksdb(rows) and memory_rate > 0:
            budget = max(heap - RESERVED_HEAP_BYTES, 0) * t.memory_share_warning * executors
            left = budget - float(later["memory_used_bytes"].iloc[-1])
            projection = (f"; memoryUsedBytes rises {format_bytes(memory_rate * 3600)} per hour and "
                          + (f"would reach {format_bytes(budget)} ({t.memory_share_warning:.0%} of "
                             f"the heap above 300 MB on {executors} executor(s), {heap_source}) in "
                             f"about {_fmt_duration(left / memory_rate)}" if left > 0 else
                             f"is already above {format_bytes(budget)}"))
        young = ("; nothing was evicted in this window: a young query still filling its "
                 "watermark horizon looks the same, so watch a longer window"
                 if rows["num_rows_removed"].fillna(0).sum() == 0 else "")
        out.append(Finding("state_growing", "warning", f"{evidence}: {trend}; look for a missing "
                           f"watermark or a key without event time{young}{projection}"))
    return out


def late_rows(history: History, t: Thresholds) -> list[Finding]:
    out = []
    for operator_index, name in history.operator_names():
        rows = history.operators[history.operators["operator_index"] == operator_index]
        dropped = rows["num_rows_dropped_by_watermark"].fillna(0).astype(int)
        total = int(dropped.sum())
        if total == 0:
            continue
        batches = rows.loc[dropped > 0, "batch_id"].astype(int).tolist()
        inputs = int(history.batches["num_input_rows"].fillna(0).sum())
        severity = "warning" if total >= t.late_rows_warning else "info"
        out.append(Finding("late_rows_dropped", severity,
                           f"operator {operator_index} ({name}) dropped {total:,} rows behind the "
                           f"watermark in {len(batches)} of {len(rows)} batches (first in batch "
                           f"{batches[0]}; {total / max(inputs, 1):.1%} of {inputs:,} input rows): "
                           f"that data is missing from the output; if it should count, raise the "
                           f"watermark delay"))
    return out


def commit_share(history: History, t: Thresholds) -> list[Finding]:
    """commitTimeMs is summed over the operator's state store instances (tasks run side by side),
    so the time one task spends committing is commitTimeMs / numStateStoreInstances."""
    out = []
    durations = history.batches.set_index("batch_id")["batch_duration_ms"]
    for operator_index, name in history.operator_names():
        rows = history.operators[history.operators["operator_index"] == operator_index]
        per_task = rows["commit_time_ms"] / rows["num_state_store_instances"].clip(lower=1)
        batch = durations.reindex(rows["batch_id"]).to_numpy(dtype=float)
        shares = per_task.to_numpy(dtype=float) / np.where(batch > 0, batch, np.nan)
        if np.all(np.isnan(shares)):
            continue
        median = float(np.nanmedian(shares))
        message = (f"operator {operator_index} ({name}): a state store instance commits in "
                   f"{float(np.nanmedian(per_task)):,.0f} ms (median), {median:.0%} of the median "
                   f"batch of {float(np.nanmedian(batch)):,.0f} ms")
        if median > t.commit_share_warning:
            out.append(Finding("commit_dominates", "warning", message + f", above "
                               f"{t.commit_share_warning:.0%}: writing state dominates the batch"))
        else:
            out.append(Finding("commit_share", "info", message))
    return out


def memory(history: History, t: Thresholds) -> list[Finding]:
    """The latest batch's state memory per executor against the heap it can use."""
    if history.operators.empty:
        return []
    heap, heap_source = executor_heap(history.facts)
    executors = max(int(history.facts.get("executors", 1) or 1), 1)
    last = history.operators[history.operators["batch_id"] == history.operators["batch_id"].max()]
    out = []
    for _, row in last.iterrows():
        label = f"operator {int(row['operator_index'])} ({row['operator_name']})"
        used = float(row["memory_used_bytes"] or 0)
        instances = max(int(row["num_state_store_instances"] or 1), 1)
        per_instance = f"{format_bytes(used)} in {instances} state store instances " \
                       f"({format_bytes(used / instances)} each)"
        if _is_rocksdb(last[last["operator_index"] == row["operator_index"]]):
            out.append(Finding("rocksdb_memory", "info", f"{label}: {per_instance}; RocksDB keeps "
                               f"this in native memory outside the heap: cap it with "
                               f"spark.sql.streaming.stateStore.rocksdb.boundedMemory"))
            continue
        if not heap:
            out.append(Finding("memory_unknown", "info", f"{label}: {per_instance}; {heap_source}"))
            continue
        budget = max(heap - RESERVED_HEAP_BYTES, 0) * t.memory_share_warning
        per_executor = used / executors
        message = (f"{label}: {per_instance}, {format_bytes(per_executor)} per executor on "
                   f"{executors} executor(s) against {format_bytes(budget)} "
                   f"({t.memory_share_warning:.0%} of the heap above 300 MB, {heap_source})")
        if per_executor > budget:
            out.append(Finding("state_memory_high", "warning", message + ": move to RocksDB or "
                               "add executors (runbook 01)"))
        else:
            out.append(Finding("state_memory", "info", message))
    return out


def falling_behind(history: History, t: Thresholds) -> list[Finding]:
    rates = history.batches[(history.batches["num_input_rows"] > 0)
                            & (history.batches["input_rows_per_second"] > 0)]
    if len(rates) < MIN_TREND_BATCHES:
        return []  # availableNow and once triggers report no input rate: nothing to compare
    behind = rates[rates["processed_rows_per_second"] < rates["input_rows_per_second"]]
    share = len(behind) / len(rates)
    message = (f"{len(behind)} of {len(rates)} batches processed slower than their input arrived "
               f"(median input {rates['input_rows_per_second'].median():,.1f} rows/s, processed "
               f"{rates['processed_rows_per_second'].median():,.1f} rows/s)")
    if share > t.falling_behind_share:
        return [Finding("falling_behind", "warning", message + ": the backlog grows")]
    return [Finding("keeping_up", "info", message)]


ROCKSDB_WATCH = {  # metric -> why it is worth a look when it rises above 0
    "rocksdbWriterStallLatencyMs": "writes waited for compaction",
    "rocksdbNumSnapshotsAutoRepaired": "a state snapshot could not be loaded and was repaired",
    "rocksdbCommitPauseLatency": "commits waited for background work to pause",
}


def rocksdb(history: History, t: Thresholds) -> list[Finding]:
    out = []
    for operator_index, name in history.operator_names():
        rows = history.operators[history.operators["operator_index"] == operator_index]
        if not _is_rocksdb(rows):
            continue
        for metric, why in ROCKSDB_WATCH.items():
            if metric in rows and rows[metric].fillna(0).sum() > 0:
                hits = rows.loc[rows[metric].fillna(0) > 0, "batch_id"].astype(int).tolist()
                out.append(Finding("rocksdb_attention", "warning",
                                   f"operator {operator_index} ({name}): {metric} above 0 in "
                                   f"{len(hits)} batches (first {hits[0]}): {why}"))
        if "rocksdbSstFileSize" in rows:
            sst = rows.sort_values("batch_id")["rocksdbSstFileSize"].fillna(0)
            out.append(Finding("rocksdb_disk", "info", f"operator {operator_index} ({name}): SST files "
                               f"{format_bytes(sst.iloc[0])} -> {format_bytes(sst.iloc[-1])} on local "
                               f"disk over the window"))
    return out


CHECKS = (growth, late_rows, commit_share, memory, falling_behind, rocksdb)


def judge(history: History, thresholds: Thresholds | None = None) -> list[Finding]:
    """Every verdict on the history, in a fixed order."""
    t = thresholds or Thresholds()
    if history.operators.empty:
        return [Finding("no_state", "info", f"query {history.query_id} has no stateful operator in "
                        f"its {history.batches_seen} batches")]
    return [v for check in CHECKS for v in check(history, t)]
