"""The state history of the join's two ``keyWithIndexToValue`` stores: whether Spark's reader
serves them, how the history is read (change feed or retained batches), every row of it in one
shape (``history_rows``), and its figures per join key, kept by Spark (``key_history``).
"""
from __future__ import annotations

import weakref
from functools import reduce

from state_runbooks.common.errors import RunbookError, spark_errors
from state_runbooks.core import operators
from state_runbooks.core.checkpoint import Checkpoint, OperatorInfo
from state_runbooks.core.state_files import files_seen
from state_runbooks.core.state_loads import LOAD_FAILURE_MEANING, load_failure_kind
from state_runbooks.core.state_reader import (
    per_core_tasks,
    read_state,
    read_state_changes,
    union_over_batches,
)

from .pairs import _with_pair_checks
from .spec import ROWS_STORE, SIDES, JoinSpec, join_operators

KEY_SAMPLE_ROWS = 50  # left rows whose values name the key fields
CHANGE_FEED = "change feed"
RETAINED_BATCHES = "retained batches"
METHODS = (CHANGE_FEED, RETAINED_BATCHES)


# What was read of each checkpoint object (readability, per-key histories), kept while it lives.
_READ: "weakref.WeakKeyDictionary[Checkpoint, dict]" = weakref.WeakKeyDictionary()


def _read_once(ckpt: Checkpoint) -> dict:
    return _READ.setdefault(ckpt, {})


def unreadable_reason(ckpt: Checkpoint, operator: OperatorInfo, batch: int) -> str | None:
    """None when Spark's ``statestore`` reader serves both sides' rows at ``batch``; otherwise one
    line saying that it cannot and what the files still say (the query itself is not affected:
    a reader's limit is not damage). Asked once per checkpoint object and batch: a committed
    batch's state does not change."""
    memo = _read_once(ckpt)
    if ("unreadable", operator.operator_id, batch) not in memo:
        memo["unreadable", operator.operator_id, batch] = _unreadable(ckpt, operator, batch)
    return memo["unreadable", operator.operator_id, batch]


def _side_samples(ckpt: Checkpoint, operator: OperatorInfo, batch: int) -> dict:
    """Per side, its schema and its first rows at ``batch`` (``KEY_SAMPLE_ROWS`` of the left, one
    of the right), read once per checkpoint object: the rows show that Spark's reader serves the
    side, and the left's name the key fields (:func:`_key_names`)."""
    memo = _read_once(ckpt)
    if ("samples", operator.operator_id, batch) not in memo:
        samples = {}
        for side, rows in (("left", KEY_SAMPLE_ROWS), ("right", 1)):
            df = read_state(ckpt, operator.operator_id, ROWS_STORE.format(side=side), batch)
            with spark_errors(f"reading the {side} side's rows"):
                samples[side] = (df.schema, df.select("key", "value").limit(rows).collect())
        memo["samples", operator.operator_id, batch] = samples
    return memo["samples", operator.operator_id, batch]


def _unreadable(ckpt: Checkpoint, operator: OperatorInfo, batch: int) -> str | None:
    try:
        _side_samples(ckpt, operator, batch)
    except RunbookError as error:
        seen = files_seen(ckpt.state_files(operator.operator_id))
        stores = ", ".join(sorted(st.store_name for st in operator.stores))
        meaning = LOAD_FAILURE_MEANING[load_failure_kind(error.error_class)]
        return (f"operator {operator.operator_id} is a stream-stream join (stores: {stores}) whose "
                f"rows Spark's statestore reader cannot read here ({error.error_class or error}), "
                f"so no key can be diagnosed; its files: {seen}. {meaning[0].upper()}{meaning[1:]}")
    return None


def history_method(ckpt: Checkpoint, operator_id: int = -1) -> str:
    """How the history is read: the change feed needs the HDFS-backed provider, or RocksDB with
    changelog checkpointing; otherwise (and for a join in state format 3, whose change feed the
    library's reader does not select by side yet) the retained batches are compared one by one."""
    if ckpt.writes_change_feed and not _column_families(ckpt, operator_id):
        return CHANGE_FEED
    return RETAINED_BATCHES


def _column_families(ckpt: Checkpoint, operator_id: int) -> bool:
    """Whether the join (or any join, -1) keeps its sides as column families (state format 3)."""
    ops = join_operators(ckpt) if operator_id == -1 else [ckpt.operator(operator_id)]
    return any(operators.operator_model(ckpt, op.operator_id).join_state_format == 3
               for op in ops)


def method_reason(ckpt: Checkpoint, method: str, operator_id: int = -1) -> str:
    kind = ckpt.provider_kind
    if method == CHANGE_FEED:
        why = ("the HDFS-backed provider writes a delta per batch" if kind == "hdfs" else
               "RocksDB writes a changelog per batch (changelog checkpointing)")
        return f"{CHANGE_FEED} (readChangeFeed): {why}"
    if _column_families(ckpt, operator_id):
        why = "the join keeps its state in format 3 (both sides in one RocksDB store)"
    elif kind == "rocksdb":
        why = "RocksDB without changelog checkpointing has no change feed"
    else:
        why = f"provider {ckpt.provider_class} is not known to have a change feed"
    return f"{RETAINED_BATCHES}: {why}, so the state of every retained batch is read and compared"


# -- the rows: history of both sides, one shape --------------------------------------------------
def _side_rows(df, spec: JoinSpec, side: str, batch, is_delete):
    """One side's rows in the common shape: key fields, slot index, side, batch, is_delete, event
    time (ms), matched, and ``seq``: the row's place in the order the reader gave it. Read per
    partition, that is the order Spark wrote the changes of a batch in (delta and changelog files
    record each put and delete as it happens), which says which change of a slot came last."""
    from pyspark.sql import functions as F
    time_col = spec.side(side).time_column
    return df.select(*[F.col(f"key.{f}").alias(f"k_{f}") for f in spec.key_fields],
                     F.col("key.index").alias("idx"), F.lit(side == "left").alias("is_left"),
                     (F.col(batch) if isinstance(batch, str) else F.lit(batch))
                     .cast("long").alias("batch"),
                     (F.lit(is_delete) if isinstance(is_delete, bool) else is_delete)
                     .alias("is_delete"),
                     F.unix_millis(F.col(f"value.{time_col}")).alias("t"),
                     F.col("value.matched").alias("m"),
                     F.monotonically_increasing_id().alias("seq"))


def _change_feed(ckpt: Checkpoint, spec: JoinSpec, side: str, start: int, end: int):
    from pyspark.sql import functions as F
    df = read_state_changes(ckpt, spec.operator_id, ROWS_STORE.format(side=side), start, end)
    return _side_rows(per_core_tasks(ckpt.spark, df), spec, side, "batch_id",
                      F.col("change_type") == "delete")


def history_rows(ckpt: Checkpoint, spec: JoinSpec, batch: int, method: str, start: int):
    """Every row the classification reads, both sides, as one DataFrame: the history of batches
    ``start..batch``. With the change feed: each side's feed (on top of the state of ``start`` when
    older history is gone), which also gives the state of ``batch`` itself: each slot's last
    change. Otherwise the state of every one of those batches. Built once per checkpoint object
    (a DataFrame is a plan: nothing is read until it is used)."""
    memo = _read_once(ckpt)
    key = ("rows", spec.operator_id, spec.key_fields, spec.left.time_column,
           spec.right.time_column, batch, method, start)
    if key not in memo:
        memo[key] = _history_rows(ckpt, spec, batch, method, start)
    return memo[key]


def _history_rows(ckpt: Checkpoint, spec: JoinSpec, batch: int, method: str, start: int):
    from pyspark.sql import functions as F
    frames = []
    for side in SIDES:
        store = ROWS_STORE.format(side=side)
        if method == RETAINED_BATCHES:
            every = union_over_batches(ckpt, spec.operator_id, store, list(range(start, batch + 1)),
                                       [F.col("key"), F.col("value")])
            frames.append(_side_rows(every, spec, side, "batch_id", False))
            continue
        if start == 0:
            frames.append(_change_feed(ckpt, spec, side, 0, batch))
            continue
        state = read_state(ckpt, spec.operator_id, store, start)
        frames.append(_side_rows(per_core_tasks(ckpt.spark, state), spec, side, start, False))
        if start < batch:
            frames.append(_change_feed(ckpt, spec, side, start + 1, batch))
    return reduce(lambda a, b: a.unionByName(b), frames)


def key_history(ckpt: Checkpoint, spec: JoinSpec, batch: int, method: str, start: int,
                exact_pairs: bool = False):
    """The per-key figures of ``history_rows`` (:func:`_aggregate`), kept by Spark (memory,
    spilling to disk; nothing collected) for as long as ``ckpt`` lives: the time bounds, the
    counts, the examples and the keys asked about all read the history once. A committed batch's
    state never changes, so the figures stay true while the query runs on. ``exact_pairs``: with
    the pair check of the keys that min and max cannot decide (:func:`_with_pair_checks`), a second
    read of the history that only those keys need."""
    from pyspark import StorageLevel
    memo = _read_once(ckpt)
    key = ("history", spec.operator_id, spec.key_fields, spec.left.time_column, spec.right.time_column,
           batch, method, start, exact_pairs)
    if key not in memo:
        if exact_pairs:
            found = _with_pair_checks(history_rows(ckpt, spec, batch, method, start),
                                      key_history(ckpt, spec, batch, method, start), spec)
        else:
            found = _aggregate(history_rows(ckpt, spec, batch, method, start), spec, batch, method)
        memo[key] = found.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        weakref.finalize(ckpt, memo[key].unpersist).atexit = False
    return memo[key]


def _aggregate(rows, spec: JoinSpec, batch: int, method: str):
    """Per join key and side: whether the side is in the state at ``batch``, earliest and latest
    event time seen, matched, first batch seen, the batch that removed it, and the rows of the
    state of ``batch``: how many, their earliest and latest event time. Two hash aggregations
    over one shuffle by key, cheap at any size: per slot, then per key. No list of each key's event times: collecting
    lists takes Spark's object aggregation, twice the time of all the rest; the few keys whose
    min and max cannot decide the time condition get :func:`_with_pair_checks`, and the keys
    shown get their times read (``Diagnosis.times``).

    A key's rows sit in slots 0..n-1 of ``keyWithIndexToValue``: Spark appends at slot n and, when
    it evicts a row, moves the last row into the freed slot and deletes the last slot. So a slot's
    last change (by batch, then by the order Spark wrote it) is what the slot holds at ``batch``,
    and a key is in the state exactly when slot 0 is. With the retained batches, a slot is in the
    state when it is in the state of ``batch``; it was removed in the batch after the last one
    that held it.
    """
    from pyspark.sql import functions as F
    keys = [f"k_{f}" for f in spec.key_fields]
    put = ~F.col("is_delete")
    # A change's place in a slot's history as one number (not a struct: Spark aggregates structs by
    # sorting, numbers with a hash table): the batch, then the change's place among the rows the
    # task read (``seq``'s lower 33 bits), which orders the changes of a batch's file. Batches
    # count back from ``batch``, so the number stays far from overflowing.
    order = ((F.col("batch") - batch) * (1 << 33)) + (F.col("seq").bitwiseAND((1 << 33) - 1))
    # Shuffled once, by the join key: both aggregations below then run where the rows are (a
    # shuffle for each took a third longer at 664,000 keys).
    slots = rows.repartition(*keys).withColumn("_order", order).groupBy(*keys, "is_left", "idx").agg(
        F.struct(F.max("batch").alias("batch"),
                 F.max_by("is_delete", "_order").alias("is_delete"),
                 F.max_by("t", "_order").alias("t")).alias("last"),
        F.max(F.when(put, True)).alias("seen"),
        F.min(F.when(put, F.col("t"))).alias("tmin"),
        F.max(F.when(put, F.col("t"))).alias("tmax"),
        F.max("m").alias("matched"),
        F.min(F.when(put, F.col("batch"))).alias("first"),
        F.min(F.when(F.col("m"), F.col("batch"))).alias("first_matched"))
    if method == CHANGE_FEED:
        held, gone = ~F.col("last.is_delete"), F.col("last.batch")
    else:
        held, gone = F.col("last.batch") == batch, F.col("last.batch") + 1
    slots = slots.withColumn("held", held).withColumn("gone", F.when(~held, gone))
    aggs = []
    for p, side in (("l", F.col("is_left")), ("r", ~F.col("is_left"))):
        slot0, now = side & (F.col("idx") == 0), side & F.col("held")
        aggs += [
            F.max(F.when(slot0, F.col("held"))).alias(f"{p}_present"),
            F.max(F.when(slot0, F.col("gone"))).alias(f"{p}_gone"),
            F.max(F.when(side, F.col("seen"))).alias(f"{p}_seen"),
            F.min(F.when(side, F.col("tmin"))).alias(f"{p}_tmin"),
            F.max(F.when(side, F.col("tmax"))).alias(f"{p}_tmax"),
            F.max(F.when(side, F.col("matched"))).alias(f"{p}_matched"),
            F.min(F.when(side, F.col("first"))).alias(f"{p}_first"),
            F.min(F.when(side, F.col("first_matched"))).alias(f"{p}_first_matched"),
            F.count(F.when(now, True)).alias(f"{p}_rows_now"),
            F.min(F.when(now, F.col("last.t"))).alias(f"{p}_tmin_now"),
            F.max(F.when(now, F.col("last.t"))).alias(f"{p}_tmax_now"),
        ]
    agg = slots.groupBy(*keys).agg(*aggs)
    for p in ("l", "r"):
        for flag in ("present", "seen"):
            agg = agg.withColumn(f"{p}_{flag}", F.coalesce(f"{p}_{flag}", F.lit(False)))
    return agg
