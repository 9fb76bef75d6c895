"""The time series of one query: a table of batches and a table of (batch, operator) figures.

Built from progress objects (``query.lastProgress`` JSON) however they were collected: an event log or
a listener. A batch that was run twice (a restart after a failure) counts once, with its last progress.
An operator's ``operator_index`` is its position in the progress's ``stateOperators`` list, which is the
order of Spark's plan; the demos check that it matches the checkpoint's operator ids.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

# progress field -> column, per state operator
OPERATOR_FIELDS = {
    "numRowsTotal": "num_rows_total", "numRowsUpdated": "num_rows_updated",
    "numRowsRemoved": "num_rows_removed", "memoryUsedBytes": "memory_used_bytes",
    "commitTimeMs": "commit_time_ms", "numRowsDroppedByWatermark": "num_rows_dropped_by_watermark",
    "numShufflePartitions": "num_shuffle_partitions",
    "numStateStoreInstances": "num_state_store_instances",
    "allUpdatesTimeMs": "all_updates_time_ms", "allRemovalsTimeMs": "all_removals_time_ms",
}
EPOCH_WATERMARK = "1970-01-01T00:00:00.000Z"  # the watermark before any event time was seen


@dataclass
class History:
    """Figures per batch and per (batch, operator) of one query."""
    query_id: str
    query_name: str | None
    batches: pd.DataFrame  # one row per batch, by batch_id
    operators: pd.DataFrame  # one row per batch and operator
    source: str = ""  # where the progress came from, for people
    facts: dict = field(default_factory=dict)  # executor memory, executors, master when known

    @property
    def batches_seen(self) -> int:
        return len(self.batches)

    def operator_names(self) -> list[tuple[int, str]]:
        first = self.operators.drop_duplicates("operator_index").sort_values("operator_index")
        return list(zip(first["operator_index"].astype(int), first["operator_name"]))

    def series(self, column: str) -> pd.DataFrame:
        """One column per operator (``<id> <name>``), one row per batch."""
        if self.operators.empty:
            return pd.DataFrame(index=pd.Index([], name="batch_id"))
        table = self.operators.assign(operator=self.operators["operator_index"].astype(str) + " "
                                      + self.operators["operator_name"])
        return table.pivot(index="batch_id", columns="operator", values=column)


def _custom_metrics(op: dict) -> dict:
    # Per-partition entries (SnapshotLastUploaded.partition_3_default) would add a column per
    # partition; they say which snapshot each partition uploaded last, not how the state evolves.
    return {name: value for name, value in (op.get("customMetrics") or {}).items()
            if ".partition_" not in name}


def _sources_sum(progress: dict, name: str) -> float:
    values = [s.get(name) for s in progress.get("sources", [])]
    values = [v for v in values if v is not None and v == v]  # NaN: Spark writes "NaN" for 0/0
    return sum(values) if values else float("nan")


def _timestamp(text):
    return pd.Timestamp(text) if text else pd.NaT


def build_history(progress: list[dict], source: str = "", facts: dict | None = None) -> History:
    """The tables of one query's progress (all of one query id), in batch order."""
    by_batch = {}
    for p in progress:
        by_batch[p["batchId"]] = p  # a batch run again (restart after a failure): keep the last
    batch_rows, operator_rows = [], []
    for batch_id in sorted(by_batch):
        p = by_batch[batch_id]
        ops = p.get("stateOperators") or []
        watermark = (p.get("eventTime") or {}).get("watermark")
        batch_rows.append({
            "batch_id": batch_id, "run_id": p.get("runId"), "timestamp": _timestamp(p.get("timestamp")),
            "batch_duration_ms": p.get("batchDuration"),
            # The progress JSON carries these per source; Spark's own totals are the sums.
            "num_input_rows": _sources_sum(p, "numInputRows"),
            "input_rows_per_second": _sources_sum(p, "inputRowsPerSecond"),
            "processed_rows_per_second": _sources_sum(p, "processedRowsPerSecond"),
            "watermark": _timestamp(watermark) if watermark and watermark != EPOCH_WATERMARK
            else pd.NaT,
            "state_rows_total": sum(op.get("numRowsTotal", 0) for op in ops),
            "state_memory_bytes": sum(op.get("memoryUsedBytes", 0) for op in ops),
            "rows_dropped_by_watermark": sum(op.get("numRowsDroppedByWatermark", 0) for op in ops),
        })
        for operator_index, op in enumerate(ops):
            row = {"batch_id": batch_id, "timestamp": _timestamp(p.get("timestamp")),
                   "operator_index": operator_index, "operator_name": op.get("operatorName", "?")}
            row.update({column: op.get(name) for name, column in OPERATOR_FIELDS.items()})
            row.update(_custom_metrics(op))
            operator_rows.append(row)
    first = progress[-1] if progress else {}
    batches = pd.DataFrame(batch_rows, columns=[
        "batch_id", "run_id", "timestamp", "batch_duration_ms", "num_input_rows",
        "input_rows_per_second", "processed_rows_per_second", "watermark", "state_rows_total",
        "state_memory_bytes", "rows_dropped_by_watermark"])
    operators = pd.DataFrame(operator_rows)
    if operators.empty:
        operators = pd.DataFrame(columns=["batch_id", "timestamp", "operator_index", "operator_name",
                                          *OPERATOR_FIELDS.values()])
    return History(first.get("id", ""), first.get("name"), batches, operators, source,
                   dict(facts or {}))


def operators_summary(history: History) -> list[dict]:
    """Per operator in operator order: its figures per batch, in batch order (for the summary)."""
    out = []
    for operator_index, name in history.operator_names():
        rows = history.operators[history.operators["operator_index"] == operator_index] \
            .sort_values("batch_id")
        out.append({"operator_index": operator_index, "operator_name": name,
                    "batch_ids": rows["batch_id"].astype(int).tolist(),
                    "num_rows_total": rows["num_rows_total"].astype(int).tolist(),
                    "num_rows_dropped_by_watermark":
                        rows["num_rows_dropped_by_watermark"].astype(int).tolist(),
                    "memory_used_bytes": rows["memory_used_bytes"].astype(int).tolist(),
                    "num_state_store_instances": int(rows["num_state_store_instances"].iloc[-1])})
    return out
