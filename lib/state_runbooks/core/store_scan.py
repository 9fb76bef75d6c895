"""One scan per state unit at a batch: rows, bytes, rows per partition, skew, hot keys and expiry
figures (:class:`StoreReport`), shared by the inspect (03) and estimate (02) runbooks.

A unit is what Spark's ``statestore`` reader reads (``operators.state_units``): a store, a join
side's store, a state variable of transformWithState or its registered timers.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from state_runbooks.common.errors import RunbookError, spark_errors

from .checkpoint import Checkpoint, StoreInfo
from .operators import StateUnit, find_unit, matches_store, operator_model, state_units
from .state_reader import per_core_tasks, quote_path, read_unit, unsafe_row_size_sql

# Thresholds of the scan and of 03's production checklist (the size limits: .state_limits).
SKEW_WARNING_RATIO = 2.0  # max rows in a partition / mean rows per partition
# Below this mean of rows per partition a skew ratio is chance (a few keys hashed unevenly), so it
# is shown but not judged.
SKEW_MIN_ROWS_PER_PARTITION = 10
MULTI_ROW_STORE_SUFFIX = "keyWithIndexToValue"  # join stores: one key, several rows (by index)


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
