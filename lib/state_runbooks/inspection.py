"""The inspect-state runbook's logic: per-store figures, skew, hot keys, expiry, growth, checklist."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import reduce

from .checkpoint import Checkpoint, StoreInfo
from .errors import RunbookError, spark_errors
from .state_reader import read_state, union_over_batches, unsafe_row_size

# Thresholds of the production checklist, in one place so the playbooks can quote them.
SKEW_WARNING_RATIO = 2.0  # max rows in a partition / mean rows per partition
LARGE_STATE_ROWS = 1_000_000  # above this, the HDFS provider's JVM memory becomes a risk
MULTI_ROW_STORE_SUFFIX = "keyWithIndexToValue"  # join stores: one key, several rows (by index)
# Operators whose state the watermark evicts by a key column (so a key without one never expires).
KEY_EVICTED_OPERATORS = ("dedupe", "stateStoreSave")


@dataclass
class StoreReport:
    """What one store holds at one batch, from one scan of its state."""
    operator_id: int
    operator_name: str
    store_name: str
    num_partitions: int
    batch_id: int
    rows: int
    key_bytes: int
    value_bytes: int
    rows_per_partition: list[int]
    skew_ratio: float | None
    hot_keys: list[dict] = field(default_factory=list)  # [{"key": ..., "rows": n}]
    event_time_column: str | None = None
    watermark_ms: int | None = None
    rows_behind_watermark: int | None = None
    disk: dict = field(default_factory=dict)
    payload_bytes_per_partition: list[int] = field(default_factory=list)  # key + value bytes

    @property
    def label(self) -> str:
        return f"{self.operator_id}/{self.store_name}"

    def summary(self) -> dict:
        """The summary JSON's entry for this store."""
        keys = ("operator_id", "operator_name", "store_name", "num_partitions", "rows", "key_bytes",
                "value_bytes", "rows_per_partition", "skew_ratio")
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


def inspect_store(ckpt: Checkpoint, store: StoreInfo, batch_id: int, top_keys: int = 5
                  ) -> StoreReport:
    """Rows, bytes, rows per partition, hot keys and rows behind the watermark: one state scan."""
    from pyspark.sql import functions as F

    df = read_state(ckpt, store.operator_id, store.store_name, batch_id)
    key_schema = df.schema["key"].dataType
    value_schema = df.schema["value"].dataType
    time_col = event_time_column(key_schema)
    watermark_ms = ckpt.next_watermark_ms(batch_id)
    measures = [F.lit(1).alias("_rows"),
                unsafe_row_size(F.col("key"), key_schema).alias("_key_bytes"),
                unsafe_row_size(F.col("value"), value_schema).alias("_value_bytes")]
    if time_col and watermark_ms:
        behind = F.col(time_col) <= F.timestamp_millis(F.lit(watermark_ms))
        measures.append(F.when(behind, 1).otherwise(0).alias("_behind"))
    scanned = df.select("partition_id", "key", *measures)
    sums = [F.sum(c).alias(c) for c in ("_rows", "_key_bytes", "_value_bytes", "_behind")
            if c in scanned.columns]

    multi_row = (store.store_name.endswith(MULTI_ROW_STORE_SUFFIX)
                 and "index" in key_schema.fieldNames())
    hot: list[dict] = []
    action = f"scanning state of operator {store.operator_id} store {store.store_name}"
    with spark_errors(action):
        if multi_row:
            # A join key holds one row per index: count rows per logical key once, keep that small
            # aggregate, and derive both the partition totals and the hottest keys from it.
            logical = [F.col(f"key.{n}").alias(n) for n in key_schema.fieldNames() if n != "index"]
            per_key = scanned.groupBy("partition_id", *logical).agg(*sums).persist()
            try:
                totals = per_key.groupBy("partition_id").agg(
                    *[F.sum(c).alias(c) for c in per_key.columns if c.startswith("_")]).collect()
                for row in (per_key.where(F.col("_rows") > 1).orderBy(F.desc("_rows"))
                            .limit(top_keys).collect() if top_keys > 0 else []):
                    key = [row[c.name] for c in key_schema.fields if c.name != "index"]
                    hot.append({"key": key[0] if len(key) == 1 else key, "rows": int(row["_rows"]),
                                "partition_id": int(row["partition_id"])})
            finally:
                per_key.unpersist()
        else:
            totals = scanned.groupBy("partition_id").agg(*sums).collect()

    rows_per_partition = [0] * store.num_partitions
    payload_per_partition = [0] * store.num_partitions
    key_bytes = value_bytes = behind_total = 0
    for row in (r.asDict() for r in totals):
        rows_per_partition[int(row["partition_id"])] = int(row["_rows"])
        payload_per_partition[int(row["partition_id"])] = (int(row["_key_bytes"] or 0)
                                                           + int(row["_value_bytes"] or 0))
        key_bytes += int(row["_key_bytes"] or 0)
        value_bytes += int(row["_value_bytes"] or 0)
        behind_total += int(row.get("_behind") or 0)
    return StoreReport(
        operator_id=store.operator_id, operator_name=store.operator_name,
        store_name=store.store_name, num_partitions=store.num_partitions, batch_id=batch_id,
        rows=sum(rows_per_partition), key_bytes=key_bytes, value_bytes=value_bytes,
        rows_per_partition=rows_per_partition, skew_ratio=skew_ratio(rows_per_partition),
        hot_keys=hot, event_time_column=time_col,
        watermark_ms=watermark_ms if time_col else None,
        rows_behind_watermark=behind_total if time_col and watermark_ms else None,
        disk=ckpt.disk_bytes(store.operator_id, store.store_name),
        payload_bytes_per_partition=payload_per_partition)


def inspect_stores(ckpt: Checkpoint, batch_id: int = -1, operator_id: int = -1,
                   store_name: str = "", top_keys: int = 5) -> list[StoreReport]:
    """Reports for every store (or one operator, or one store) at a batch (-1: last committed)."""
    batch = ckpt.resolve_batch(batch_id, operator_id)
    stores = ckpt.stores(operator_id)
    if store_name:
        stores = [ckpt.store(s.operator_id, store_name) for s in stores[:1]] if operator_id != -1 \
            else [s for s in stores if s.store_name == store_name]
        if not stores:
            valid = sorted({s.store_name for s in ckpt.stores()})
            raise RunbookError(f"no operator has a store named {store_name!r}; stores: "
                               f"{', '.join(valid)}")
    return [inspect_store(ckpt, s, batch, top_keys) for s in stores]


def sample_batches(first: int, last: int, max_points: int) -> list[int]:
    """Up to ``max_points`` batch ids spread evenly over ``first..last``, always with both ends."""
    if max_points < 2 or last - first + 1 <= max_points:
        return list(range(first, last + 1)) if max_points >= 2 else [last]
    step = (last - first) / (max_points - 1)
    return sorted({first + round(i * step) for i in range(max_points)})


def growth(ckpt: Checkpoint, operator_id: int = -1, store_name: str = "", max_points: int = 12,
           reports: list[StoreReport] | None = None):
    """Rows per store at up to ``max_points`` retained batches, as a pandas DataFrame (index
    ``batch_id``, one column per store), computed in a single Spark job. Counts already known from
    ``reports`` (the inspected batch) are reused instead of scanned again."""
    import pandas as pd
    from pyspark.sql import functions as F

    known = {(r.label, r.batch_id): r.rows for r in reports or []}
    stores = [s for s in ckpt.stores(operator_id) if not store_name or s.store_name == store_name]
    if not stores:
        raise RunbookError(f"no store matches operator {operator_id} and store {store_name!r}")
    counts = {}  # (store label, batch) -> rows
    frames = []
    for s in stores:
        lo, hi = ckpt.retained_batch_range(s.operator_id)
        batches = sample_batches(lo, hi, max_points)
        for b in batches:
            counts[(s.label, b)] = known.get((s.label, b), 0)
        to_scan = [b for b in batches if (s.label, b) not in known]
        if to_scan:
            frames.append(union_over_batches(ckpt, s.operator_id, s.store_name, to_scan,
                                             [F.lit(s.label).alias("store")]))
    if frames:
        combined = reduce(lambda a, b: a.unionByName(b), frames)
        with spark_errors("counting state rows over the retained batches"):
            for row in combined.groupBy("batch_id", "store").count().collect():
                counts[(row["store"], int(row["batch_id"]))] = int(row["count"])
    # A store whose state was empty at a batch has no row in the count: it stays 0.
    table = pd.Series(counts).unstack(level=0).fillna(0).astype(int).sort_index()
    table.index.name = "batch_id"
    table.columns.name = None
    return table[[s.label for s in stores]]


def growth_verdicts(table) -> dict[str, dict]:
    """Per store: first and last row counts, peak, and whether it only grew: never shrank between
    sampled batches and ended larger (no-data batches and quiet batches leave it flat)."""
    out = {}
    for store in table.columns:
        series = [int(v) for v in table[store].tolist()]
        only_grew = (len(series) >= 3 and series[-1] > series[0]
                     and all(b >= a for a, b in zip(series, series[1:])))
        out[store] = {"first": series[0], "last": series[-1], "peak": max(series),
                      "only_grew": only_grew, "points": len(series)}
    return out


@dataclass(frozen=True)
class CheckItem:
    item: str
    status: str  # pass, warn, info
    evidence: str


def production_checklist(ckpt: Checkpoint, reports: list[StoreReport], growth_table,
                         skew_warning_ratio: float = SKEW_WARNING_RATIO) -> list[CheckItem]:
    """The production checklist, each item decided by the checkpoint's own facts."""
    items = []
    total_rows = sum(r.rows for r in reports)
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
    watermark = ckpt.offsets(last).watermark_ms if last is not None else 0
    never_evicted = [r for r in reports if r.operator_name in KEY_EVICTED_OPERATORS
                     and r.event_time_column is None]
    if watermark <= 0:
        names = ", ".join(sorted({r.operator_name for r in reports}))
        items.append(CheckItem("Watermark", "warn",
                               f"no event-time watermark in offsets/{last}: the state of {names} "
                               "can only grow; add withWatermark on the event-time column"))
    elif never_evicted:
        items.append(CheckItem("Watermark", "warn",
                               f"watermark {_iso(watermark)} in offsets/{last}, but the keys of "
                               + ", ".join(f"{r.label} ({r.operator_name})" for r in never_evicted)
                               + " have no event-time column, so the watermark never evicts them; "
                               "group or deduplicate on the event-time column too"))
    else:
        items.append(CheckItem("Watermark", "pass",
                               f"event-time watermark {_iso(watermark)} in offsets/{last}: "
                               "expired state is evicted"))

    skewed = [r for r in reports if r.skew_ratio is not None and r.skew_ratio > skew_warning_ratio]
    worst = max((r for r in reports if r.skew_ratio is not None), key=lambda r: r.skew_ratio,
                default=None)
    if skewed:
        items.append(CheckItem("Partition balance", "warn",
                               "; ".join(f"{r.label}: skew {r.skew_ratio:.2f} > "
                                         f"{skew_warning_ratio:.2f}" for r in skewed)
                               + " (runbooks/partition-skew.md)"))
    elif worst is not None:
        items.append(CheckItem("Partition balance", "pass",
                               f"worst skew {worst.skew_ratio:.2f} ({worst.label}) <= "
                               f"{skew_warning_ratio:.2f}"))
    else:
        items.append(CheckItem("Partition balance", "info", "every store is empty"))

    verdicts = growth_verdicts(growth_table) if growth_table is not None else {}
    growing = {s: v for s, v in verdicts.items() if v["only_grew"]}
    unbounded_labels = {r.label for r in never_evicted} if watermark > 0 else set(verdicts)
    unbounded = {s: v for s, v in growing.items() if s in unbounded_labels}
    filling = {s: v for s, v in growing.items() if s not in unbounded_labels}
    if unbounded:
        items.append(CheckItem("State growth", "warn",
                               "; ".join(f"{s} only grew ({v['first']:,} -> {v['last']:,} rows) "
                                         "and nothing evicts it"
                                         for s, v in unbounded.items())))
    elif filling:
        items.append(CheckItem("State growth", "info",
                               "; ".join(f"{s} only grew ({v['first']:,} -> {v['last']:,} rows)"
                                         for s, v in filling.items())
                               + ": expected while a young query fills its watermark horizon, "
                               "as the watermark evicts these stores; check again later"))
    elif verdicts:
        points = max(v["points"] for v in verdicts.values())
        items.append(CheckItem("State growth", "pass",
                               f"no store only grew over {points} sampled batches"))

    items.append(retention_check(ckpt))
    items.append(CheckItem("Monitoring and recovery", "info",
                           "not visible in a checkpoint: schedule this runbook "
                           "(runbooks/schedules/inspect_state.yaml) and keep "
                           "runbooks/cannot-load-state-store.md at hand"))
    return items


def retention_check(ckpt: Checkpoint) -> CheckItem:
    """Whether state maintenance deletes old versions: the retained range's start advances once
    more than ``minBatchesToRetain`` batches have run."""
    lo, _hi = ckpt.retained_batch_range()
    batches = ckpt.offset_batch_ids
    first_batch = batches[0] if batches else 0
    last = ckpt.last_committed_batch_id
    retain = ckpt.min_batches_to_retain
    if lo > first_batch:
        return CheckItem("Old state versions cleaned up", "pass",
                         f"oldest retained batch is {lo}, after the first batch {first_batch} "
                         f"(minBatchesToRetain={retain})")
    ran = last - first_batch + 1
    if ran <= retain:
        return CheckItem("Old state versions cleaned up", "info",
                         f"not due yet: {ran} batches ran, Spark keeps the last "
                         f"minBatchesToRetain={retain}")
    return CheckItem("Old state versions cleaned up", "warn",
                     f"state from batch {lo} is still on disk after {ran} batches "
                     f"(minBatchesToRetain={retain}): state maintenance has not cleaned up")


# -- tables and sentences for the notebook ------------------------------------------------------
def operators_table(ckpt: Checkpoint):
    import pandas as pd
    return pd.DataFrame([{"operator_id": s.operator_id, "operator": s.operator_name,
                          "store": s.store_name, "partitions": s.num_partitions,
                          "min_batch_id": s.min_batch_id, "max_batch_id": s.max_batch_id}
                         for s in ckpt.stores()])


def stores_table(reports: list[StoreReport]):
    import pandas as pd
    return pd.DataFrame([{"store": r.label, "operator": r.operator_name, "rows": r.rows,
                          "key_bytes": r.key_bytes, "value_bytes": r.value_bytes,
                          "min_rows": min(r.rows_per_partition, default=0),
                          "max_rows": max(r.rows_per_partition, default=0),
                          "skew_ratio": r.skew_ratio,
                          "disk_bytes": r.disk.get("retained_bytes")} for r in reports])


def hot_keys_lines(reports: list[StoreReport]) -> list[str]:
    multi = [r for r in reports if r.store_name.endswith(MULTI_ROW_STORE_SUFFIX)]
    if not multi:
        return ["No store here keeps several rows per key (only a stream-stream join's "
                "keyWithIndexToValue stores do), so no key can be hot by row count."]
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
    lines = []
    for r in reports:
        if r.event_time_column is None:
            lines.append(f"{r.label} ({r.operator_name}): its key has no event-time column; "
                         "the watermark does not evict on the key.")
        elif r.watermark_ms is None:
            lines.append(f"{r.label} ({r.operator_name}): no watermark recorded after batch "
                         f"{r.batch_id}.")
        else:
            lines.append(f"{r.label} ({r.operator_name}): {r.rows_behind_watermark:,} of "
                         f"{r.rows:,} rows have {r.event_time_column} <= {_iso(r.watermark_ms)}, "
                         f"the watermark committed after batch {r.batch_id}; the next batch "
                         "evicts them.")
    return lines


def checklist_lines(items: list[CheckItem]) -> list[str]:
    return [f"[{i.status:<4}] {i.item}: {i.evidence}" for i in items]


def summarize(summary, reports: list[StoreReport], checklist: list[CheckItem]) -> None:
    """Fill the summary: one warning finding per warned checklist item, and the figures."""
    codes = {"State store provider": "provider", "Changelog checkpointing": "changelog",
             "Watermark": "no_watermark", "Partition balance": "partition_skew",
             "State growth": "state_growth", "Old state versions cleaned up": "retention"}
    for item in checklist:
        if item.status == "warn":
            summary.add_finding("warning", codes.get(item.item, "checklist"),
                                f"{item.item}: {item.evidence}")
    summary.details.update({
        "batch_id": reports[0].batch_id if reports else None,
        "total_rows": sum(r.rows for r in reports),
        "stores": [r.summary() for r in reports],
        "checklist": [i.__dict__ for i in checklist],
    })


def _iso(ms: int) -> str:
    import datetime as dt
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
