"""Two states compared: two checkpoints, two batches of one, or a store against the rows it must
hold (a rewrite's plan, a migration's mapping). One way for every runbook and demo that proves
a change kept (or made) the state it should.

Each side is read once and reduced to its count and checksums (:mod:`.row_checksums`): equal
figures mean the same rows. Only a store whose figures differ is compared row by row, in one
Spark job (both sides tagged, grouped by every column, duplicates counted as often as they
occur), to say how many rows are missing and how many were not expected. The driver gets counts.
"""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.errors import spark_errors

from .checkpoint import Checkpoint
from .operators import state_units
from .row_checksums import RowsChecksum, rows_checksum
from .state_reader import per_core_tasks, read_unit

KEY_AND_VALUE = ("key", "value")  # what a store holds wherever its rows sit
WITH_PARTITION = ("key", "value", "partition_id")  # ... and where they sit


@dataclass(frozen=True)
class UnitDiff:
    """One store (or state variable) compared."""
    label: str
    expected: int  # rows the first side holds (or must hold)
    found: int  # rows the second side holds
    missing: int = 0  # rows of the first side not found on the second
    extra: int = 0  # rows of the second side the first does not hold

    @property
    def equal(self) -> bool:
        return self.expected == self.found and not self.missing and not self.extra

    def line(self, first: str = "before", second: str = "after") -> str:
        if self.equal:
            return f"{self.label}: {self.found} rows, equal to the {self.expected} {first}"
        if self.missing < 0:  # only the figures were compared
            return (f"{self.label}: {self.found} rows {second} against {self.expected} {first}, "
                    "DIFFERENT: the rows' checksums differ")
        return (f"{self.label}: {self.found} rows {second} against {self.expected} {first}, "
                f"DIFFERENT: {self.missing} missing, {self.extra} not expected")


def columns_of(df, wanted: tuple[str, ...]) -> list[str]:
    """The compared columns a store's reader shows (some readers show more, e.g. a join's
    side; none fewer)."""
    return [c for c in wanted if c in df.columns]


def diff_frames(spark, label: str, expected, found, columns: list[str],
                expected_figures: RowsChecksum | None = None) -> UnitDiff:
    """Two DataFrames of rows over ``columns``; ``expected_figures`` spares reading the first
    side where its count and checksums are known already (a plan took them). With no
    ``expected`` frame (its rows can no longer be read), only the figures are compared."""
    with spark_errors(f"comparing {label}"):
        a = expected_figures or rows_checksum(per_core_tasks(spark, expected), columns)
        b = rows_checksum(per_core_tasks(spark, found), columns)
        if a == b:
            return UnitDiff(label, a.rows, b.rows)
        if expected is None:
            return UnitDiff(label, a.rows, b.rows, -1, -1)
        return UnitDiff(label, *_row_by_row(spark, expected, found, columns))


def _row_by_row(spark, expected, found, columns: list[str]) -> tuple[int, int, int, int]:
    from pyspark.sql import functions as F
    side = F.col("_side")
    both = (per_core_tasks(spark, expected.select(*columns, F.lit(1).alias("_side")))
            .unionByName(per_core_tasks(spark, found.select(*columns, F.lit(-1).alias("_side")))))
    grouped = both.groupBy(*columns).agg(
        F.sum(side).alias("d"), F.sum(F.when(side == 1, 1).otherwise(0)).alias("e"),
        F.count(F.lit(1)).alias("n"))
    row = grouped.agg(F.sum("e"), F.sum(F.col("n") - F.col("e")),
                      F.sum(F.greatest(F.col("d"), F.lit(0))),
                      F.sum(F.greatest(-F.col("d"), F.lit(0)))).first()
    return tuple(int(v or 0) for v in row)


def diff_checkpoints(a: Checkpoint, b: Checkpoint, batch_a: int = -1,
                     batch_b: int = -1,
                     columns: tuple[str, ...] = KEY_AND_VALUE) -> list[UnitDiff]:
    """Every store of ``a`` at ``batch_a`` against the same store of ``b`` at ``batch_b`` (each
    its last committed batch by default): ``KEY_AND_VALUE`` where the rows may sit on other
    partitions (another partition count), ``WITH_PARTITION`` where they must not."""
    out = []
    units_b = {u.label: u for u in state_units(b)}
    for unit in state_units(a):
        x = read_unit(a, unit, batch_a)
        other = units_b.get(unit.label)
        if other is None:
            out.append(UnitDiff(unit.label, x.count(), 0, x.count(), 0))
            continue
        y = read_unit(b, other, batch_b)
        out.append(diff_frames(a.spark, unit.label, x, y, columns_of(x, columns)))
    for label in sorted(set(units_b) - {u.label for u in state_units(a)}):
        count = read_unit(b, units_b[label], batch_b).count()
        out.append(UnitDiff(label, 0, count, 0, count))
    return out


def diff_lines(diffs: list[UnitDiff], first: str = "before", second: str = "after") -> list[str]:
    return [d.line(first, second) for d in diffs]


def all_equal(diffs: list[UnitDiff]) -> bool:
    return bool(diffs) and all(d.equal for d in diffs)
