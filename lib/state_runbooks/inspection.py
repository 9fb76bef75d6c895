"""The inspect-state runbook's logic: per-unit figures, skew, hot keys, expiry, checklist.

A unit is what Spark's ``statestore`` reader reads (``operators.state_units``): a store, a join
side's store, a state variable of transformWithState or its registered timers.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .checkpoint import Checkpoint, StoreInfo, batch_ranges
from .errors import RunbookError, spark_errors
from .formatting import format_utc
from .operators import (StateUnit, find_unit, is_reader_limit, matches_store, operator_model,
                        state_units)
from .state_growth import growth_verdicts
from .state_reader import per_core_tasks, quote_path, read_unit, unsafe_row_size_sql

# Thresholds of the production checklist, in one place so the playbooks can quote them.
SKEW_WARNING_RATIO = 2.0  # max rows in a partition / mean rows per partition
# Below this mean of rows per partition a skew ratio is chance (a few keys hashed unevenly), so it
# is shown but not judged.
SKEW_MIN_ROWS_PER_PARTITION = 10
LARGE_STATE_ROWS = 1_000_000  # above this, the HDFS provider's JVM memory becomes a risk
MULTI_ROW_STORE_SUFFIX = "keyWithIndexToValue"  # join stores: one key, several rows (by index)
# Expiry rules decided by the event-time watermark (see operators.Expiry).
WATERMARK_RULES = ("watermark_key", "expires_at", "session_end", "join_side")
# How a unit's rows go, per expiry rule, in words.
_RULE_WORDS = {
    "watermark_key": "the watermark evicts it by an event-time column of the key",
    "key_without_event_time": "nothing evicts it: its key has no event-time column",
    "expires_at": "the watermark evicts each key once past its event time plus the delay",
    "session_end": "the watermark evicts a session once past its end",
    "join_side": "the watermark evicts a side's rows once the other side can no longer match them",
    "timeout": "its keys time out (GroupState timeouts)",
    "ttl": "its rows expire by TTL",
    "timer": "timers fire and are removed",
    "processor": "only the processor's own code clears it",
    "never": "one row that never expires",
    "unknown": "its expiry is unknown",
}


@dataclass
class StoreReport:
    """What one unit (store, join store, state variable, timers) holds at one batch, from one
    scan of its state; ``reader_error`` set (and figures empty) when Spark's reader refused it."""
    operator_id: int
    operator_name: str
    store_name: str
    num_partitions: int
    batch_id: int
    rows: int | None
    key_bytes: int
    value_bytes: int
    rows_per_partition: list[int]
    skew_ratio: float | None
    hot_keys: list[dict] = field(default_factory=list)  # [{"key": ..., "rows": n}]
    disk: dict = field(default_factory=dict)
    payload_bytes_per_partition: list[int] = field(default_factory=list)  # key + value bytes
    state_variable: str | None = None
    kind: str = "store"
    partitions_with_state: tuple = ()
    skew_judged: bool = False  # enough rows and partitions for the ratio to mean something
    expiry_rule: str = "unknown"
    expiry_column: str | None = None
    expiry_clock: str | None = None  # event_time, processing_time, either
    expiry_threshold_ms: int | None = None  # the watermark, or the batch's timestamp
    rows_due: int | None = None  # rows whose expiry column is at or before the threshold
    rows_with_deadline: int | None = None  # rows whose expiry column is set
    earliest_deadline_ms: int | None = None
    reader_error: str | None = None
    reader_error_class: str | None = None
    files_store: str = "default"

    @property
    def label(self) -> str:
        if self.kind == "timers":
            return f"{self.operator_id}/timers"
        return f"{self.operator_id}/{self.state_variable or self.store_name}"

    @property
    def readable(self) -> bool:
        return self.reader_error is None

    # The watermark view of the expiry, as the checklist and older callers read it.
    @property
    def event_time_column(self) -> str | None:
        return self.expiry_column if self.expiry_clock == "event_time" else None

    @property
    def watermark_ms(self) -> int | None:
        return self.expiry_threshold_ms if self.expiry_clock == "event_time" else None

    @property
    def rows_behind_watermark(self) -> int | None:
        return self.rows_due if self.expiry_clock == "event_time" else None

    def summary(self) -> dict:
        """The summary JSON's entry for this unit."""
        keys = ("operator_id", "operator_name", "store_name", "state_variable", "kind",
                "num_partitions", "rows", "key_bytes", "value_bytes", "rows_per_partition",
                "skew_ratio", "expiry_rule", "rows_due", "reader_error_class")
        return {k: asdict(self)[k] for k in keys}


def skew_ratio(rows_per_partition: list[int]) -> float | None:
    """Max rows in a partition over the mean rows per partition (1.0 = perfectly balanced).

    Every partition counts, empty ones as 0: a groupBy over the state only sees partitions that
    hold rows, which hides exactly the imbalance this measures. None when the store is empty.
    """
    total = sum(rows_per_partition)
    if not rows_per_partition or total == 0:
        return None
    return round(max(rows_per_partition) / (total / len(rows_per_partition)), 3)


def event_time_column(key_schema) -> str | None:
    """The event-time column of a state key that the watermark evicts on, if it has one:
    ``window.end`` for windowed aggregations, else the key's only timestamp (deduplication)."""
    from pyspark.sql import types as T
    names = {f.name: f.dataType for f in key_schema.fields}
    window = names.get("window")
    if isinstance(window, T.StructType) and "end" in window.fieldNames():
        return "key.window.end"
    stamps = [n for n, t in names.items() if isinstance(t, (T.TimestampType, T.TimestampNTZType))]
    return f"key.{stamps[0]}" if len(stamps) == 1 else None


def _session_end_column(value_schema) -> str | None:
    """A session window's end in the value (``value.<session column>.end``)."""
    from pyspark.sql import types as T
    for f in value_schema.fields:
        if isinstance(f.dataType, T.StructType) and {"start", "end"} <= set(
                f.dataType.fieldNames()):
            return f"value.{f.name}.end"
    return None


def _ttl_column(schema) -> str | None:
    """Where a state variable with TTL keeps its expiry (``<column>.ttlExpirationMs``)."""
    from pyspark.sql import types as T
    for f in schema.fields:
        if isinstance(f.dataType, T.StructType) and "ttlExpirationMs" in f.dataType.fieldNames():
            return f"{f.name}.ttlExpirationMs"
    return None


def _expiry_column(unit: StateUnit, schema) -> tuple[str, str | None]:
    """The unit's expiry rule and column, resolved against the state's schema."""
    rule, column = unit.expiry.rule, unit.expiry.column
    if rule == "watermark_key":
        column = event_time_column(schema["key"].dataType)
        return (rule, column) if column else ("key_without_event_time", None)
    if rule == "session_end":
        return rule, _session_end_column(schema["value"].dataType)
    if rule == "ttl" and column is None:
        return rule, _ttl_column(schema)
    return rule, column


def _deadline_ms(column: str, schema, micros: bool) -> str:
    """The expiry column as epoch milliseconds (a SQL expression)."""
    from pyspark.sql import types as T
    dtype = schema
    for part in column.split("."):
        dtype = dtype[part].dataType
    col = quote_path(*column.split("."))
    if isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        return f"unix_millis({col})"
    return f"CAST({col} DIV 1000 AS BIGINT)" if micros else f"CAST({col} AS BIGINT)"


def _threshold_ms(ckpt: Checkpoint, clock: str | None, batch_id: int) -> int | None:
    """What a deadline is compared with: the watermark the next batch applies (commits), or the
    batch's own processing time (offsets)."""
    if clock == "event_time":
        return ckpt.next_watermark_ms(batch_id) or None
    if clock == "processing_time":
        return ckpt.offsets(batch_id).timestamp_ms or None
    return None


def inspect_unit(ckpt: Checkpoint, unit: StateUnit, batch_id: int, top_keys: int = 5
                 ) -> StoreReport:
    """Rows, bytes, rows per partition, hot keys and expiry figures of one unit: one state scan.
    Raises RunbookError when Spark's reader refuses the unit or cannot load its state."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    df = read_unit(ckpt, unit, batch_id)
    schema = df.schema
    key_schema = schema["key"].dataType
    others = [f for f in schema.fields if f.name not in ("key", "partition_id")]
    if len(others) == 1 and isinstance(others[0].dataType, T.StructType):
        value_col, value_schema = quote_path(others[0].name), others[0].dataType
    else:  # a list element, a map entry or a timer: their columns as one row
        value_col = f"struct({', '.join(quote_path(f.name) for f in others)})"
        value_schema = T.StructType(others)
    rule, column = _expiry_column(unit, schema)
    threshold = _threshold_ms(ckpt, unit.expiry.clock, batch_id) if column else None
    measures = {"_rows": "1", "_key_bytes": unsafe_row_size_sql("key", key_schema),
                "_value_bytes": unsafe_row_size_sql(value_col, value_schema)}
    if column:
        deadline = _deadline_ms(column, schema, unit.expiry.micros)
        set_ = f"{deadline} > 0"  # group state without a timeout keeps -1
        measures["_deadline"] = f"CASE WHEN {set_} THEN 1 ELSE 0 END"
        measures["_earliest"] = f"CASE WHEN {set_} THEN {deadline} END"
        if threshold:
            measures["_due"] = f"CASE WHEN {set_} AND {deadline} <= {threshold} THEN 1 ELSE 0 END"
    # SQL text: one call to Spark for the whole projection (see unsafe_row_size_sql).
    scanned = per_core_tasks(ckpt.spark, df.selectExpr(
        "partition_id", "key", *[f"{sql} AS {name}" for name, sql in measures.items()]))
    sums = [(F.min if c == "_earliest" else F.sum)(c).alias(c) for c in measures]

    multi_row = (unit.store_name.endswith(MULTI_ROW_STORE_SUFFIX)
                 and "index" in key_schema.fieldNames())
    hot: list[dict] = []
    with spark_errors(f"scanning state of operator {unit.operator_id} {unit.label}"):
        if multi_row:
            # A join key holds one row per index: count rows per logical key once, keep that small
            # aggregate, and derive both the partition totals and the hottest keys from it.
            logical = [F.col(f"key.{n}").alias(n) for n in key_schema.fieldNames() if n != "index"]
            per_key = scanned.groupBy("partition_id", *logical).agg(*sums).persist()
            try:
                totals = per_key.groupBy("partition_id").agg(
                    *[(F.min if c == "_earliest" else F.sum)(c).alias(c)
                      for c in per_key.columns if c.startswith("_")]).collect()
                for row in (per_key.where(F.col("_rows") > 1).orderBy(F.desc("_rows"))
                            .limit(top_keys).collect() if top_keys > 0 else []):
                    key = [row[c.name] for c in key_schema.fields if c.name != "index"]
                    hot.append({"key": key[0] if len(key) == 1 else key, "rows": int(row["_rows"]),
                                "partition_id": int(row["partition_id"])})
            finally:
                per_key.unpersist()
        else:
            totals = scanned.groupBy("partition_id").agg(*sums).collect()

    rows_per_partition = [0] * unit.num_partitions
    payload_per_partition = [0] * unit.num_partitions
    key_bytes = value_bytes = due = with_deadline = 0
    earliest = []
    for row in (r.asDict() for r in totals):
        part = int(row["partition_id"])
        if part >= unit.num_partitions:  # state on more partitions than the logs say
            rows_per_partition += [0] * (part + 1 - len(rows_per_partition))
            payload_per_partition += [0] * (part + 1 - len(payload_per_partition))
        rows_per_partition[part] = int(row["_rows"])
        payload_per_partition[part] = int(row["_key_bytes"] or 0) + int(row["_value_bytes"] or 0)
        key_bytes += int(row["_key_bytes"] or 0)
        value_bytes += int(row["_value_bytes"] or 0)
        due += int(row.get("_due") or 0)
        with_deadline += int(row.get("_deadline") or 0)
        if row.get("_earliest") is not None:
            earliest.append(int(row["_earliest"]))
    held = [rows_per_partition[p] for p in unit.partitions_with_state
            if p < len(rows_per_partition)]
    rows = sum(rows_per_partition)
    return StoreReport(
        operator_id=unit.operator_id, operator_name=unit.operator_name,
        store_name=unit.store_name, num_partitions=len(rows_per_partition), batch_id=batch_id,
        rows=rows, key_bytes=key_bytes, value_bytes=value_bytes,
        rows_per_partition=rows_per_partition,
        skew_ratio=skew_ratio(held) if len(held) > 1 else None,
        hot_keys=hot, disk=ckpt.disk_bytes(unit.operator_id, unit.files_store),
        payload_bytes_per_partition=payload_per_partition, state_variable=unit.state_variable,
        kind=unit.kind, partitions_with_state=unit.partitions_with_state,
        skew_judged=len(held) > 1 and rows >= SKEW_MIN_ROWS_PER_PARTITION * len(held),
        expiry_rule=rule, expiry_column=column, expiry_clock=unit.expiry.clock if column else None,
        expiry_threshold_ms=threshold, rows_due=due if column and threshold else None,
        rows_with_deadline=with_deadline if column else None,
        earliest_deadline_ms=min(earliest) if earliest else None, files_store=unit.files_store)


def unreadable_report(ckpt: Checkpoint, unit: StateUnit, batch_id: int, error: RunbookError
                      ) -> StoreReport:
    """A unit Spark's reader did not read: no figures, the error, and its files' bytes."""
    return StoreReport(
        operator_id=unit.operator_id, operator_name=unit.operator_name,
        store_name=unit.store_name, num_partitions=unit.num_partitions, batch_id=batch_id,
        rows=None, key_bytes=0, value_bytes=0, rows_per_partition=[0] * unit.num_partitions,
        skew_ratio=None, disk=ckpt.disk_bytes(unit.operator_id, unit.files_store),
        state_variable=unit.state_variable, kind=unit.kind,
        partitions_with_state=unit.partitions_with_state, expiry_rule=unit.expiry.rule,
        reader_error=str(error), reader_error_class=error.error_class,
        files_store=unit.files_store)


def inspect_store(ckpt: Checkpoint, store: StoreInfo, batch_id: int, top_keys: int = 5
                  ) -> StoreReport:
    """:func:`inspect_unit` of the unit read by ``store``'s name (a store the model reads
    otherwise, such as a join in state format 3 as ``default``, is read as named: Spark's reader
    decides)."""
    unit = find_unit(ckpt, store.operator_id, store.store_name)
    if unit is None:
        model = operator_model(ckpt, store.operator_id)
        unit = StateUnit(store.operator_id, store.operator_name, store.store_name, None, "store",
                         store.num_partitions, tuple(range(store.num_partitions)),
                         {"storeName": store.store_name}, store.store_name, model.expiry)
    return inspect_unit(ckpt, unit, batch_id, top_keys)


def inspect_stores(ckpt: Checkpoint, batch_id: int = -1, operator_id: int = -1,
                   store_name: str = "", top_keys: int = 5) -> list[StoreReport]:
    """Reports for every unit (or one operator's, or one store's or state variable's) at a batch
    (-1: last committed). A unit Spark cannot read gets a report with its error, not an
    exception: the other units are still inspected."""
    batch = ckpt.resolve_batch(batch_id, operator_id)
    units = [u for u in state_units(ckpt, operator_id) if matches_store(u, store_name)]
    if not units:
        valid = sorted({u.state_variable or u.store_name for u in state_units(ckpt, operator_id)})
        where = "no operator" if operator_id == -1 else f"operator {operator_id}"
        raise RunbookError(f"{where} has a store named {store_name!r}; stores: "
                           f"{', '.join(valid)}")
    reports = []
    for unit in units:
        try:
            reports.append(inspect_unit(ckpt, unit, batch, top_keys))
        except RunbookError as error:
            if error.spark_error is None:  # our own validation: a parameter to fix
                raise
            reports.append(unreadable_report(ckpt, unit, batch, error))
    return reports


@dataclass(frozen=True)
class CheckItem:
    item: str
    status: str  # pass, warn, info
    evidence: str


def production_checklist(ckpt: Checkpoint, reports: list[StoreReport], growth_table,
                         skew_warning_ratio: float = SKEW_WARNING_RATIO) -> list[CheckItem]:
    """The production checklist, each item decided by the checkpoint's own facts."""
    items = []
    total_rows = sum(r.rows or 0 for r in reports)
    kind = ckpt.provider_kind
    if kind == "rocksdb":
        items.append(CheckItem("State store provider", "pass",
                               f"RocksDB pinned in offsets: {ckpt.provider_class}"))
    elif total_rows > LARGE_STATE_ROWS:
        items.append(CheckItem("State store provider", "warn",
                               f"HDFS-backed provider keeps all {total_rows:,} rows in executor JVM "
                               f"memory (> {LARGE_STATE_ROWS:,}): plan a switch to RocksDB "
                               "(runbooks/switch-to-rocksdb.md)"))
    else:
        items.append(CheckItem("State store provider", "pass",
                               f"HDFS-backed provider (Spark's default) with {total_rows:,} rows: "
                               f"fine below {LARGE_STATE_ROWS:,}"))

    changelog = ckpt.changelog_checkpointing
    if changelog is None:
        items.append(CheckItem("Changelog checkpointing", "info",
                               "not applicable: the HDFS-backed provider writes a delta per batch"))
    elif changelog:
        items.append(CheckItem("Changelog checkpointing", "pass",
                               "RocksDB writes <version>.changelog files"))
    else:
        items.append(CheckItem("Changelog checkpointing", "warn",
                               "RocksDB uploads a full snapshot (zip) every batch; set "
                               "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing."
                               "enabled=true on a new checkpoint"))

    last = ckpt.last_committed_batch_id
    watermark, where = ckpt.watermark(last) if last is not None else (0, "offsets")
    never_evicted = [r for r in reports if r.expiry_rule == "key_without_event_time"]
    by_watermark = [r for r in reports if r.expiry_rule in WATERMARK_RULES]
    if watermark <= 0 and by_watermark + never_evicted:
        names = ", ".join(sorted({r.operator_name for r in by_watermark + never_evicted}))
        items.append(CheckItem("Watermark", "warn",
                               f"no event-time watermark in {where}: the state of {names} "
                               "can only grow; add withWatermark on the event-time column"))
    elif watermark <= 0 and any(r.expiry_rule == "unknown" for r in reports):
        names = ", ".join(sorted({r.label for r in reports if r.expiry_rule == "unknown"}))
        items.append(CheckItem("Watermark", "info",
                               f"no event-time watermark in {where}; the runbooks do not know how "
                               f"the state of {names} expires, so whether it needs one is not "
                               "judged"))
    elif watermark <= 0:
        items.append(CheckItem("Watermark", "info",
                               f"no event-time watermark in {where}, and none is needed: "
                               + "; ".join(sorted({f"{r.operator_name}: "
                                                   f"{_RULE_WORDS[r.expiry_rule]}"
                                                   for r in reports if r.readable}))))
    elif never_evicted:
        items.append(CheckItem("Watermark", "warn",
                               f"watermark {format_utc(watermark)} in {where}, but the keys of "
                               + ", ".join(f"{r.label} ({r.operator_name})" for r in never_evicted)
                               + " have no event-time column, so the watermark never evicts them; "
                               "group or deduplicate on the event-time column too"))
    else:
        items.append(CheckItem("Watermark", "pass",
                               f"event-time watermark {format_utc(watermark)} in {where}: "
                               "expired state is evicted"))

    judged = [r for r in reports if r.skew_judged and r.skew_ratio is not None]
    skewed = [r for r in judged if r.skew_ratio > skew_warning_ratio]
    worst = max(judged, key=lambda r: r.skew_ratio, default=None)
    if skewed:
        items.append(CheckItem("Partition balance", "warn",
                               "; ".join(f"{r.label}: skew {r.skew_ratio:.2f} > "
                                         f"{skew_warning_ratio:.2f}" for r in skewed)
                               + " (runbooks/partition-skew.md)"))
    elif worst is not None:
        items.append(CheckItem("Partition balance", "pass",
                               f"worst skew {worst.skew_ratio:.2f} ({worst.label}) <= "
                               f"{skew_warning_ratio:.2f}"))
    elif any(r.rows for r in reports):
        single = sorted({r.operator_name for r in reports if len(r.partitions_with_state) == 1})
        why = (f"{', '.join(single)} keeps its state in one partition by design; " if single
               else "")
        items.append(CheckItem("Partition balance", "info",
                               f"not judged: {why}fewer than {SKEW_MIN_ROWS_PER_PARTITION} rows "
                               "per partition elsewhere, too few for a ratio to mean anything"))
    else:
        items.append(CheckItem("Partition balance", "info", "every store is empty"))

    verdicts = growth_verdicts(growth_table) if growth_table is not None else {}
    growing = {s: v for s, v in verdicts.items() if v["only_grew"]}
    unbounded_labels = {r.label for r in never_evicted}
    if watermark <= 0:
        unbounded_labels |= {r.label for r in by_watermark}
    rules = {r.label: r.expiry_rule for r in reports}
    unbounded = {s: v for s, v in growing.items() if s in unbounded_labels}
    filling = {s: v for s, v in growing.items() if s not in unbounded_labels}
    if unbounded:
        items.append(CheckItem("State growth", "warn",
                               "; ".join(f"{s} only grew ({v['first']:,} -> {v['last']:,} rows) "
                                         "and nothing evicts it"
                                         for s, v in unbounded.items())))
    elif filling:
        items.append(CheckItem("State growth", "info",
                               "; ".join(f"{s} only grew ({v['first']:,} -> {v['last']:,} rows; "
                                         f"{_RULE_WORDS.get(rules.get(s), _RULE_WORDS['unknown'])})"
                                         for s, v in filling.items())
                               + ": expected while a young query fills its horizon; "
                               "check again later"))
    elif verdicts:
        points = max(v["points"] for v in verdicts.values())
        items.append(CheckItem("State growth", "pass",
                               f"no store only grew over {points} sampled batches"))

    unread = [r for r in reports if not r.readable]
    damaged = [r for r in unread if not is_reader_limit(r.reader_error_class)]
    if damaged:
        items.append(CheckItem("State loads", "warn",
                               "; ".join(f"{r.label}: {r.reader_error_class or 'error'}"
                                         for r in damaged)
                               + ": Spark could not load this state; run 05 recover corrupted "
                               "state (runbooks/cannot-load-state-store.md)"))
    elif unread:
        items.append(CheckItem("State loads", "info",
                               "; ".join(f"{r.label}: {r.reader_error_class}" for r in unread)
                               + ": a limit of Spark's statestore reader, not damage; the query "
                               "itself is not affected"))

    items.append(retention_check(ckpt))
    items.append(CheckItem("Monitoring and recovery", "info",
                           "not visible in a checkpoint: schedule this runbook "
                           "(runbooks/schedules/inspect_state.yaml) and keep "
                           "runbooks/cannot-load-state-store.md at hand"))
    return items


def retention_check(ckpt: Checkpoint) -> CheckItem:
    """Whether state maintenance deletes old versions: the retained range's start advances once
    more than ``minBatchesToRetain`` batches have run. Batches are counted from the logs' batch
    ids (Spark numbers batches from 0 and purges old log files too), not from retained files."""
    lo, _hi = ckpt.retained_batch_range()
    batches = ckpt.offset_batch_ids
    ran = batches[-1] + 1 if batches else 0
    retain = ckpt.min_batches_to_retain
    if lo > 0:
        return CheckItem("Old state versions cleaned up", "pass",
                         f"oldest retained batch is {lo} after {ran} batches "
                         f"(minBatchesToRetain={retain})")
    if ran <= retain:
        return CheckItem("Old state versions cleaned up", "info",
                         f"not due yet: {ran} batches ran, Spark keeps the last "
                         f"minBatchesToRetain={retain}")
    return CheckItem("Old state versions cleaned up", "warn",
                     f"state from batch {lo} is still on disk after {ran} batches "
                     f"(minBatchesToRetain={retain}): state maintenance has not cleaned up")


# -- tables and sentences for the notebook ------------------------------------------------------
def operators_table(ckpt: Checkpoint):
    """One row per store as the operator metadata lists it."""
    import pandas as pd
    return pd.DataFrame([{"operator_id": s.operator_id, "operator": s.operator_name,
                          "store": s.store_name, "partitions": s.num_partitions,
                          "min_batch_id": s.min_batch_id, "max_batch_id": s.max_batch_id}
                         for s in ckpt.stores()])


def units_table(ckpt: Checkpoint, operator_id: int = -1):
    """One row per unit Spark's reader reads: what it is, how it is read, how its rows go."""
    import pandas as pd
    return pd.DataFrame([{"unit": u.label, "kind": u.kind,
                          "read_with": ", ".join(f"{k}={v}" for k, v in u.options.items()),
                          "partitions_with_state": batch_ranges(list(u.partitions_with_state)),
                          "expires_by": u.expiry.rule + (" (TTL)" if u.ttl else "")}
                         for u in state_units(ckpt, operator_id)])


def operator_lines(ckpt: Checkpoint, operator_id: int = -1) -> list[str]:
    """Per operator: its family, and what the runbooks note about its layout."""
    ops = ckpt.operators() if operator_id == -1 else [ckpt.operator(operator_id)]
    lines = []
    for op in ops:
        model = operator_model(ckpt, op.operator_id)
        extra = f", join state format {model.join_state_format}" if model.join_state_format else ""
        extra += f", time mode {model.time_mode}" if model.time_mode else ""
        lines.append(f"operator {op.operator_id}: {op.operator_name} ({model.family}{extra})")
        lines += [f"  {note}" for note in model.notes]
    if ckpt.state_metadata_error:
        lines.append(f"Spark's state-metadata source failed: {ckpt.state_metadata_error}")
    return lines


def stores_table(reports: list[StoreReport]):
    """Figures per unit. Units kept in one store's files (a transformWithState's variables, a
    join in state format 3) share its disk bytes: shown on the first of them only."""
    import pandas as pd
    shown = set()
    rows = []
    for r in reports:
        files = (r.operator_id, r.files_store)
        rows.append({"store": r.label, "operator": r.operator_name, "rows": r.rows,
                     "key_bytes": r.key_bytes, "value_bytes": r.value_bytes,
                     "min_rows": min((r.rows_per_partition[p] for p in r.partitions_with_state
                                      if p < len(r.rows_per_partition)), default=0),
                     "max_rows": max(r.rows_per_partition, default=0),
                     "skew_ratio": r.skew_ratio,
                     "disk_bytes": None if files in shown else r.disk.get("retained_bytes")})
        shown.add(files)
    table = pd.DataFrame(rows)
    if not table.empty:  # integers, with <NA> where the bytes were shown above
        table["disk_bytes"] = table["disk_bytes"].astype("Int64")
    return table


def reader_lines(reports: list[StoreReport], ckpt: Checkpoint) -> list[str]:
    """For each unit Spark's reader did not read: its error and what the files say."""
    lines = []
    for r in reports:
        if r.readable:
            continue
        files = ckpt.state_files(r.operator_id, r.files_store)
        versions = sorted({f.version for f in files})
        partitions = batch_ranges(sorted({f.partition_id for f in files}))
        seen = (f"{len(files)} files in partitions {partitions}, state versions "
                f"{versions[0]}..{versions[-1]}, {sum(f.size for f in files):,} bytes"
                if files else "no state files")
        what = ("a limit of Spark's statestore reader, not damage"
                if is_reader_limit(r.reader_error_class)
                else "Spark could not load it: run 05 recover corrupted state")
        lines.append(f"{r.label} ({r.operator_name}): not read ({r.reader_error_class or 'error'}: "
                     f"{what}); its files: {seen}")
    return lines


def hot_keys_lines(reports: list[StoreReport]) -> list[str]:
    multi = [r for r in reports if r.store_name.endswith(MULTI_ROW_STORE_SUFFIX)]
    if not multi:
        return ["Hot keys are counted in a stream-stream join's keyWithIndexToValue stores, where "
                "one key holds a row per input row still waiting; there is none here."]
    lines = []
    for r in multi:
        if not r.hot_keys:
            lines.append(f"{r.label}: every key holds one row.")
            continue
        keys = ", ".join(f"{k['key']} ({k['rows']} rows, partition {k['partition_id']})"
                         for k in r.hot_keys)
        lines.append(f"{r.label}: {keys}")
    return lines


def expiry_lines(reports: list[StoreReport]) -> list[str]:
    """One sentence per unit: how its rows go, and how many are due now."""
    return [_expiry_line(r) for r in reports]


def _expiry_line(r: StoreReport) -> str:
    head = f"{r.label} ({r.operator_name})"
    if not r.readable:
        return f"{head}: not read, no expiry figures."
    rule, rows = r.expiry_rule, f"{r.rows:,}"
    if rule == "key_without_event_time":
        return f"{head}: its key has no event-time column; the watermark does not evict on the key."
    if rule in ("watermark_key", "expires_at", "session_end") and r.expiry_column is None:
        return f"{head}: no event-time column found in its state; no expiry figure."
    if rule in ("watermark_key", "expires_at", "session_end"):
        if r.watermark_ms is None:
            return f"{head}: no watermark recorded after batch {r.batch_id}."
        what = {"watermark_key": "rows have", "expires_at": "keys have",
                "session_end": "sessions have"}[rule]
        why = {"watermark_key": "",
               "expires_at": " (each key is kept until the watermark passes its event time plus "
                             "the watermark delay)",
               "session_end": " (a session closes once the watermark passes its end)"}[rule]
        return (f"{head}: {r.rows_due:,} of {rows} {what} {r.expiry_column} <= "
                f"{format_utc(r.watermark_ms)}, the watermark committed after batch {r.batch_id}; the "
                f"next batch evicts them{why}.")
    if rule == "join_side":
        side = r.store_name.split("-", 1)[0]
        return (f"{head}: the watermark evicts the {side} side's rows once no future row of the "
                "other side can match them (their event time plus the join's time bound falls "
                "behind it); 04 diagnose join mismatch shows the bounds and the evicted rows.")
    if rule == "timeout":
        earliest = (f", the earliest at {format_utc(r.earliest_deadline_ms)}"
                    if r.earliest_deadline_ms else "")
        return (f"{head}: {r.rows_with_deadline:,} of {rows} keys have a timeout set "
                f"({r.expiry_column}{earliest}); once the watermark (event-time timeout) or the "
                "clock (processing-time timeout) passes it, Spark calls the function with "
                "hasTimedOut and the function removes the state or keeps it.")
    if rule == "ttl":
        if r.expiry_column is None:
            return f"{head}: TTL enabled, but no TTL column found in its state."
        earliest = (f" the earliest expires at {format_utc(r.earliest_deadline_ms)};"
                    if r.earliest_deadline_ms else "")
        due = (f" {r.rows_due:,} had already expired at batch {r.batch_id}'s time "
               f"{format_utc(r.expiry_threshold_ms)}." if r.rows_due is not None else "")
        return (f"{head}: {r.kind} state with TTL ({r.expiry_column}) on {rows} rows;{earliest} "
                f"Spark drops a row once processing time passes it.{due}")
    if rule == "timer":
        clock = "watermark" if r.expiry_clock == "event_time" else "processing time"
        earliest = (f", the earliest at {format_utc(r.earliest_deadline_ms)}"
                    if r.earliest_deadline_ms else "")
        due = (f"; {r.rows_due:,} were due at batch {r.batch_id}"
               if r.rows_due is not None else "")
        return (f"{head}: {rows} registered timers ({clock}){earliest}{due}; a timer fires once "
                f"the {clock} passes it, and the processor's handleExpiredTimer decides what "
                "state to clear.")
    if rule == "processor":
        return (f"{head}: {r.kind} state without TTL ({rows} rows): kept until the processor "
                "clears it; no clock removes it.")
    if rule == "never":
        return (f"{head}: {rows} row(s), the count of rows the limit let through; it never "
                "expires and does not grow.")
    return f"{head}: an operator the runbooks do not know; no expiry figure."


def checklist_lines(items: list[CheckItem]) -> list[str]:
    return [f"[{i.status:<4}] {i.item}: {i.evidence}" for i in items]


def summarize(summary, reports: list[StoreReport], checklist: list[CheckItem]) -> None:
    """Fill the summary: one warning finding per warned checklist item, and the figures (one
    ``stores`` entry per unit, ``state_variable`` set for transformWithState's variables)."""
    codes = {"State store provider": "provider", "Changelog checkpointing": "changelog",
             "Watermark": "no_watermark", "Partition balance": "partition_skew",
             "State growth": "state_growth", "Old state versions cleaned up": "retention",
             "State loads": "state_not_loaded"}
    for item in checklist:
        if item.status == "warn":
            summary.add_finding("warning", codes.get(item.item, "checklist"),
                                f"{item.item}: {item.evidence}")
    summary.details.update({
        "batch_id": reports[0].batch_id if reports else None,
        "total_rows": sum(r.rows or 0 for r in reports),
        "stores": [r.summary() for r in reports],
        "checklist": [i.__dict__ for i in checklist],
    })

