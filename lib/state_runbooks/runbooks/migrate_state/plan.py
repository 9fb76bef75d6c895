"""What a migration will write, store by store, computed before anything is written: the rows
now, the same rows in the new schema (a few shown, before and after), how many move to another
partition, and the count and checksum every rewritten store must equal after.

One Spark job per store. A mapping Spark cannot evaluate (a ``fill`` that does not parse or
resolve, a cast that fails on a row) is refused here in one line, and so is one that would lose
rows: two old keys mapped to one new key (Spark keeps one value per key), or a null in a field
the changed query declares never null.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError, spark_error_text, spark_errors
from state_runbooks.common.formatting import row_text
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import StateUnit, state_units
from state_runbooks.core.row_checksums import RowsChecksum, hash_columns, of_row, sums
from state_runbooks.core.state_diff import WITH_PARTITION
from state_runbooks.core.state_placement import key_width_cut
from state_runbooks.core.state_reader import per_core_tasks, read_unit
from state_runbooks.safety.change import last_committed, read_for_plan

from .rows import OLD, expected_partition, mapped_rows
from .schema_change import SchemaChange, StoreChange

EXAMPLES = 3


@dataclass
class StorePlan:
    label: str
    changed: bool
    rows: int
    expected: RowsChecksum  # the rows the store must hold after: key, value and partition
    keys_after: int | None = None  # distinct new keys (a changed store)
    moved: int = 0  # rows whose partition changes (a key change)
    nulls: dict = field(default_factory=dict)  # never-null new field -> rows where it is null
    examples: list[tuple[str, str]] = field(default_factory=list)  # (before, after)


@dataclass
class Plan:
    batch_id: int  # the last committed batch: the state migrated
    new_batch_id: int  # the batch the migration writes
    stores: list[StorePlan]
    problems: list[str] = field(default_factory=list)

    @property
    def rows_before(self) -> dict:
        return {s.label: s.rows for s in self.stores}

    @property
    def rows_after(self) -> dict:
        return {s.label: s.expected.rows for s in self.stores}

    def store(self, label: str) -> StorePlan | None:
        return next((s for s in self.stores if s.label == label), None)


def unit_of(ckpt: Checkpoint, store: StoreChange) -> StateUnit | None:
    """The unit Spark's reader reads for ``store`` (a state variable for a column family)."""
    variable = None if store.family == "default" else store.family
    for unit in state_units(ckpt, store.operator_id):
        if unit.state_variable == variable and (variable or unit.store_name == store.store_name):
            return unit
    return None


def _never_null(store: StoreChange) -> list[str]:
    """The top-level new fields the changed query declares never null."""
    return [f"{part}.{f['name']}" for part, schema in (("key", store.key_after),
                                                        ("value", store.value_after))
            for f in schema.get("fields", []) if not f.get("nullable", True)]


def plan_store(ckpt: Checkpoint, store: StoreChange, unit: StateUnit, batch_id: int,
               fill: dict) -> StorePlan:
    """One store's figures in one Spark job (see the module's docstring)."""
    from pyspark.sql import functions as F
    n = unit.num_partitions
    if not store.changed:
        df = read_unit(ckpt, unit, batch_id)
        cols = [c for c in WITH_PARTITION if c in df.columns]
        with spark_errors(f"reading {store.label} at batch {batch_id}"):
            figures = of_row(per_core_tasks(ckpt.spark, df).select(*hash_columns(cols))
                             .agg(*sums()).first())
        return StorePlan(store.label, False, figures.rows, figures)
    never_null = _never_null(store)
    moved = F.col("partition_id") != F.col(OLD + "partition_id")
    try:
        with spark_errors(f"mapping {store.label} at batch {batch_id}"):
            rows = mapped_rows(ckpt, store, unit, batch_id, fill, key_width_cut(ckpt, unit))
            scored = per_core_tasks(ckpt.spark, rows).select(
                "*", expected_partition(n)).select("*", *hash_columns(list(WITH_PARTITION)))
            row = scored.agg(*sums(), F.countDistinct("key").alias("keys"),
                             F.count(F.when(moved, 1)).alias("moved"),
                             *[F.count(F.when(_column(name).isNull(), 1)).alias(f"null{i}")
                               for i, name in enumerate(never_null)]).first()
            examples = rows.limit(EXAMPLES).collect()
    except RunbookError as exc:
        raise RunbookError(f"the mapping of {store.label} cannot be evaluated: "
                           f"{spark_error_text(exc) or exc}") from None
    plan = StorePlan(store.label, True, int(row["rows"] or 0), of_row(row), int(row["keys"]),
                     nulls={name: int(row[f"null{i}"]) for i, name in enumerate(never_null)
                            if row[f"null{i}"]})
    plan.examples = [(f"key {row_text(r[OLD + 'key'])} value {row_text(r[OLD + 'value'])}",
                      f"key {row_text(r['key'])} value {row_text(r['value'])}")
                     for r in examples]
    plan.moved = int(row["moved"])
    return plan


def _column(name: str):
    from pyspark.sql import functions as F
    part, _, rest = name.partition(".")
    return F.col(part)[rest]


def plan_migration(ckpt: Checkpoint, change: SchemaChange, fill: dict,
                   batch_id: int | None = None) -> Plan:
    """Every store's plan at the last committed batch (or ``batch_id``)."""
    batch = ckpt.last_committed_batch_id if batch_id is None else batch_id
    plan = Plan(batch, batch + 1, [])
    for store in change.stores:
        if store.problems:  # refused by the checks (mapping): nothing to compute
            continue
        unit = unit_of(ckpt, store)
        if unit is None:
            if store.changed:
                plan.problems.append(f"{store.label}: Spark's state reader has no view of this "
                                     "column family, so its rows cannot be mapped")
            continue
        sp = plan_store(ckpt, store, unit, batch, fill)
        plan.stores.append(sp)
        if sp.keys_after is not None and sp.keys_after < sp.rows:
            plan.problems.append(
                f"{store.label}: the mapping gives {sp.rows - sp.keys_after} rows the key of "
                "another row (Spark keeps one value per key, so state would be lost): map the "
                "key so that every old key stays distinct")
        for name, count in sp.nulls.items():
            plan.problems.append(f"{store.label}: {name} is null in {count} rows, and the "
                                 "changed query declares it never null: give it a fill that "
                                 "is never null")
    return plan


def plan_unless_active(ckpt: Checkpoint, checks, change: SchemaChange, fill: dict):
    """The plan at the batch the checks saw committed, or None and the checks refusing with
    the evidence where a live writer raced the read (:func:`~state_runbooks.safety.change.
    read_for_plan`)."""
    return read_for_plan(ckpt, checks,
                         lambda: plan_migration(ckpt, change, fill, last_committed(ckpt, checks)))
