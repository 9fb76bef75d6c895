"""The verification after Spark's rewriter: the new batch committed, the provider it pins read
back from the newest offsets entry, and every store compared row by row with what the plan says
it must hold (the rows before, without the dropped keys' rows), by key, value and partition.

Each rewritten store is read once, and its count and checksum of every row
(``core/row_checksums.py``) compared with those the plan took of the rows it must hold. Only a
store that differs is compared row by row (both sides grouped by all their columns, duplicates
counted), to say how many rows are missing and how many were not expected. Both run in Spark: the
driver gets counts only.
"""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.errors import spark_errors
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import state_units
from state_runbooks.core.row_checksums import rows_checksum
from state_runbooks.core.state_reader import per_core_tasks, read_unit

from .checks import pinned_kind
from .plan import Plan, key_width_cut, without_dropped


@dataclass
class StoreCheck:
    label: str
    expected: int  # rows the plan says the store holds after
    found: int  # rows read back
    missing: int  # expected rows not found (by key, value and partition)
    extra: int  # rows found that were not expected

    @property
    def ok(self) -> bool:
        return self.expected == self.found and not self.missing and not self.extra


def compare_rows(ckpt: Checkpoint, target: Checkpoint, plan: Plan) -> list[StoreCheck]:
    """Every store of ``target`` at the plan's new batch against ``ckpt`` at the plan's batch
    without the dropped keys."""
    planned = {s.label: s for s in plan.stores}
    out = []
    for unit in state_units(ckpt):
        store = planned[unit.label]
        after = read_unit(target, unit, options={"batchId": plan.new_batch_id})
        with spark_errors(f"checking {unit.label} after the rewrite"):
            found = rows_checksum(per_core_tasks(ckpt.spark, after), store.columns)
        if found == store.after:
            out.append(StoreCheck(unit.label, store.rows_after, found.rows, 0, 0))
            continue
        before = read_unit(ckpt, unit, plan.batch_id)
        keys = plan.dropped_keys.get(unit.operator_id)
        expected = before if keys is None else without_dropped(
            before, keys, key_width_cut(ckpt, unit), plan.dropped_key_counts.get(unit.operator_id))
        with spark_errors(f"comparing {unit.label} row by row"):
            out.append(StoreCheck(unit.label, *_differences(ckpt.spark, expected, after,
                                                            store.columns)))
    return out


def _differences(spark, expected, after, columns: list[str]) -> tuple[int, int, int, int]:
    """Rows expected, rows found, expected rows missing, found rows not expected: one Spark job
    (both sides tagged, grouped by every column, the tags summed: a row's copies on each side
    cancel out), duplicates counted as often as they occur."""
    from pyspark.sql import functions as F
    side = F.col("_side")
    both = (per_core_tasks(spark, expected.select(*columns, F.lit(1).alias("_side")))
            .unionByName(per_core_tasks(spark, after.select(*columns, F.lit(-1).alias("_side")))))
    grouped = both.groupBy(*columns).agg(
        F.sum(side).alias("d"), F.sum(F.when(side == 1, 1).otherwise(0)).alias("e"),
        F.count(F.lit(1)).alias("n"))
    row = grouped.agg(F.sum("e"), F.sum(F.col("n") - F.col("e")),
                      F.sum(F.greatest(F.col("d"), F.lit(0))),
                      F.sum(F.greatest(-F.col("d"), F.lit(0)))).first()
    return tuple(int(v or 0) for v in row)


def verification_lines(target: Checkpoint, plan: Plan, provider_class: str,
                       checks: list[StoreCheck], dropping: bool) -> tuple[bool, list[str]]:
    """The verdicts, one line each; the first value says whether all of them hold."""
    lines = []
    last, newest = target.last_committed_batch_id, target.offset_batch_ids[-1]
    committed = last == plan.new_batch_id == newest
    lines.append(f"{'verified' if committed else 'NOT verified'}: batch {last} committed "
                 f"(expected {plan.new_batch_id}, the last batch before was {plan.batch_id})")
    conf = target.offsets(newest).conf
    pinned = conf.get("spark.sql.streaming.stateStore.providerClass")
    provider_ok = pinned == provider_class
    lines.append(f"{'verified' if provider_ok else 'NOT verified'}: the newest offsets entry "
                 f"(offsets/{newest}) pins {pinned_kind(conf)} ({pinned})")
    rows_ok = True
    for c in checks:
        rows_ok = rows_ok and c.ok
        what = "the rows before without the dropped keys' rows" if dropping else "the rows before"
        lines.append(f"{'verified' if c.ok else 'NOT verified'}: {c.label}: {c.found} rows, "
                     f"{'equal to' if c.ok else 'DIFFERENT from'} {what} ({c.expected}), "
                     f"every row's key, value and partition checksummed"
                     + ("" if c.ok else f"; row by row: {c.missing} missing, {c.extra} unexpected"))
    return committed and provider_ok and rows_ok, lines
