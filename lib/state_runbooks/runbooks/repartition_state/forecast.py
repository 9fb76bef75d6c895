"""Rows per partition now and after a repartition, and a checksum of every state row, from one
scan per unit of the operator model.

Spark places a state row by the hash of its partitioning key (:mod:`state_runbooks.core.
state_placement`: the whole key, or the key without its last field, by store). Nothing is
assumed: each rule is checked against every row's ``partition_id`` now, and the forecast uses the rule that places every row where it is; when none does, there is no
forecast for that unit, and it says so.

The row checksum of every key and value (``core/row_checksums.py``) is computed in the same scan,
so the driver never holds the state rows; the verification after a repartition compares it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.common.errors import spark_errors
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import state_units
from state_runbooks.core.row_checksums import (
    RowsChecksum,
    add,
    hash_columns,
    of_row,
    sums,
)
from state_runbooks.core.state_placement import rule_hashes
from state_runbooks.core.state_reader import per_core_tasks, read_unit
from state_runbooks.safety.change import last_committed, read_for_plan


@dataclass
class UnitScan:
    """One unit (store) at one batch."""
    label: str
    rows: int
    checksum: tuple[str, str]  # core/row_checksums.py over every row's key and value
    per_partition: list[int]  # rows in each of the n partitions it was scanned on
    rule: str | None = None  # the placement rule every row follows, None: none found
    after: list[int] | None = None  # rows per partition on the new count, by that rule
    misplaced: dict = field(default_factory=dict)  # rule -> rows it does not place where they are

    @property
    def skew(self) -> float | None:
        return _skew(self.per_partition)

    @property
    def skew_after(self) -> float | None:
        return _skew(self.after) if self.after else None


def _skew(counts: list[int]) -> float | None:
    """Largest partition over the mean partition (1.0: perfectly even)."""
    total = sum(counts)
    return max(counts) / (total / len(counts)) if counts and total else None


def scan_unit(ckpt: Checkpoint, unit, batch_id: int, num_partitions: int,
              new_partitions: int | None = None, committed_now: bool = False) -> UnitScan:
    """Rows per partition (on ``num_partitions``), the placement rule and the checksum; with
    ``new_partitions``, the rows per partition that rule gives on that count. One Spark job:
    grouping sets by partition now and by each rule's partition on the new count.

    ``committed_now``: ``batch_id`` is the batch this session's repartition has just committed,
    read as asked instead of checked against the retained range ``ckpt`` listed before (checking
    it would list the whole state tree again)."""
    from pyspark.sql import functions as F
    df = (read_unit(ckpt, unit, options={"batchId": batch_id}) if committed_now
          else read_unit(ckpt, unit, batch_id))
    values = [c for c in df.columns if c != "partition_id"]
    rules = rule_hashes(df)
    pid = F.col("partition_id")
    hashed = per_core_tasks(ckpt.spark, df).select(
        pid, *hash_columns(values),
        *[(F.pmod(h, F.lit(num_partitions)) != pid).cast("int").alias(f"m{i}")
          for i, h in enumerate(rules.values())],
        *[F.pmod(h, F.lit(new_partitions or 1)).alias(f"n{i}") for i, h in enumerate(rules.values())])
    sets = [["partition_id"]] + ([[f"n{i}"] for i in range(len(rules))] if new_partitions else [])
    aggs = [*sums(), *[F.sum(f"m{i}").alias(f"m{i}") for i in range(len(rules))]]
    with spark_errors(f"scanning {unit.label} at batch {batch_id}"):
        rows = (hashed.groupingSets(sets, *[c for group in sets for c in group])
                .agg(F.grouping_id().alias("set"), *aggs).collect())
    grouped = [c for group in sets for c in group]
    now = [r for r in rows if r["partition_id"] is not None or r["set"] == _set_id(grouped, 0)]
    per_partition = [0] * num_partitions
    whole = RowsChecksum(0, ("0", "0"))
    misplaced = dict.fromkeys(rules, 0)
    for r in now:
        if 0 <= r.partition_id < num_partitions:  # a row beyond them is misplaced by any rule
            per_partition[r.partition_id] = r.rows
        whole = add(whole, of_row(r))
        for i, name in enumerate(rules):
            misplaced[name] += r[f"m{i}"] or 0
    total = whole.rows
    scan = UnitScan(unit.label, total, whole.checksum, per_partition, misplaced=misplaced)
    scan.rule = next((name for name in rules if total and misplaced[name] == 0), None)
    if scan.rule and new_partitions:
        i = list(rules).index(scan.rule)
        counts = {r[f"n{i}"]: r.rows for r in rows if r["set"] == _set_id(grouped, i + 1)}
        scan.after = [counts.get(p, 0) for p in range(new_partitions)]
    return scan


def _set_id(grouped: list[str], index: int) -> int:
    """Spark's grouping_id of the grouping set that groups by ``grouped[index]`` alone: a bit per
    grouping column, set where the column is not grouped, the first column the highest bit."""
    width = len(grouped)
    return (2 ** width - 1) ^ (1 << (width - 1 - index))


def scan_state(ckpt: Checkpoint, batch_id: int, num_partitions: int,
               new_partitions: int | None = None, committed_now: bool = False) -> list[UnitScan]:
    """:func:`scan_unit` for every unit of the checkpoint, in operator order."""
    return [scan_unit(ckpt, unit, batch_id, num_partitions, new_partitions, committed_now)
            for unit in state_units(ckpt)]


def forecast(ckpt: Checkpoint, checks) -> tuple[list[UnitScan] | None, object]:
    """The state of the batch the checks saw committed, on the current count and forecast on
    the new one; None (and the checks saying why) where a live writer raced the read."""
    def scan():
        return scan_state(ckpt, last_committed(ckpt, checks), checks.num_partitions_before,
                          checks.num_partitions_after)
    return read_for_plan(ckpt, checks, scan)


def rows_equal(a: list[UnitScan], b: list[UnitScan]) -> bool:
    """Whether two scans hold the same units with the same rows (count and checksums), wherever
    the rows sit: the state of two checkpoints, or of one before and after a repartition."""
    return [(s.label, s.rows, s.checksum) for s in a] == [(s.label, s.rows, s.checksum) for s in b]
