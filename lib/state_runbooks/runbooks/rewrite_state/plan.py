"""What a rewrite will produce, per store, computed before anything is written: the rows now,
the rows a drop removes (with a few examples), the rows after.

A drop removes *keys*, not single rows: ``drop_keys_where`` is a SQL condition over the columns
Spark's state reader shows (``key``, ``value`` and, for some stores, more), evaluated on every
store of an operator where it resolves; every row of every store of that operator whose
partitioning key (the grouping, deduplication, join or processor key) is one of the matched keys
goes. That keeps an operator's stores consistent with each other: a join's row counts and rows, a
session's windows, a processor's variables and timers all lose the same keys.

Everything is computed in Spark: the driver gets counts and at most ``EXAMPLES`` rows per store.
The same scan that counts a store takes the checksum of the rows it must hold after
(``core/row_checksums.py``, over every column the reader shows, ``partition_id`` included): the
verification compares the rewritten store with it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError, spark_error_text, spark_errors
from state_runbooks.common.formatting import row_text
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import state_units
from state_runbooks.core.row_checksums import (
    H1,
    H2,
    RowsChecksum,
    hash_columns,
    of_row,
    sums,
)
from state_runbooks.core.state_placement import key_width_cut, partition_key
from state_runbooks.core.state_reader import per_core_tasks, read_unit
from state_runbooks.safety.change import last_committed, read_for_plan
from state_runbooks.safety.requirements import Requirement

EXAMPLES = 3
PK = "_pk"  # the partitioning key, its fields renamed f0, f1, ... (compared by position)


@dataclass
class StorePlan:
    label: str
    operator_id: int
    rows: int
    dropped: int = 0  # rows of matched keys
    matched: int | None = None  # rows where the condition itself holds (None: it does not resolve)
    examples: list[str] = field(default_factory=list)
    after: RowsChecksum | None = None  # the rows it must hold after: count and checksum
    columns: list[str] = field(default_factory=list)  # the reader's columns the checksum covers

    @property
    def rows_after(self) -> int:
        return self.rows - self.dropped


@dataclass
class Plan:
    batch_id: int  # the last committed batch: the state rewritten
    new_batch_id: int  # the batch the rewrite writes
    drop_keys_where: str
    stores: list[StorePlan]
    # operator -> a DataFrame of the matched keys (column ``_pk``), kept by the executors
    dropped_keys: dict = field(default_factory=dict, repr=False)
    dropped_key_counts: dict = field(default_factory=dict)  # operator -> distinct keys

    @property
    def rows_before(self) -> dict:
        return {s.label: s.rows for s in self.stores}

    @property
    def rows_after(self) -> dict:
        return {s.label: s.rows_after for s in self.stores}

    @property
    def rows_dropped(self) -> dict:
        return {s.label: s.dropped for s in self.stores}

    def nothing_to_do(self, checks) -> bool:
        """A drop that matches no key, with nothing else asked (the provider kept, no new
        location): a rewrite would write the same state as a new batch."""
        return (bool(self.drop_keys_where) and not any(self.rows_dropped.values())
                and checks.provider_after == checks.provider_before and not checks.output_path)


def _matches(df, condition: str):
    """``df`` filtered by ``condition``, or None where it does not resolve on these columns."""
    from pyspark.errors import AnalysisException, ParseException
    from pyspark.sql import functions as F
    try:
        out = df.where(F.expr(condition))
        out.schema  # analysed here: an unknown column fails now, not in a job
        return out
    except ParseException as exc:  # the whole condition is wrong, wherever it is used
        raise RunbookError(f"drop_keys_where={condition!r} is not a SQL condition: "
                           f"{spark_error_text(exc)[:200]}") from None
    except AnalysisException:
        return None


def plan_unless_active(ckpt: Checkpoint, checks, drop_keys_where: str = "",
                       allow_empty_state: bool = False):
    """(the plan, the checks) at the batch the checks saw committed: no plan where Spark cannot
    rewrite here, or where a live writer raced the read (the checks then say what it wrote).
    The checks gain what only the plan knows: a drop that would empty a store is refused unless
    ``allow_empty_state``."""
    if checks.spark_cannot:
        return None, checks
    plan, checks = read_for_plan(ckpt, checks, lambda: plan_rewrite(
        ckpt, drop_keys_where, last_committed(ckpt, checks)))
    if plan is None:
        return None, checks
    return plan, dataclasses.replace(checks, requirements=checks.requirements + (
        _keeps_state(plan, allow_empty_state),))


def _keeps_state(plan: Plan, allow_empty_state: bool) -> Requirement:
    emptied = [s for s in plan.stores if s.rows and not s.rows_after]
    if not emptied or not plan.drop_keys_where:
        return Requirement("keeps_state", True, "every store keeps rows after the drop")
    names = ", ".join(f"{s.label} ({s.rows} rows)" for s in emptied)
    if allow_empty_state:
        return Requirement("keeps_state", True, f"the drop empties {names}: allow_empty_state="
                                                "True says that is the intent")
    return Requirement("keeps_state", False,
                       f"drop_keys_where={plan.drop_keys_where!r} matches every key of {names}: "
                       "the state would be empty; pass allow_empty_state=True if that is the "
                       "intent")


def plan_rewrite(ckpt: Checkpoint, drop_keys_where: str = "", batch_id: int | None = None) -> Plan:
    """Rows per store at the last committed batch (``batch_id``: the one the checks saw), and
    what a drop takes from each."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    batch = ckpt.last_committed_batch_id if batch_id is None else batch_id
    if batch is None:
        raise RunbookError(f"checkpoint {ckpt.root} has no committed batch: nothing to rewrite")
    condition = drop_keys_where.strip()
    units = state_units(ckpt)
    frames = {u.label: read_unit(ckpt, u, batch) for u in units}
    dropped: dict = {}
    matched_counts: dict = {}
    if condition:
        for u in units:
            hit = _matches(frames[u.label], condition)
            if hit is None:
                continue
            matched_counts[u.label] = hit
            keys = hit.select(partition_key(hit, key_width_cut(ckpt, u)).alias(PK))
            dropped[u.operator_id] = (keys if u.operator_id not in dropped
                                      else dropped[u.operator_id].unionByName(keys))
        if not dropped:
            columns = sorted({c for f in frames.values() for c in _columns(f.schema)})
            raise RunbookError(f"drop_keys_where={condition!r} resolves on no store of this "
                               f"checkpoint: its columns are {', '.join(columns[:20])}")
        # Kept by the executors (memory, else disk), not the driver: the transform and the
        # verification use the same keys again.
        dropped = {op: keys.distinct().persist(StorageLevel.MEMORY_AND_DISK)
                   for op, keys in dropped.items()}
    key_counts = {}
    for op, keys in dropped.items():
        with spark_errors(f"counting the keys to drop of operator {op}"):
            key_counts[op] = keys.count()
    stores = []
    for u in units:
        columns = list(frames[u.label].columns)
        df = per_core_tasks(ckpt.spark, frames[u.label]).select("*", *hash_columns(columns))
        keys = dropped.get(u.operator_id)
        if keys is None:
            with spark_errors(f"counting the rows of {u.label} at batch {batch}"):
                whole = of_row(df.agg(*sums()).first())
            stores.append(StorePlan(u.label, u.operator_id, whole.rows, after=whole,
                                    columns=columns))
            continue
        flagged = _flag_dropped(df, keys, key_width_cut(ckpt, u), key_counts[u.operator_id])
        resolves = u.label in matched_counts
        if resolves:
            flagged = flagged.withColumn("_cond", F.expr(condition).cast("int"))
        with spark_errors(f"planning the drop in {u.label} at batch {batch}"):
            counts = flagged.agg(
                F.count(F.lit(1)).alias("all"),
                F.coalesce(F.sum("_hit"), F.lit(0)).alias("dropped"),
                (F.coalesce(F.sum("_cond"), F.lit(0)) if resolves else F.lit(None))
                .alias("matched"), *sums(F.col("_hit").isNull(), "kept_")).first()
            examples = []
            if counts["dropped"]:
                shown = flagged.where("_hit = 1").drop("_hit", "_cond", "partition_id", H1, H2)
                examples = [row_text(r) for r in shown.orderBy(*shown.columns).limit(EXAMPLES)
                            .collect()]
        stores.append(StorePlan(u.label, u.operator_id, counts["all"], counts["dropped"],
                                counts["matched"], examples, of_row(counts, "kept_"), columns))
    return Plan(batch, ckpt.offset_batch_ids[-1] + 1, condition, stores, dropped, key_counts)


BROADCAST_KEYS = 100_000  # up to this many keys to drop, they are sent to every task


def _keys_side(keys, key_count: int | None):
    """The dropped keys as the small side of a join: broadcast when few (the state's rows then
    stay in their partitions, no shuffle), else joined by a shuffle."""
    from pyspark.sql import functions as F
    return F.broadcast(keys) if key_count is not None and key_count <= BROADCAST_KEYS else keys


def _flag_dropped(df, keys, cut: int, key_count: int | None = None):
    """``df`` with ``_hit`` = 1 on rows whose partitioning key is among ``keys`` (a join in
    Spark, never a collection of the state on the driver)."""
    from pyspark.sql import functions as F
    marked = _keys_side(keys.withColumn("_hit", F.lit(1)), key_count)
    return (df.withColumn(PK, partition_key(df, cut))
            .join(marked, on=PK, how="left").drop(PK))


def without_dropped(df, keys, cut: int, key_count: int | None = None):
    """``df`` without the rows whose partitioning key is among ``keys``."""
    return (df.withColumn(PK, partition_key(df, cut))
            .join(_keys_side(keys, key_count), on=PK, how="left_anti").drop(PK))


def _columns(schema, prefix: str = "") -> list[str]:
    from pyspark.sql import types as T
    out = []
    for f in schema.fields:
        name = f"{prefix}{f.name}"
        if isinstance(f.dataType, T.StructType):
            out += _columns(f.dataType, name + ".")
        elif name != "partition_id":
            out.append(name)
    return out


