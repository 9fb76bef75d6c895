"""The diagnose-join-mismatch runbook's logic: why did a key not come out of a stream-stream join?

Spark's symmetric hash join keeps, per side, every input row that may still find a match in
``<side>-keyWithIndexToValue`` (key: the join key plus an index; value: the row plus ``matched``).
Rows leave that store only when the watermark evicts them. So the history of that store (the state
change feed, or the state of every retained batch compared one by one) tells, for every join key and
side: the event times and ``matched`` of every row it held, when it first arrived, whether it is in
the state of the diagnosed batch, and if not, in which batch the watermark removed it.

Each key gets one category, its root cause, decided on that evidence (see ``CATEGORIES``). All keys
are classified by one Spark aggregation over both sides' history, read in one pass and kept by
Spark (``key_history``): the time bounds, the counts, the examples and the keys asked about all
reuse it. Only the keys shown are collected. With the change feed, the state of the diagnosed batch
is not read apart: each slot's last change in the feed is what the state holds, exactly (loading
the state of 200 RocksDB partitions costs several times more than their changelogs).
"""
from __future__ import annotations

import dataclasses
import math
import weakref
from dataclasses import dataclass, field
from functools import reduce

from .checkpoint import Checkpoint, OperatorInfo
from . import operators
from .errors import RunbookError, spark_errors
from .formatting import format_utc
from .state_reader import per_core_tasks, read_state, read_state_changes, union_over_batches

JOIN_OPERATOR = "symmetricHashJoin"
SIDES = ("left", "right")
ROWS_STORE = "{side}-keyWithIndexToValue"
WATERMARK_DELAY_KEY = "spark.watermarkDelayMs"  # field metadata Spark puts on the event-time column
KEY_SAMPLE_ROWS = 50  # left rows whose values name the key fields

# Root causes, in the order they are shown (``_with_category`` decides them).
CATEGORIES = {
    "joined": "a row of the key is marked matched: the join emitted it",
    "waiting_for_right": "only the left side reached the state, and it is still there",
    "waiting_for_left": "only the right side reached the state, and it is still there",
    "outside_time_bounds": "both sides reached the state, but no pair satisfies the time condition",
    "evicted_by_watermark": "one side waited, the watermark removed it before a match arrived",
    "unmatched_within_bounds": "both sides were in the state together and a pair satisfies the "
                               "time bounds given, yet Spark did not match them",
    "never_seen": "the key never reached either side's state in the retained batches",
}
UNDECIDED = "undecided"  # min and max of the event times left the time condition open
PAIR_CHECKED = "pair_fits"  # the column _with_pair_checks adds: some pair fits the condition
CHANGE_FEED = "change feed"
RETAINED_BATCHES = "retained batches"
METHODS = (CHANGE_FEED, RETAINED_BATCHES)


# -- the join: operator, key, time columns, bounds ------------------------------------------------
@dataclass(frozen=True)
class JoinSide:
    side: str
    time_column: str
    time_source: str  # "parameter" or "checkpoint" (the column carrying the watermark)
    watermark_column: str | None  # the column the state schema marks with the watermark delay
    watermark_delay_ms: int | None
    value_columns: tuple[str, ...]


@dataclass(frozen=True)
class JoinSpec:
    """A stream-stream join as read from the checkpoint, plus the time condition given."""
    operator_id: int
    key_fields: tuple[str, ...]  # field0, field1, ... in the state key (the index excluded)
    key_types: tuple  # Spark DataTypes of those fields
    key_names: tuple[str | None, ...]  # the value column each key field equals, where one does
    left: JoinSide
    right: JoinSide
    lower_bound_seconds: float
    upper_bound_seconds: float
    bounds: "TimeBounds | None" = None  # read from the checkpoint; None: given as parameters

    @property
    def composite(self) -> bool:
        return len(self.key_fields) > 1

    def side(self, name: str) -> JoinSide:
        return self.left if name == "left" else self.right

    def key_label(self) -> str:
        names = [n or f for n, f in zip(self.key_names, self.key_fields)]
        return names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"

    def condition_text(self) -> str:
        lt, rt = self.left.time_column, self.right.time_column
        return (f"{lt} >= {rt} - {_secs(self.lower_bound_seconds)} AND "
                f"{lt} <= {rt} + {_secs(self.upper_bound_seconds)}")

    def describe(self) -> list[str]:
        """Where each part of the join came from, one line each."""
        lines = [f"operator {self.operator_id} ({JOIN_OPERATOR}), join key {self.key_label()}"
                 + (" (composite)" if self.composite else "")]
        for s in (self.left, self.right):
            source = ("given as a parameter" if s.time_source == "parameter"
                      else "read from the checkpoint: the column that carries the watermark")
            delay = (f"; watermark delay {s.watermark_delay_ms / 1000:g} s on "
                     f"{s.watermark_column}" if s.watermark_delay_ms is not None else
                     "; no watermark column in the state schema")
            lines.append(f"{s.side} time column: {s.time_column} ({source}{delay})")
        if self.bounds is None:
            lines.append(f"time condition: {self.condition_text()} (bounds given as parameters)")
        else:
            lines.append(f"time condition: {self.condition_text()} (bounds read from the "
                         "checkpoint)")
            lines += self.bounds.lines()
        return lines


def join_operators(ckpt: Checkpoint) -> list[OperatorInfo]:
    """The stream-stream join operators of a checkpoint, as the operator model knows them (by
    name, or without operator metadata by their four store folders)."""
    return [op for op in ckpt.operators()
            if operators.describe(op.operator_name, [s.store_name for s in op.stores]) == "join"]


def find_join_operator(ckpt: Checkpoint, operator_id: int = -1) -> OperatorInfo:
    """``-1``: the only stream-stream join; otherwise that operator, which must be a join."""
    joins = join_operators(ckpt)
    listing = ", ".join(f"{op.operator_id} ({op.operator_name})" for op in ckpt.operators())
    if operator_id == -1:
        if not joins:
            raise RunbookError(f"checkpoint {ckpt.root} has no stream-stream join "
                               f"({JOIN_OPERATOR}) operator; its operators: {listing}")
        if len(joins) > 1:
            ids = ", ".join(str(op.operator_id) for op in joins)
            raise RunbookError(f"checkpoint {ckpt.root} has {len(joins)} stream-stream joins "
                               f"(operators {ids}): pass operator_id to choose one")
        return joins[0]
    operator = ckpt.operator(operator_id)
    if operator not in joins:
        valid = ", ".join(str(op.operator_id) for op in joins) or "none"
        raise RunbookError(f"operator {operator_id} ({operator.operator_name}) is not a "
                           f"stream-stream join; join operators: {valid}")
    return operator


def _watermark_column(value_schema) -> tuple[str | None, int | None]:
    for f in value_schema.fields:
        if WATERMARK_DELAY_KEY in (f.metadata or {}):
            return f.name, int(f.metadata[WATERMARK_DELAY_KEY])
    return None, None


def _resolve_side(side: str, value_schema, time_column: str) -> JoinSide:
    from pyspark.sql import types as T
    columns = [f.name for f in value_schema.fields if f.name != "matched"]
    types = {f.name: f.dataType for f in value_schema.fields}
    wm_column, wm_delay = _watermark_column(value_schema)
    stamps = [c for c in columns if isinstance(types[c], (T.TimestampType, T.TimestampNTZType))]
    hint = (f"timestamp columns: {', '.join(stamps) or 'none'}"
            + (f"; the watermark is on {wm_column}" if wm_column else ""))
    source = "parameter"
    if not time_column:
        if wm_column is None:
            raise RunbookError(f"the {side} side's state has no column carrying a watermark: pass "
                               f"{side}_time_column ({hint})")
        time_column, source = wm_column, "checkpoint"
    if time_column not in columns:
        raise RunbookError(f"{side}_time_column {time_column!r} is not in the {side} side's state "
                           f"(columns: {', '.join(columns)}); {hint}")
    if time_column not in stamps:
        kind = types[time_column].simpleString()
        raise RunbookError(f"{side}_time_column {time_column!r} is {kind}, not a timestamp; {hint}")
    return JoinSide(side, time_column, source, wm_column, wm_delay, tuple(columns))


def resolve_join(ckpt: Checkpoint, operator_id: int = -1, left_time_column: str = "",
                 right_time_column: str = "", lower_bound_seconds: float | None = None,
                 upper_bound_seconds: float | None = None, batch_id: int = -1) -> JoinSpec:
    """Validate the parameters against the checkpoint. Empty time columns are read from it: the
    column of each side that carries the watermark (Spark records the delay on it). Bounds left at
    None are read from it too (:func:`time_bounds_from_checkpoint`)."""
    operator = find_join_operator(ckpt, operator_id)
    for name, value in (("lower_bound_seconds", lower_bound_seconds),
                        ("upper_bound_seconds", upper_bound_seconds)):
        if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)
                                  or not math.isfinite(value)):
            raise RunbookError(f"{name}={value!r} is not a number of seconds (or None: read it "
                               "from the checkpoint)")
    if (lower_bound_seconds is not None and upper_bound_seconds is not None
            and lower_bound_seconds + upper_bound_seconds < 0):
        raise RunbookError(f"the time condition is empty: -lower_bound_seconds "
                           f"({-lower_bound_seconds:g}) is above upper_bound_seconds "
                           f"({upper_bound_seconds:g})")
    batch = ckpt.resolve_batch(batch_id, operator.operator_id)
    reason = unreadable_reason(ckpt, operator, batch)
    if reason:
        raise RunbookError(reason)
    samples = _side_samples(ckpt, operator, batch)
    schemas = {side: schema for side, (schema, _) in samples.items()}
    key_schema = schemas["left"]["key"].dataType
    fields = tuple(f.name for f in key_schema.fields if f.name != "index")
    types = tuple(key_schema[f].dataType for f in fields)
    left = _resolve_side("left", schemas["left"]["value"].dataType, left_time_column)
    right = _resolve_side("right", schemas["right"]["value"].dataType, right_time_column)
    names = _key_names(samples["left"][1], fields, left.value_columns)
    spec = JoinSpec(operator.operator_id, fields, types, names, left, right,
                    float(lower_bound_seconds or 0.0), float(upper_bound_seconds or 0.0))
    if lower_bound_seconds is not None and upper_bound_seconds is not None:
        return spec
    bounds = time_bounds_from_checkpoint(ckpt, spec, batch)
    lower = bounds.lower if lower_bound_seconds is None else float(lower_bound_seconds)
    upper = bounds.upper if upper_bound_seconds is None else float(upper_bound_seconds)
    return dataclasses.replace(spec, lower_bound_seconds=lower, upper_bound_seconds=upper,
                               bounds=bounds)


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
        files = ckpt.state_files(operator.operator_id)
        versions = sorted({f.version for f in files})
        seen = (f"its files: {len(files)} in {len({f.partition_id for f in files})} partitions, "
                f"state versions {versions[0]}..{versions[-1]}, {sum(f.size for f in files):,} "
                "bytes" if files else "it has no state files")
        stores = ", ".join(sorted(st.store_name for st in operator.stores))
        return (f"operator {operator.operator_id} is a stream-stream join (stores: {stores}) whose "
                f"rows Spark's statestore reader cannot read here ({error.error_class or error}), "
                f"so no key can be diagnosed; {seen}. A reader's limit, not damage: the query "
                "itself is not affected")
    return None


@dataclass(frozen=True)
class TimeBounds:
    """The join's time bounds as the watermark's evictions show them.

    Spark evicts a left row once no future right row can match it: when its time plus the lower
    bound falls behind the watermark; a right row, its time plus the upper bound. So the rows a
    batch evicted put each bound below ``watermark - time`` of that batch, and the rows still in
    the state put it at or above ``watermark - time``. The smallest bound consistent with both is
    taken, known to within ``lower_max - lower`` (the watermark's step between batches).
    """
    lower: float  # seconds: the smallest value the rows kept allow
    lower_max: float  # seconds: the evicted rows put it below this
    upper: float
    upper_max: float
    batch_id: int

    def lines(self) -> list[str]:
        return [f"  lower bound {self.lower:g} s: left rows kept in the state put it at or above "
                f"{self.lower:g} s, left rows the watermark evicted below {self.lower_max:g} s",
                f"  upper bound {self.upper:g} s: right rows kept in the state put it at or above "
                f"{self.upper:g} s, right rows the watermark evicted below {self.upper_max:g} s"]


def time_bounds_from_checkpoint(ckpt: Checkpoint, spec: JoinSpec, batch: int) -> TimeBounds:
    """Read the time bounds of the join condition from the watermark's evictions (Spark does not
    store the condition itself): for each side, the rows of the state of ``batch`` (not evicted
    by its watermark) and the rows removed in each earlier batch (evicted by that batch's
    watermark). Both come from the keys' history (:func:`key_history`), which the classification
    then reuses. One-line RunbookError when they cannot tell."""
    from pyspark.sql import functions as F
    method = history_method(ckpt, spec.operator_id)
    start, _ = ckpt.retained_batch_range(spec.operator_id)
    history = key_history(ckpt, spec, batch, method, start)

    # One pass over the history, both sides: per side and batch that removed rows, the latest
    # time removed (batch null: rows not removed), and the earliest time kept.
    def side(p):
        removed = ~F.col(f"{p}_present") & F.col(f"{p}_seen")
        return F.struct(F.lit(p == "l").alias("is_left"),
                        F.when(removed, F.col(f"{p}_gone")).alias("batch"),
                        F.when(removed, F.col(f"{p}_tmax")).alias("t"),
                        F.col(f"{p}_tmin_now").alias("kept"))
    with spark_errors("reading the join's evictions to find its time bounds"):
        groups = (history.select(F.inline(F.array(side("l"), side("r"))))
                  .groupBy("is_left", "batch").agg(F.max("t").alias("t"),
                                                   F.min("kept").alias("kept")).collect())
    kept = {is_left: min((r["kept"] for r in groups
                          if r["is_left"] == is_left and r["kept"] is not None), default=None)
            for is_left in (True, False)}
    evicted = [r for r in groups if r["batch"] is not None]
    watermark_now = ckpt.offsets(batch).watermark_ms
    watermarks = {b: _watermark(ckpt, b) for b in {r["batch"] for r in evicted}}
    found = {}
    for is_left, name, param in ((True, "lower", "lower_bound_seconds"),
                                 (False, "upper", "upper_bound_seconds")):
        at_least = watermark_now - kept[is_left] if kept.get(is_left) is not None else None
        below = [watermarks[r["batch"]] - r["t"] for r in evicted
                 if bool(r["is_left"]) == is_left and r["t"] is not None
                 and watermarks[r["batch"]] is not None]
        side = "left" if is_left else "right"
        if at_least is None or not below:
            raise RunbookError(
                f"the checkpoint cannot tell the join's {name} bound yet: it needs {side} rows "
                f"the watermark evicted and {side} rows still in the state of batch {batch}; "
                f"pass {param} (copy it from the query's join condition)")
        if not at_least < min(below):
            raise RunbookError(
                f"the {side} rows' evictions do not fit a time-range condition ({side} rows kept "
                f"{at_least / 1000:g} s behind the watermark, evicted {min(below) / 1000:g} s "
                f"behind): pass {param} (copy it from the query's join condition)")
        found[name] = (at_least / 1000, min(below) / 1000)
    return TimeBounds(found["lower"][0], found["lower"][1], found["upper"][0], found["upper"][1],
                      batch)


def _watermark(ckpt: Checkpoint, batch: int) -> int | None:
    try:
        return ckpt.offsets(batch).watermark_ms
    except RunbookError:
        return None


def _key_names(sample: list, fields: tuple, columns: tuple) -> tuple:
    """Name each key field after the left value column that equals it in a sample of rows (the
    state key only says field0, field1, ...); None where no single column does."""
    if not sample:
        return tuple([None] * len(fields))
    names = []
    for f in fields:
        candidates = [c for c in columns if all(r["value"][c] == r["key"][f] for r in sample)]
        names.append(candidates[0] if len(candidates) == 1 else None)
    return tuple(names)


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


# -- classification ------------------------------------------------------------------------------
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


def _bounds_ms(spec: JoinSpec) -> tuple[int, int]:
    return int(round(spec.lower_bound_seconds * 1000)), int(round(spec.upper_bound_seconds * 1000))


def _disjoint(spec: JoinSpec):
    """Left time - right time over all of a key's pairs lies in [l_tmin - r_tmax, l_tmax - r_tmin];
    the condition allows [-lower, +upper]: when the two do not overlap, no pair fits."""
    from pyspark.sql import functions as F
    lower_ms, upper_ms = _bounds_ms(spec)
    return (((F.col("l_tmax") - F.col("r_tmin")) < -lower_ms)
            | ((F.col("l_tmin") - F.col("r_tmax")) > upper_ms))


def _undecided(spec: JoinSpec):
    """Keys seen on both sides whose min and max leave the time condition open: the ranges
    overlap and a side has several event times (with one time per side the gap is exact)."""
    from pyspark.sql import functions as F
    single = (F.col("l_tmin") == F.col("l_tmax")) & (F.col("r_tmin") == F.col("r_tmax"))
    return F.col("l_seen") & F.col("r_seen") & ~single & ~_disjoint(spec)


def _with_pair_checks(rows, agg, spec: JoinSpec):
    """``agg`` with ``PAIR_CHECKED``: for each key :func:`_undecided` picks, whether some pair of
    its left and right event times satisfies the time condition (null for the others). A join of
    those keys' distinct times, side against side, within the bounds."""
    from pyspark.sql import functions as F
    keys = [f"k_{f}" for f in spec.key_fields]
    lower_ms, upper_ms = _bounds_ms(spec)
    open_keys = agg.where(_undecided(spec)).select(*keys)
    times = (rows.where(~F.col("is_delete") & F.col("t").isNotNull())
             .select(*keys, "is_left", "t").distinct().join(open_keys, keys, "left_semi"))
    left = times.where(F.col("is_left")).select(*keys, F.col("t").alias("lt"))
    right = times.where(~F.col("is_left")).select(*keys, F.col("t").alias("rt"))
    fitting = (left.join(right, keys).where((F.col("lt") >= F.col("rt") - lower_ms)
                                            & (F.col("lt") <= F.col("rt") + upper_ms))
               .select(*keys).distinct().withColumn("_fits", F.lit(True)))
    return (agg.join(fitting, keys, "left")
            .withColumn(PAIR_CHECKED, F.when(_undecided(spec), F.coalesce("_fits", F.lit(False))))
            .drop("_fits"))


def _with_category(agg, spec: JoinSpec, batch: int):
    """The category of each key (see ``CATEGORIES``), decided in this order (``UNDECIDED`` for the
    keys that need :func:`_with_pair_checks` first)."""
    from pyspark.sql import functions as F
    for p in ("l", "r"):  # removed: seen, not there now: the batch whose watermark removed it
        agg = agg.withColumn(f"{p}_removed", F.when(~F.col(f"{p}_present") & F.col(f"{p}_seen"),
                                                    F.col(f"{p}_gone")))
    l_seen, r_seen = F.col("l_seen"), F.col("r_seen")
    both = l_seen & r_seen
    # Keys min and max cannot decide: null until _with_pair_checks has checked them pair by pair.
    checked = F.col(PAIR_CHECKED) if PAIR_CHECKED in agg.columns else F.lit(None)
    pair_fits = F.when(_undecided(spec), checked).otherwise(~_disjoint(spec))
    never = F.lit(batch + 1)
    together = ((F.coalesce("l_removed", never) > F.coalesce("r_first", never))
                & (F.coalesce("r_removed", never) > F.coalesce("l_first", never)))
    matched = F.coalesce("l_matched", F.lit(False)) | F.coalesce("r_matched", F.lit(False))
    category = (F.when(matched, "joined")
                .when(~l_seen & ~r_seen, "never_seen")
                .when(both & pair_fits.isNull(), UNDECIDED)
                .when(both & ~pair_fits, "outside_time_bounds")
                .when(both & together, "unmatched_within_bounds")
                .when(both, "evicted_by_watermark")
                .when(F.col("l_present"), "waiting_for_right")
                .when(F.col("r_present"), "waiting_for_left")
                .otherwise("evicted_by_watermark"))
    return agg.withColumn("category", category)


def classify(rows, spec: JoinSpec, batch: int, method: str, action: str = "classifying"):
    """``(per_key, counts)`` of any ``rows`` in the shape of ``history_rows``: one row per
    key with its evidence columns and category, and the number of keys per category."""
    agg = _aggregate(rows, spec, batch, method)
    return _classified(agg, spec, batch, action,
                       lambda: _with_pair_checks(rows, agg, spec))


def _classified(agg, spec: JoinSpec, batch: int, action: str, with_pair_checks):
    """Categories and their counts; where min and max left some keys undecided, again on
    ``with_pair_checks()`` (the same keys, those checked pair by pair)."""
    per_key = _with_category(agg, spec, batch)
    with spark_errors(action):
        counts = {r["category"]: int(r["count"])
                  for r in per_key.groupBy("category").count().collect()}
    if counts.get(UNDECIDED):
        return _classified(with_pair_checks(), spec, batch, action, None)
    return per_key, {c: counts.get(c, 0) for c in CATEGORIES}


# -- results ------------------------------------------------------------------------------------
@dataclass
class Verdict:
    """One key's category and the evidence for it (JSON-ready)."""
    key: object  # a string for a single-column key, else a list of the key's values
    category: str
    evidence: dict

    def to_dict(self) -> dict:
        return {"key": self.key, "category": self.category, "evidence": self.evidence}


@dataclass
class Diagnosis:
    """Every key of a join classified at one batch; verdicts with evidence for the keys asked."""
    checkpoint: Checkpoint
    spec: JoinSpec
    batch_id: int
    method: str
    history_start: int  # the first batch whose changes the history covers
    watermark_ms: int  # the watermark batch ``batch_id`` applied (its offsets entry)
    next_watermark_ms: int | None  # the one it committed for the next batch (its commit)
    per_key: object  # pyspark DataFrame: one row per key with its evidence and category
    counts: dict = field(default_factory=dict)  # category -> keys found in the state's history
    history: object = None  # pyspark DataFrame: the rows classified (``history_rows``)
    _watermarks: dict = field(default_factory=dict, repr=False)

    @property
    def total_keys(self) -> int:
        return sum(self.counts.values())

    def watermark_at(self, batch: int) -> int | None:
        """The watermark a batch applied (from its offsets entry)."""
        if batch not in self._watermarks:
            try:
                self._watermarks[batch] = self.checkpoint.offsets(batch).watermark_ms
            except RunbookError:
                self._watermarks[batch] = None
        return self._watermarks[batch]

    # -- keys ------------------------------------------------------------------------------------
    def _normalize(self, item) -> tuple:
        """A key from ``ids_to_verify`` as a tuple of Python values of the key's types."""
        n = len(self.spec.key_fields)
        values = list(item) if isinstance(item, (list, tuple)) else [item]
        if len(values) != n:
            shape = ("a single value" if n == 1 else
                     f"a list of {n} values, {self.spec.key_label()}")
            raise RunbookError(f"ids_to_verify item {item!r} does not fit the join key "
                               f"{self.spec.key_label()}: give each item as {shape}")
        return tuple(_coerce(v, t, item) for v, t in zip(values, self.spec.key_types))

    def _key_out(self, values: tuple):
        if len(values) == 1:
            return str(values[0])
        return [v if isinstance(v, (str, int, float, bool)) or v is None else str(v)
                for v in values]

    def verdicts(self, ids: list) -> list[Verdict]:
        """Verdicts for the given keys, in the order given (a key not in the state: never_seen)."""
        if not isinstance(ids, (list, tuple)):
            raise RunbookError(f"ids_to_verify must be a list of join key values, got {ids!r}")
        wanted = list(dict.fromkeys(self._normalize(i) for i in ids))
        found = self._evidence(wanted)
        return [found.get(key) or self._verdict(key, None) for key in wanted]

    def examples(self, per_category: int = 3) -> list[Verdict]:
        """Up to ``per_category`` keys of each category found, the oldest first (then by key)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F
        if per_category <= 0:
            return []
        cols = [f"k_{f}" for f in self.spec.key_fields]
        first = F.least(F.coalesce("l_first", F.lit(self.batch_id)),
                        F.coalesce("r_first", F.lit(self.batch_id)))
        ranked = self.per_key.withColumn("_first", first).withColumn(
            "_n", F.row_number().over(Window.partitionBy("category").orderBy("_first", *cols)))
        with spark_errors("choosing example keys"):
            picked = ranked.where(F.col("_n") <= per_category).drop("_first").collect()
        order = list(CATEGORIES)
        picked.sort(key=lambda r: (order.index(r["category"]), r["_n"]))
        return self._verdicts(picked)

    def _verdicts(self, found: list) -> list[Verdict]:
        """Verdicts of rows of ``per_key``, in their order."""
        cols = [f"k_{f}" for f in self.spec.key_fields]
        keys = [tuple(r[c] for c in cols) for r in found]
        times = self._times(found)
        return [self._verdict(key, r, times.get(key, {})) for key, r in zip(keys, found)]

    def _times(self, found: list) -> dict:
        """key -> {"l": [...], "r": [...]}: each side's distinct event times (ms, ascending) of
        rows of ``per_key``. From min and max where those say it all (one time, or none); the
        other keys' from the history, in one Spark job."""
        from pyspark.sql import functions as F
        cols = [f"k_{f}" for f in self.spec.key_fields]
        out, wanted = {}, []
        for r in found:
            key = tuple(r[c] for c in cols)
            out[key] = {p: [] if r[f"{p}_tmin"] is None else [r[f"{p}_tmin"]] for p in "lr"}
            if any(r[f"{p}_tmin"] != r[f"{p}_tmax"] for p in "lr"):
                wanted.append(key)
        if wanted and self.history is not None:
            with spark_errors("reading the event times of the keys shown"):
                read = (self.history.where(_one_of(cols, wanted) & ~F.col("is_delete"))
                        .groupBy(*cols, "is_left")
                        .agg(F.array_sort(F.collect_set("t")).alias("times")).collect())
            for r in read:
                out[tuple(r[c] for c in cols)]["l" if r["is_left"] else "r"] = list(r["times"])
        return out

    # -- evidence --------------------------------------------------------------------------------
    def _evidence(self, keys: list[tuple]) -> dict:
        """Verdicts of the keys found in the state's history, from their rows of ``per_key``."""
        if not keys:
            return {}
        cols = [f"k_{f}" for f in self.spec.key_fields]
        with spark_errors("reading the evidence of the keys shown"):
            found = self.per_key.where(_one_of(cols, keys)).collect()
        return {tuple(r[c] for c in cols): v for r, v in zip(found, self._verdicts(found))}

    def _side_evidence(self, agg, p: str, times: list) -> dict:
        if agg is None:
            return {"rows_now": 0, "times": [], "matched": False, "first_batch": None,
                    "removed_batch": None, "removed_at_watermark": None, "_tmax_now": None,
                    "_present": False}
        removed = agg[f"{p}_removed"]
        return {
            "rows_now": int(agg[f"{p}_rows_now"]),
            "times": [format_utc(t, zone=False) for t in times],
            "matched": bool(agg[f"{p}_matched"]),
            "first_batch": agg[f"{p}_first"],
            "removed_batch": removed,
            "removed_at_watermark": (format_utc(self.watermark_at(removed), zone=False)
                                     if removed is not None else None),
            "_tmax_now": agg[f"{p}_tmax_now"],
            "_present": bool(agg[f"{p}_present"]),
        }

    def _verdict(self, key: tuple, agg, times: dict | None = None) -> Verdict:
        """A key's verdict from its row of ``per_key`` (None: the key is not in the history) and
        each side's event times (``_times``)."""
        spec = self.spec
        times = times or {}
        category = agg["category"] if agg is not None else "never_seen"
        left = self._side_evidence(agg, "l", times.get("l", []))
        right = self._side_evidence(agg, "r", times.get("r", []))
        evidence = {"batch_id": self.batch_id,
                    "watermark": format_utc(self.watermark_ms, zone=False),
                    "next_watermark": format_utc(self.next_watermark_ms, zone=False),
                    "batches": f"{self.history_start}..{self.batch_id}", "method": self.method,
                    "left": left, "right": right}
        for name, side in (("left", left), ("right", right)):
            if side["_present"] != bool(side["rows_now"]):
                evidence["warning"] = (f"the history says the {name} side is "
                                       f"{'' if side['_present'] else 'not '}in the state of batch "
                                       f"{self.batch_id}, the state itself says otherwise")
        if times.get("l") and times.get("r"):
            gap, beyond = closest_pair(times["l"], times["r"], spec.lower_bound_seconds,
                                       spec.upper_bound_seconds)
            evidence.update({"gap_seconds": gap,
                             "allowed_gap_seconds": [-spec.lower_bound_seconds,
                                                     spec.upper_bound_seconds],
                             "beyond_bound_seconds": beyond})
        if category == "joined":
            batches = [agg[c] for c in ("l_first_matched", "r_first_matched") if agg[c] is not None]
            evidence["matched_in_batch"] = min(batches) if batches else None
        if category in ("waiting_for_right", "waiting_for_left"):
            side, bound = ((left, spec.lower_bound_seconds) if category == "waiting_for_right"
                           else (right, spec.upper_bound_seconds))
            if side["_tmax_now"] is not None:
                # Spark evicts a row once the watermark passes its time plus the bound that lets
                # the other side's future rows (all later than the watermark) still match it.
                expiry = side["_tmax_now"] + int(round(bound * 1000))
                evidence["expires_when_watermark_passes"] = format_utc(expiry, zone=False)
                evidence["evicted_by_next_batch"] = (self.next_watermark_ms is not None
                                                     and self.next_watermark_ms > expiry)
        for s in (left, right):
            s.pop("_tmax_now")
            s.pop("_present")
        return Verdict(self._key_out(key), category, evidence)

    def explain(self, verdict: Verdict) -> str:
        """A few sentences a person can read, from the evidence alone."""
        return explain(verdict, self.spec)


def diagnose(ckpt: Checkpoint, spec: JoinSpec, batch_id: int = -1, method: str = "auto",
             history_start: int | None = None) -> Diagnosis:
    """Classify every key of the join ``spec`` (from ``resolve_join``) at a batch (-1: the last
    committed one).

    ``method``: ``auto`` (the change feed where the provider has one, else the retained batches)
    or one of ``METHODS``. ``history_start``: the first batch of history to read (default: the
    oldest retained batch); a later one reads less and sees less.
    """
    batch = ckpt.resolve_batch(batch_id, spec.operator_id)
    if method == "auto":
        method = history_method(ckpt, spec.operator_id)
    elif method not in METHODS:
        raise RunbookError(f"method {method!r} is not known: use 'auto' or one of "
                           f"{', '.join(METHODS)}")
    oldest, _ = ckpt.retained_batch_range(spec.operator_id)
    start = oldest if history_start is None else history_start
    if not oldest <= start <= batch:
        raise RunbookError(f"history_start {start} is outside {oldest}..{batch}: the retained "
                           f"batches up to the diagnosed one")
    per_key, counts = _classified(
        key_history(ckpt, spec, batch, method, start), spec, batch,
        f"classifying the join keys of operator {spec.operator_id} at batch {batch}",
        lambda: key_history(ckpt, spec, batch, method, start, exact_pairs=True))
    return Diagnosis(ckpt, spec, batch, method, start, ckpt.offsets(batch).watermark_ms,
                     ckpt.next_watermark_ms(batch), per_key, counts,
                     history_rows(ckpt, spec, batch, method, start))


def _one_of(cols: list[str], keys: list[tuple]):
    """A filter: the key columns ``cols`` equal one of ``keys``."""
    from pyspark.sql import functions as F
    return reduce(lambda a, b: a | b, [
        reduce(lambda x, y: x & y, [F.col(c) == F.lit(v) for c, v in zip(cols, key)])
        for key in keys])


# -- pure helpers (no Spark) ----------------------------------------------------------------------
def closest_pair(left_ms: list[int], right_ms: list[int], lower: float, upper: float
                 ) -> tuple[float, float]:
    """The pair whose gap (left time - right time, seconds) is closest to the allowed range
    ``[-lower, +upper]``: ``(gap, seconds beyond the nearest bound)``; 0 beyond means it fits."""
    best = None
    for lt in left_ms:
        for rt in right_ms:
            gap = (lt - rt) / 1000
            beyond = max(-lower - gap, gap - upper, 0.0)
            if best is None or (beyond, abs(gap)) < (best[1], abs(best[0])):
                best = (gap, beyond)
    return (round(best[0], 3), round(best[1], 3)) if best else (None, None)


def explain(verdict: Verdict, spec: JoinSpec) -> str:
    """A few sentences explaining a verdict, from its evidence alone."""
    e, cat = verdict.evidence, verdict.category
    key = (verdict.key if isinstance(verdict.key, str)
           else "(" + ", ".join(map(str, verdict.key)) + ")")
    sides = {"left": (e["left"], spec.left.time_column),
             "right": (e["right"], spec.right.time_column)}

    def row(name: str) -> str:
        side, column = sides[name]
        where = ("in the state" if side["rows_now"] else
                 f"evicted in batch {side['removed_batch']}, whose watermark was "
                 f"{side['removed_at_watermark']}")
        plural = "rows" if len(side["times"]) > 1 else "row"
        return f"the {name} {plural} ({column} {', '.join(side['times'])}, {where})"

    def gap() -> str:
        lo, hi = e["allowed_gap_seconds"]
        return (f"{spec.left.time_column} - {spec.right.time_column} = {e['gap_seconds']:+g} s, "
                f"allowed {lo:+g} s to {hi:+g} s")

    head = f"{key}: {cat}."
    if cat == "joined":
        when = f" in batch {e['matched_in_batch']}" if e.get("matched_in_batch") is not None else ""
        pair = f" ({gap()})" if e.get("gap_seconds") is not None else ""
        met = " and ".join(row(n) for n in ("left", "right") if sides[n][0]["times"])
        return (f"{head} {_cap(met)}: Spark marked them matched{when}{pair}, so the join emitted "
                "the pair.")
    if cat in ("waiting_for_right", "waiting_for_left"):
        here, other = ("left", "right") if cat == "waiting_for_right" else ("right", "left")
        soon = (f" The next batch evicts it: it applies the watermark {e['next_watermark']}."
                if e.get("evicted_by_next_batch") else "")
        text = (f"{head} {_cap(row(here))}, unmatched; no {other} row with this key reached the "
                f"state in batches {e['batches']}.")
        if "expires_when_watermark_passes" in e:
            text += (f" A {other} row still joins if its {sides[other][1]} fits the time condition "
                     f"and it arrives before the watermark (batch {e['batch_id']}: "
                     f"{e['watermark']}) passes {e['expires_when_watermark_passes']}, when Spark "
                     f"evicts the {here} row.{soon}")
        return text
    outer = (" In a left outer join, Spark emitted the left row with nulls for the right side "
             "when it evicted it." if e["left"]["removed_batch"] is not None else "")
    if cat == "outside_time_bounds":
        return (f"{head} Both sides reached the state: {row('left')}; {row('right')}. The closest "
                f"pair is {e['beyond_bound_seconds']:g} s outside the time condition ({gap()}), "
                f"so Spark never matched them.{outer}")
    if cat == "evicted_by_watermark":
        parts = []
        for name in ("left", "right"):
            side, column = sides[name]
            if side["removed_batch"] is not None:
                parts.append(f"{row(name)} waited unmatched until the watermark removed it")
            elif side["times"]:
                parts.append(f"the {name} row ({column} {', '.join(side['times'])}) arrived in "
                             f"batch {side['first_batch']}, after that")
        never = [n for n in ("left", "right") if not sides[n][0]["times"]]
        tail = f"; no {never[0]} row with this key reached the state" if never else ""
        return f"{head} {_cap('; '.join(parts))}{tail}.{outer}"
    if cat == "unmatched_within_bounds":
        return (f"{head} Both sides were in the state together and a pair fits the bounds given "
                f"({gap()}), yet Spark did not mark them matched: the query's condition is more "
                "than the key and these bounds (another predicate, or other bounds).")
    return (f"{head} Neither side reached the join's state in batches {e['batches']}: the rows "
            "were filtered before the join, dropped as late (behind the watermark when they "
            "arrived), carry a different key, or were never sent.")


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def counts_lines(diagnosis: Diagnosis) -> list[str]:
    total = diagnosis.total_keys
    lines = [f"{total:,} join keys in the state history of batches {diagnosis.history_start}.."
             f"{diagnosis.batch_id} ({diagnosis.method}):"]
    for category, n in diagnosis.counts.items():
        if category == "never_seen":
            continue
        lines.append(f"  {category:<24} {n:>8,}  {CATEGORIES[category]}")
    return lines


def verdicts_table(verdicts: list[Verdict], spec: JoinSpec):
    """The per-key table: key, category, each side's rows and times, the gap, removals."""
    import pandas as pd

    def side(s: dict) -> str:
        if not s["times"]:
            return "-"
        flag = " matched" if s["matched"] else ""
        where = (f"{s['rows_now']} now" if s["rows_now"] else f"evicted b{s['removed_batch']}")
        return f"{', '.join(t[11:] for t in s['times'])} ({where}{flag})"

    return pd.DataFrame([{
        "key": v.key if isinstance(v.key, str) else tuple(v.key),
        "category": v.category,
        f"left {spec.left.time_column}": side(v.evidence["left"]),
        f"right {spec.right.time_column}": side(v.evidence["right"]),
        "gap_s": ("-" if v.evidence.get("gap_seconds") is None
                  else f"{v.evidence['gap_seconds']:+g}"),
    } for v in verdicts])


def summarize(summary, diagnosis: Diagnosis, verdicts: list[Verdict]) -> None:
    """Fill the summary: the common keys of this runbook and one finding per kind of mismatch."""
    counts = dict(diagnosis.counts)
    counts["never_seen"] = sum(v.category == "never_seen" for v in verdicts)
    advice = {
        "evicted_by_watermark": ("warning", "keys waited for the other side until the watermark "
                                 "evicted them: widen the watermark delay or the time range, or "
                                 "check the other side's source"),
        "outside_time_bounds": ("warning", "keys have both sides but too far apart in time: widen "
                                "the time range if the data is right"),
        "unmatched_within_bounds": ("warning", "keys have both sides within the bounds given but "
                                    "were not matched: check the join condition"),
        "never_seen": ("warning", "keys asked about never reached the join state: check the "
                       "upstream filter, late data and the key's format"),
        "waiting_for_right": ("info", "keys wait for a right row"),
        "waiting_for_left": ("info", "keys wait for a left row"),
    }
    for category, (severity, text) in advice.items():
        if counts.get(category):
            summary.add_finding(severity, category, f"{counts[category]:,} {text} "
                                "(runbooks/join-missing-rows.md)")
    summary.details.update({
        "batch_id": diagnosis.batch_id,
        "operator_id": diagnosis.spec.operator_id,
        "method": diagnosis.method,
        "categories": counts,
        "verdicts": [v.to_dict() for v in verdicts],
    })


def _coerce(value, dtype, item):
    from pyspark.sql import types as T
    try:
        if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if isinstance(dtype, (T.FloatType, T.DoubleType)):
            return float(value)
        if isinstance(dtype, T.BooleanType):
            if isinstance(value, str) and value.lower() in ("true", "false"):
                return value.lower() == "true"
            if isinstance(value, bool):
                return value
            raise ValueError(value)
        if isinstance(dtype, T.StringType):
            return str(value)
    except (TypeError, ValueError):
        raise RunbookError(f"ids_to_verify item {item!r}: {value!r} is not a "
                           f"{dtype.simpleString()}, the type of the join key") from None
    raise RunbookError(f"ids_to_verify: join keys of type {dtype.simpleString()} are not supported "
                       "(string, integer, floating point and boolean keys are)")


def _secs(seconds: float) -> str:
    return f"INTERVAL {seconds:g} SECONDS"
