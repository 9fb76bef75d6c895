"""The estimate-state-size runbook's logic: a napkin estimate before a job exists, a measurement of
its checkpoint after, and how far both are from what Spark itself reports.

The memory model follows how Spark 4.x's ``HDFSBackedStateStoreProvider`` keeps state:

- Each state store partition keeps its newest versions in memory, in a ``TreeMap`` (``loadedMaps``):
  at most ``spark.sql.streaming.maxBatchesToRetainInMemory`` of them, 2 by default.
- A version is a ``java.util.concurrent.ConcurrentHashMap`` from a key ``UnsafeRow`` to a
  ``StateStoreRow`` that wraps the value ``UnsafeRow``; each ``UnsafeRow`` points at its own
  ``byte[]`` holding the row in Spark's binary format (the bytes ``unsafe_row_size`` computes).
- A batch starts its new version as a copy of the previous one (``putAll``): new map nodes and a new
  hash table, the same row objects. The rows the batch puts are new objects; the rows it removes or
  replaces stay referenced by the older version as long as that version is kept.
- On a restart the provider is new: the older version is read back from the state files (snapshot,
  then deltas, filled with ``put``), and the newest is copied from it as above.
- ``memoryUsedBytes`` is ``SizeEstimator.estimate(loadedMaps)``, summed over partitions (and over
  the four stores of a stream-stream join). SizeEstimator counts each object once per call, older
  version first, and estimates an array of more than 400 elements from two samples of 100 of its
  slots: the larger sample plus the smaller one times ``(length - 100) // 100``. When the two
  versions' hash tables have the same length, both samples look at the same slots and the shared
  rows count once; when the lengths differ (always right after a restart), they count twice.

Object sizes are SizeEstimator's (checked against it on the running JVM by the tests): 8-byte
alignment, 12-byte headers and 4-byte references with compressed oops (heaps below 32 GB).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .errors import RunbookError

# -- JVM object layout ----------------------------------------------------------------------------
ALIGN = 8
MAX_VERSIONS_CONF = "spark.sql.streaming.maxBatchesToRetainInMemory"
DEFAULT_VERSIONS_IN_MEMORY = 2
ROW_CHECKSUM_CONF = "spark.sql.streaming.stateStore.rowChecksum.enabled"


def _align(n: float) -> int:
    return int(-(-int(math.ceil(n)) // ALIGN) * ALIGN)


@dataclass(frozen=True)
class JvmLayout:
    """Sizes of the objects that hold state rows, as Spark's SizeEstimator computes them."""
    name: str
    object_header: int
    reference: int
    # Per store partition: the TreeMap of versions, its comparator, the shared Option None.
    fixed_per_store: int
    # Per version: its TreeMap entry, the boxed version number, the map and its ConcurrentHashMap.
    fixed_per_version: int

    @property
    def array_header(self) -> int:
        return _align(self.object_header + 4)

    def reference_array(self, length: int) -> int:
        return self.array_header + _align(length * self.reference)

    @property
    def unsafe_row(self) -> int:
        """``UnsafeRow``: baseObject, baseOffset, numFields, sizeInBytes, bitSetWidthInBytes."""
        return _align(_align(self.object_header) + self.reference + 8 + 3 * 4)

    def value_wrapper(self, checksum: bool = False) -> int:
        """``StateStoreRow`` (one reference), or ``StateStoreRowWithChecksum`` (plus an int)."""
        plain = _align(self.object_header + self.reference)
        return _align(plain + 4) if checksum else plain

    @property
    def map_node(self) -> int:
        """``ConcurrentHashMap.Node``: hash, key, value, next."""
        return _align(self.object_header + 4 + 3 * self.reference)

    @property
    def key_overhead(self) -> int:
        """Bytes a key takes beyond its row bytes: the UnsafeRow and the byte[] header."""
        return self.unsafe_row + self.array_header

    def value_overhead(self, checksum: bool = False) -> int:
        """Bytes a value takes beyond its row bytes: wrapper, UnsafeRow and byte[] header."""
        return self.value_wrapper(checksum) + self.unsafe_row + self.array_header


COMPRESSED_OOPS = JvmLayout("compressed oops (executor heap below 32 GB)", 12, 4, 96, 152)
# Without compressed oops, headers are 16 bytes and references 8; the fixed parts are scaled.
PLAIN_OOPS = JvmLayout("64-bit references (executor heap of 32 GB or more)", 16, 8, 144, 232)


# -- ConcurrentHashMap table lengths (JDK 17) ------------------------------------------------------
MIN_TABLE = 16


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def grown_capacity(capacity: int, peak_rows: int) -> int:
    """A table doubles when its entries reach 3/4 of its length, and never shrinks."""
    capacity = max(int(capacity), 1)
    while peak_rows >= capacity - (capacity >> 2):
        capacity <<= 1
    return capacity


def filled_capacity(peak_rows: int) -> int:
    """Length of a map filled by ``put`` from empty (a first batch, a version read from files)."""
    return grown_capacity(MIN_TABLE, peak_rows)


def copied_capacity(rows: int, peak_rows: int) -> int:
    """Length of a map started with ``putAll`` of ``rows`` rows, then grown to ``peak_rows``.

    JDK 17's ``ConcurrentHashMap.putAll`` into an empty map presizes the table to the power of two
    at least ``1.5 x rows + 1``, then doubles it once more (the loop in ``tryPresize``).
    """
    base = 2 * _power_of_two_at_least(rows + rows // 2 + 1) if rows > 0 else MIN_TABLE
    return grown_capacity(base, max(peak_rows, rows))


# -- SizeEstimator's sampling ----------------------------------------------------------------------
SAMPLING_ABOVE = 400  # SizeEstimator samples arrays longer than this
SAMPLE_SLOTS = 100  # ... twice, this many slots each time


def estimated_slots_bytes(length: int, entries: float, bytes_per_entry: float) -> float:
    """SizeEstimator's expected figure for what a hash table's slots reach (not the table itself).

    Up to 400 slots it visits everything. Above, it draws two samples of 100 slots and reports the
    larger plus the smaller times ``(length - 100) // 100``. The entries falling in 100 slots are
    binomial; the expected smaller and larger of two samples are the mean -/+ sd / sqrt(pi).
    """
    if entries <= 0:
        return 0.0
    if length <= SAMPLING_ABOVE:
        return entries * bytes_per_entry
    p = SAMPLE_SLOTS / length
    mean = entries * p * bytes_per_entry
    spread = bytes_per_entry * math.sqrt(entries * p * (1 - p) / math.pi)
    return mean + spread + max(0.0, mean - spread) * ((length - SAMPLE_SLOTS) // SAMPLE_SLOTS)


def estimated_slots_variance(length: int, entries: float, bytes_per_entry: float) -> float:
    """Variance of that figure: with samples s1, s2 ~ N(mu, sigma), the figure is
    ``mu (1 + k) + sigma (M + k m)`` (M, m the larger and smaller of two standard normals), and
    ``Var(M) = Var(m) = 1 - 1/pi``, ``Cov(M, m) = 1/pi``."""
    if entries <= 0 or length <= SAMPLING_ABOVE:
        return 0.0
    p = SAMPLE_SLOTS / length
    sigma2 = bytes_per_entry ** 2 * entries * p * (1 - p)
    k = (length - SAMPLE_SLOTS) // SAMPLE_SLOTS
    return sigma2 * ((1 - 1 / math.pi) * (1 + k * k) + 2 * k / math.pi)


# -- one store partition ---------------------------------------------------------------------------
@dataclass(frozen=True)
class PartitionVersions:
    """What one state store partition of the HDFS-backed provider holds in memory after a batch."""
    rows: int  # rows in the newest version
    inserted: int = 0  # keys the newest batch added
    removed: int = 0  # keys the newest batch removed: still held by the older version
    replaced: int = 0  # existing keys whose value the newest batch replaced
    new_capacity: int = MIN_TABLE  # hash table length of the newest version
    old_capacity: int = 0  # hash table length of the older version; 0: none kept in memory

    @property
    def old_rows(self) -> int:
        return max(0, self.rows - self.inserted + self.removed) if self.old_capacity else 0


@dataclass
class MemoryEstimate:
    """In-memory bytes of state on the HDFS-backed provider, by what holds them."""
    rows: int = 0
    payload_bytes: float = 0.0  # key + value rows of the newest version (UnsafeRow bytes)
    row_object_bytes: float = 0.0  # row objects of every kept version, each counted once
    entry_bytes: float = 0.0  # map nodes of every kept version
    table_bytes: float = 0.0  # hash tables of every kept version
    fixed_bytes: float = 0.0  # per partition and per version
    reported_bytes: float = 0.0  # what Spark's memoryUsedBytes is expected to read
    reported_variance: float = 0.0  # of that figure: SizeEstimator samples large tables

    @property
    def reported_sd(self) -> float:
        """One standard deviation of Spark's figure around ``reported_bytes``."""
        return math.sqrt(self.reported_variance)

    @property
    def heap_bytes(self) -> float:
        """What the executor heap holds for this state."""
        return self.row_object_bytes + self.entry_bytes + self.table_bytes + self.fixed_bytes

    def __add__(self, other: "MemoryEstimate") -> "MemoryEstimate":
        return MemoryEstimate(*(getattr(self, f) + getattr(other, f) for f in
                                ("rows", "payload_bytes", "row_object_bytes", "entry_bytes",
                                 "table_bytes", "fixed_bytes", "reported_bytes",
                                 "reported_variance")))

    def as_dict(self) -> dict:
        return {"rows": int(self.rows), "payload_bytes": round(self.payload_bytes),
                "row_object_bytes": round(self.row_object_bytes),
                "entry_bytes": round(self.entry_bytes), "table_bytes": round(self.table_bytes),
                "fixed_bytes": round(self.fixed_bytes), "heap_bytes": round(self.heap_bytes),
                "reported_bytes": round(self.reported_bytes),
                "reported_sd_bytes": round(self.reported_sd)}


def estimate_partition(part: PartitionVersions, key_bytes: float, value_bytes: float,
                       layout: JvmLayout = COMPRESSED_OOPS, checksum: bool = False,
                       versions_in_memory: int = DEFAULT_VERSIONS_IN_MEMORY) -> MemoryEstimate:
    """Heap bytes and Spark's expected ``memoryUsedBytes`` for one store partition.

    ``key_bytes`` and ``value_bytes`` are the average UnsafeRow sizes of the store's rows.
    """
    if versions_in_memory <= 0:
        return MemoryEstimate(fixed_bytes=layout.fixed_per_store,
                              reported_bytes=layout.fixed_per_store)
    key = layout.key_overhead + key_bytes
    value = layout.value_overhead(checksum) + value_bytes
    node = layout.map_node
    n_new = part.rows
    has_old = versions_in_memory >= 2 and part.old_capacity > 0
    n_old = part.old_rows if has_old else 0
    removed, replaced = (part.removed, part.replaced) if has_old else (0, 0)

    row_objects = n_new * (key + value) + removed * (key + value) + replaced * value
    entries = (n_new + n_old) * node
    tables = layout.reference_array(part.new_capacity) + (
        layout.reference_array(part.old_capacity) if has_old else 0)
    versions = 2 if has_old else 1
    fixed = layout.fixed_per_store + versions * layout.fixed_per_version

    # SizeEstimator: the older version first (it is the TreeMap's root), then the newest.
    reported_old = variance = 0.0
    unseen = 1.0  # chance that a row shared with the older version was not counted with it
    if has_old:
        reported_old = estimated_slots_bytes(part.old_capacity, n_old, node + key + value)
        variance = estimated_slots_variance(part.old_capacity, n_old, node + key + value)
        if part.old_capacity <= SAMPLING_ABOVE or part.old_capacity == part.new_capacity:
            unseen = 0.0  # all visited, or the same slots sampled again
        else:
            unseen = max(0.0, 1 - 2 * SAMPLE_SLOTS / part.old_capacity)
    inserted = min(part.inserted, n_new) if has_old else n_new
    kept = max(0, n_new - inserted - replaced)
    new_objects = (inserted * (key + value) + replaced * (value + unseen * key)
                   + kept * unseen * (key + value))
    per_entry_new = node + (new_objects / n_new if n_new else 0.0)
    reported_new = estimated_slots_bytes(part.new_capacity, n_new, per_entry_new)
    variance_new = estimated_slots_variance(part.new_capacity, n_new, per_entry_new)
    if has_old and unseen == 0.0:
        # The same slots sampled in both versions, holding mostly the same keys: the two samples
        # err together, so their deviations add up instead of partly cancelling.
        variance = (math.sqrt(variance) + math.sqrt(variance_new)) ** 2
    else:
        variance += variance_new

    return MemoryEstimate(rows=n_new, payload_bytes=n_new * (key_bytes + value_bytes),
                          row_object_bytes=row_objects, entry_bytes=entries, table_bytes=tables,
                          fixed_bytes=fixed,
                          reported_bytes=reported_old + reported_new + tables + fixed,
                          reported_variance=variance)


def partition_versions(rows: int, inserted: int, removed: int, replaced: int, prev_rows: int,
                       prev_inserted: int, prev_prev_rows: int, restarted: bool,
                       has_previous_version: bool = True, snapshot_rows: int | None = None,
                       snapshot_is_previous: bool = False) -> PartitionVersions:
    """The hash table lengths of both kept versions, from the last two batches' row changes.

    - Newest version: copied from the previous one (``prev_rows``), grown by the inserts.
    - Older version, query running continuously: it was the newest one a batch earlier, so the same
      rule one batch back. Query restarted for this batch: read back from the state files, filled by
      ``put`` (from a snapshot of that version, or replaying deltas to their largest size) or copied
      from an older snapshot (``snapshot_rows``) and grown by the deltas after it.
    """
    new_capacity = copied_capacity(prev_rows, prev_rows + inserted)
    if not has_previous_version:
        return PartitionVersions(rows, inserted, removed, replaced, new_capacity, 0)
    peak = max(prev_rows, prev_prev_rows + prev_inserted)
    if not restarted:
        old_capacity = copied_capacity(prev_prev_rows, prev_prev_rows + prev_inserted)
    elif snapshot_is_previous:
        old_capacity = filled_capacity(prev_rows)
    elif snapshot_rows is not None:
        old_capacity = copied_capacity(snapshot_rows, peak)
    else:
        old_capacity = filled_capacity(peak)
    return PartitionVersions(rows, inserted, removed, replaced, new_capacity, old_capacity)


# -- measuring a checkpoint ------------------------------------------------------------------------
@dataclass
class StoreMeasurement:
    """One store at one batch: rows and bytes as stored, and its in-memory estimate."""
    operator_id: int
    operator_name: str
    store_name: str
    num_partitions: int
    batch_id: int
    rows: int
    key_bytes: int
    value_bytes: int
    rows_per_partition: list[int]
    disk: dict
    churn_source: str  # "change feed" (the batch's own puts and removes) or "row counts"
    partitions: list[PartitionVersions] = field(default_factory=list)
    estimate: MemoryEstimate = field(default_factory=MemoryEstimate)
    payload_bytes_per_partition: list[int] = field(default_factory=list)
    report: object = None  # the inspection.StoreReport it was measured from

    @property
    def label(self) -> str:
        if self.report is not None:
            return self.report.label
        return f"{self.operator_id}/{self.store_name}"

    @property
    def payload_bytes(self) -> int:
        return self.key_bytes + self.value_bytes


def _has_change_feed(ckpt, report) -> bool:
    """Whether the change feed is read for this unit: a provider that writes one (HDFS-backed, or
    RocksDB with changelog checkpointing), and a store the checkpoint lists by that name (not a
    state variable, not a side of a join in state format 3)."""
    if ckpt.provider_kind == "rocksdb" and not ckpt.changelog_checkpointing:
        return False
    if report.state_variable is not None:
        return False
    return any(st.store_name == report.store_name for st in ckpt.stores(report.operator_id))


def _history(ckpt, units, batches_by_unit: dict, first_change: int, last_change: int):
    """In one Spark job: rows per (unit label, batch, partition) at the asked batches, and the
    distinct keys put and removed per (unit label, batch, partition) in ``first_change`` ..
    ``last_change`` from the state change feed, for the units that have one
    (:func:`_has_change_feed`). Returns ``(rows, changes, labels with a change feed)``."""
    from functools import reduce

    from pyspark.sql import functions as F

    from .errors import spark_errors
    from .state_reader import read_state_changes, union_over_batches

    columns = ["store", "batch_id", "partition_id", "kind", "key_hash"]
    frames = [union_over_batches(ckpt, u.operator_id, u.store_name,
                                 sorted(batches_by_unit[u.label]),
                                 [F.lit(u.label).alias("store"), "partition_id",
                                  F.lit("rows").alias("kind"), F.lit(None).cast("long")
                                  .alias("key_hash")], u.state_variable).select(*columns)
              for u in units if batches_by_unit.get(u.label)]
    fed = {u.label for u in units if _has_change_feed(ckpt, u)}
    for u in units:
        if u.label in fed:
            frames.append(read_state_changes(ckpt, u.operator_id, u.store_name, first_change,
                                             last_change)
                          .select(F.lit(u.label).alias("store"), "batch_id", "partition_id",
                                  F.col("change_type").alias("kind"),
                                  F.xxhash64("key").alias("key_hash")))
    if not frames:
        return {}, {}, fed
    combined = reduce(lambda a, b: a.unionByName(b), frames)
    counted = combined.groupBy(*columns[:4]).agg(F.count(F.lit(1)).alias("rows"),
                                                 F.countDistinct("key_hash").alias("keys"))
    with spark_errors(f"reading earlier row counts and the changes of batches {first_change}.."
                      f"{last_change}"):
        result = counted.collect()
    rows, changes = {}, {}
    for r in result:
        key = (r["store"], int(r["batch_id"]), int(r["partition_id"]))
        if r["kind"] == "rows":
            rows[key] = int(r["rows"])
        else:
            put, removed = changes.get(key, (0, 0))
            changes[key] = ((int(r["keys"]), removed) if r["kind"] == "update"
                            else (put, int(r["keys"])))
    return rows, changes, fed


def _snapshot_versions(ckpt, unit, batch_id: int) -> dict[int, int]:
    """partition -> newest snapshot version the older in-memory version would be read from."""
    out: dict[int, int] = {}
    for f in ckpt.state_files(unit.operator_id, unit.files_store):
        if f.kind == "snapshot" and f.version <= batch_id:
            out[f.partition_id] = max(out.get(f.partition_id, 0), f.version)
    return out


@dataclass
class CheckpointMeasurement:
    """Every unit of a checkpoint (store, join store, state variable) at one batch: measured, or
    the report of Spark's reader refusing it."""
    batch_id: int
    stores: list  # StoreMeasurement, one per unit Spark's reader reads
    unreadable: list  # inspection.StoreReport with reader_error set

    def lines(self) -> list[str]:
        """What could not be measured, one line per unit (nothing when every unit was)."""
        return [f"{r.label} ({r.operator_name}): not measured, Spark's statestore reader "
                f"refused it ({r.reader_error_class or r.reader_error}); its files: "
                f"{format_bytes(r.disk.get('retained_bytes', 0))} retained on disk."
                for r in self.unreadable]


def measure_stores(ckpt, batch_id: int = -1, restarted_each_batch: bool = False,
                   versions_in_memory: int | None = None, layout: JvmLayout = COMPRESSED_OOPS,
                   operator_id: int = -1) -> list[StoreMeasurement]:
    """:func:`measure_checkpoint`'s measured stores."""
    return measure_checkpoint(ckpt, batch_id, restarted_each_batch, versions_in_memory, layout,
                              operator_id).stores


def measure_checkpoint(ckpt, batch_id: int = -1, restarted_each_batch: bool = False,
                       versions_in_memory: int | None = None,
                       layout: JvmLayout = COMPRESSED_OOPS,
                       operator_id: int = -1) -> CheckpointMeasurement:
    """Rows, bytes and the HDFS-backed in-memory estimate of every store at a batch.

    Rows and bytes come from one scan per unit (``inspection.inspect_stores``). What the older kept
    version holds comes from the batch's own changes (the state change feed: keys put and removed)
    and the row counts of the two batches before, read in one Spark job each. Units are the
    operator model's (a join in state format 3 by side, transformWithState by variable); a unit
    Spark's reader refuses is listed in ``unreadable`` instead of failing the measurement.
    """
    from . import inspection

    batch = ckpt.resolve_batch(batch_id, operator_id)
    lo, _hi = ckpt.retained_batch_range(operator_id)
    versions = (versions_in_memory if versions_in_memory is not None
                else int(ckpt.spark.conf.get(MAX_VERSIONS_CONF, str(DEFAULT_VERSIONS_IN_MEMORY))))
    checksum = str(ckpt.pinned_conf.get(ROW_CHECKSUM_CONF, "false")).lower() == "true"
    inspected = inspection.inspect_stores(ckpt, batch, operator_id, top_keys=0)
    reports = [r for r in inspected if r.readable]
    unreadable = [r for r in inspected if not r.readable]

    earlier = [b for b in (batch - 1, batch - 2) if b >= lo]
    snapshots = {r.label: _snapshot_versions(ckpt, r, batch) if restarted_each_batch else {}
                 for r in reports}
    wanted = {r.label: set(earlier) | {v - 1 for v in snapshots[r.label].values()
                                       if lo <= v - 1 < batch - 1}
              for r in reports}
    counts, changes, fed = (_history(ckpt, reports, wanted, max(lo, batch - 1), batch)
                            if reports else ({}, {}, set()))

    out = []
    for store in reports:
        report = store
        parts = []
        key_avg = report.key_bytes / report.rows if report.rows else 0.0
        value_avg = report.value_bytes / report.rows if report.rows else 0.0
        for p, rows in enumerate(report.rows_per_partition):
            # Rows of the two batches before (a batch no longer retained: taken as unchanged).
            prev = counts.get((store.label, batch - 1, p), 0) if batch - 1 in earlier else rows
            prev_prev = (counts.get((store.label, batch - 2, p), 0) if batch - 2 in earlier
                         else prev)
            if store.label in fed:
                put, removed = changes.get((store.label, batch, p), (0, 0))
                _prev_put, prev_removed = changes.get((store.label, batch - 1, p), (0, 0))
                inserted = max(0, rows - prev + removed)
                replaced = max(0, put - inserted)
                prev_inserted = max(0, prev - prev_prev + prev_removed)
            else:  # no change feed: only what the row counts show
                inserted, removed, replaced = max(0, rows - prev), max(0, prev - rows), 0
                prev_inserted = max(0, prev - prev_prev)
            snap = snapshots[store.label].get(p)
            parts.append(partition_versions(
                rows, inserted, removed, replaced, prev, prev_inserted, prev_prev,
                restarted=restarted_each_batch, has_previous_version=batch > 0,
                snapshot_rows=counts.get((store.label, snap - 1, p), 0) if snap else None,
                snapshot_is_previous=snap == batch))
        estimate = MemoryEstimate()
        for part in parts:
            estimate = estimate + estimate_partition(part, key_avg, value_avg, layout, checksum,
                                                     versions)
        out.append(StoreMeasurement(
            store.operator_id, store.operator_name, store.store_name, store.num_partitions, batch,
            report.rows, report.key_bytes, report.value_bytes, report.rows_per_partition,
            report.disk, "change feed" if store.label in fed else "row counts", parts, estimate,
            report.payload_bytes_per_partition, report))
    return CheckpointMeasurement(batch, out, unreadable)


def growth(ckpt, measured: CheckpointMeasurement):
    """Rows per measured unit over the retained batches (``inspection.growth``, one Spark job);
    an empty table when no unit could be measured."""
    import pandas as pd

    from . import inspection
    if not measured.stores:
        return pd.DataFrame()
    return inspection.growth(ckpt, reports=[m.report for m in measured.stores]
                             + measured.unreadable)


# -- the napkin estimate ---------------------------------------------------------------------------
NAPKIN_PROVIDERS = ("hdfs", "rocksdb")
PROVIDER_NAMES = {"hdfs": "the HDFS-backed provider", "rocksdb": "RocksDB"}
# A widely quoted rule of thumb: rows x (key + value) x a "versioning factor" of 1.0 to 1.5. Shown
# next to the estimate to explain how far it undercounts.
RULE_OF_THUMB_FACTORS = (1.0, 1.5)
# Thresholds of the recommendation, in one place so the notebook and playbooks quote them.
HDFS_MAX_HEAP_PER_PARTITION = 256 * 1024 ** 2  # estimated heap bytes per partition on HDFS
ROCKSDB_MAX_PAYLOAD_PER_PARTITION = 1024 ** 3  # row bytes per partition kept in RocksDB's files
# RocksDB's native memory per instance by default (Spark 4 RocksDBConf, RocksDB's own defaults for
# the -1 values): block cache 8 MB, write buffers 2 x 64 MB; boundedMemoryUsage=false.
ROCKSDB_BLOCK_CACHE_MB = 8
ROCKSDB_WRITE_BUFFER_MB = 64
ROCKSDB_MAX_WRITE_BUFFERS = 2


def format_bytes(n: float) -> str:
    """``1536`` -> ``1.5 KiB``: binary units, three significant figures."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            if unit == "B":
                return f"{n:,.0f} B"
            return f"{n:,.{max(0, 2 - int(math.log10(max(abs(n), 1))))}f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise RunbookError(message)


@dataclass(frozen=True)
class NapkinInputs:
    """What is known before a job exists. Validated on construction (one-line RunbookError)."""
    input_rows_per_second: float
    watermark_seconds: float
    trigger_seconds: float = 1.0
    key_cardinality: int = 0
    key_bytes: int = 32
    value_bytes: int = 16
    num_partitions: int = 200
    provider: str = "hdfs"

    def __post_init__(self):
        for name in ("input_rows_per_second", "watermark_seconds", "trigger_seconds",
                     "key_cardinality", "key_bytes", "value_bytes", "num_partitions"):
            value = getattr(self, name)
            _check(isinstance(value, (int, float)) and not isinstance(value, bool)
                   and math.isfinite(value),
                   f"{name}={value!r} is not a number: pass a finite number")
        _check(self.input_rows_per_second >= 0,
               f"input_rows_per_second={self.input_rows_per_second} is negative: pass the rows per "
               "second entering the stateful operator (0 or more)")
        _check(self.watermark_seconds >= 0,
               f"watermark_seconds={self.watermark_seconds} is negative: pass the watermark delay "
               "in seconds (0 or more)")
        _check(self.trigger_seconds > 0,
               f"trigger_seconds={self.trigger_seconds} is not positive: pass the event time one "
               "micro-batch covers, in seconds (e.g. the trigger interval)")
        _check(self.key_cardinality >= 0 and float(self.key_cardinality).is_integer(),
               f"key_cardinality={self.key_cardinality} is not valid: pass the distinct keys held "
               "at once (a whole number), or 0 when every event has its own key")
        _check(self.key_bytes >= 8,
               f"key_bytes={self.key_bytes} is too small: a state key in Spark's row format takes "
               "at least 8 bytes (null bits) plus 8 per field, e.g. 32 for a short string and a "
               "timestamp")
        _check(self.value_bytes >= 0,
               f"value_bytes={self.value_bytes} is negative: pass the value row's bytes "
               "(0 or more)")
        _check(self.num_partitions >= 1 and float(self.num_partitions).is_integer(),
               f"num_partitions={self.num_partitions} is not valid: pass the state partitions "
               "(spark.sql.shuffle.partitions when the query first starts), 1 or more")
        _check(self.provider in NAPKIN_PROVIDERS,
               f"provider={self.provider!r} is not known: use one of {', '.join(NAPKIN_PROVIDERS)}")

    @property
    def row_key_bytes(self) -> int:
        """Key bytes as stored: UnsafeRow sizes are multiples of 8."""
        return _align(self.key_bytes)

    @property
    def row_value_bytes(self) -> int:
        return _align(self.value_bytes)


# The napkin inputs that describe the runbook's own demo: a deduplication of 2,000 new ids per 1 s
# batch with a 5 s watermark, in 4 partitions (rows of ``event_id`` and ``event_time``).
DEMO_NAPKIN = {"input_rows_per_second": 2000.0, "watermark_seconds": 5.0, "trigger_seconds": 1.0,
               "key_cardinality": 0, "key_bytes": 32, "value_bytes": 16, "num_partitions": 4,
               "provider": "hdfs"}


def napkin_inputs(is_demo: bool, input_rows_per_second: float, watermark_seconds: float,
                  trigger_seconds: float, key_cardinality: int, key_bytes: int, value_bytes: int,
                  num_partitions: int, provider: str) -> NapkinInputs | None:
    """What the napkin estimates: the job the parameters describe when a rate is given; the demo's
    own job when the runbook builds its demo without one; None otherwise, since nothing then
    describes the job behind a real checkpoint (it is measured instead)."""
    if input_rows_per_second:
        return NapkinInputs(input_rows_per_second, watermark_seconds, trigger_seconds,
                            key_cardinality, key_bytes, value_bytes, num_partitions, provider)
    return NapkinInputs(**DEMO_NAPKIN) if is_demo else None


NO_NAPKIN = ("No napkin estimate: no input_rows_per_second was given, and this checkpoint's job is "
             "measured below instead. To plan a job, pass its rate, watermark, key and value bytes "
             "and partitions (input_rows_per_second, watermark_seconds, key_bytes, value_bytes, "
             "num_partitions).")


@dataclass
class Recommendation:
    provider: str
    partitions: int
    reason: str


def recommend(rows: int, heap_bytes: float, payload_bytes: float, num_partitions: int,
              max_rows_on_hdfs: int | None = None,
              max_heap_per_partition: int = HDFS_MAX_HEAP_PER_PARTITION,
              max_payload_per_partition: int = ROCKSDB_MAX_PAYLOAD_PER_PARTITION
              ) -> Recommendation:
    """Provider and partitions, with the thresholds that decided them in ``reason``.

    RocksDB above the inspect runbook's row threshold (``inspection.LARGE_STATE_ROWS``); otherwise
    the HDFS-backed provider, with enough partitions to keep the estimated heap per partition under
    ``max_heap_per_partition``. For RocksDB, enough partitions to keep the row bytes per partition
    under ``max_payload_per_partition``.
    """
    from .inspection import LARGE_STATE_ROWS

    limit = LARGE_STATE_ROWS if max_rows_on_hdfs is None else max_rows_on_hdfs
    if rows > limit:
        partitions = max(num_partitions, math.ceil(payload_bytes / max_payload_per_partition))
        return Recommendation("rocksdb", partitions,
                              f"{rows:,} rows > {limit:,} (above this the HDFS-backed provider's "
                              "JVM memory becomes a risk); partitions keep the row bytes per "
                              f"partition <= {format_bytes(max_payload_per_partition)}")
    partitions = max(num_partitions, math.ceil(heap_bytes / max_heap_per_partition))
    return Recommendation("hdfs", partitions,
                          f"{rows:,} rows <= {limit:,}, and partitions keep the estimated heap per "
                          f"partition <= {format_bytes(max_heap_per_partition)}")


@dataclass
class Napkin:
    """The napkin estimate: rows, bytes as stored, heap on the HDFS-backed provider, and what
    Spark's ``memoryUsedBytes`` will read, for a query running continuously or one restarted for
    every batch (``availableNow`` / ``Trigger.Once`` jobs)."""
    inputs: NapkinInputs
    rows: int
    arrivals_per_batch: int
    payload_bytes: float
    memory: MemoryEstimate  # continuous
    memory_restarted: MemoryEstimate  # one batch per start
    partition: PartitionVersions
    layout: JvmLayout
    recommendation: Recommendation

    @property
    def memory_bytes(self) -> float:
        """In-memory bytes for the chosen provider: the JVM heap of the HDFS-backed provider, or
        the cap of RocksDB's native memory (block cache and write buffers per store instance)."""
        if self.inputs.provider == "rocksdb":
            return rocksdb_native_cap(self.inputs.num_partitions)
        return self.memory.heap_bytes

    @property
    def bytes_per_partition(self) -> float:
        return self.memory_bytes / self.inputs.num_partitions

    def rule_of_thumb_bytes(self) -> tuple[float, float]:
        """The widely quoted rule of thumb: keys x (key + value) x a versioning factor, 1.0-1.5."""
        return tuple(self.rows * (self.inputs.key_bytes + self.inputs.value_bytes) * f
                     for f in RULE_OF_THUMB_FACTORS)

    def summary(self) -> dict:
        return {"rows": self.rows, "payload_bytes": round(self.payload_bytes),
                "memory_bytes": round(self.memory_bytes),
                "bytes_per_partition": round(self.bytes_per_partition),
                "recommended_provider": self.recommendation.provider,
                "recommended_partitions": self.recommendation.partitions,
                "recommendation_reason": self.recommendation.reason,
                "hdfs_heap_bytes": round(self.memory.heap_bytes),
                "reported_memory_bytes": {"continuous": round(self.memory.reported_bytes),
                                          "restarted_each_batch":
                                              round(self.memory_restarted.reported_bytes)},
                "rule_of_thumb_bytes": [round(b) for b in self.rule_of_thumb_bytes()]}


def rocksdb_native_cap(instances: int, block_cache_mb: int = ROCKSDB_BLOCK_CACHE_MB,
                       write_buffer_mb: int = ROCKSDB_WRITE_BUFFER_MB,
                       write_buffers: int = ROCKSDB_MAX_WRITE_BUFFERS) -> int:
    """RocksDB's native memory cap with the default configuration: per store instance (one per
    partition and store), a block cache plus full write buffers."""
    return instances * (block_cache_mb + write_buffer_mb * write_buffers) * 1024 ** 2


def napkin(inputs: NapkinInputs, layout: JvmLayout = COMPRESSED_OOPS,
           versions_in_memory: int = DEFAULT_VERSIONS_IN_MEMORY) -> Napkin:
    """The napkin estimate at steady state: every partition holds ``rows / partitions`` rows; each
    batch brings ``rate x trigger`` rows, which are new keys that push as many old ones out past
    the watermark (``key_cardinality=0``), or update existing keys (``key_cardinality>0``)."""
    i = inputs
    held = i.input_rows_per_second * (i.watermark_seconds + i.trigger_seconds)
    rows = math.ceil(held if i.key_cardinality == 0 else min(i.key_cardinality, held))
    arrivals = math.ceil(i.input_rows_per_second * i.trigger_seconds)
    parts = int(i.num_partitions)
    n = math.ceil(rows / parts)
    per_part_arrivals = math.ceil(arrivals / parts)
    if i.key_cardinality == 0:
        inserted = removed = min(per_part_arrivals, n)
        replaced = 0
    else:
        inserted = removed = 0
        replaced = min(per_part_arrivals, n)
    new_capacity = copied_capacity(n - inserted + removed, n + inserted)
    continuous = PartitionVersions(n, inserted, removed, replaced, new_capacity, new_capacity)
    restarted = PartitionVersions(n, inserted, removed, replaced, new_capacity,
                                  filled_capacity(n + inserted))
    one = estimate_partition(continuous, i.row_key_bytes, i.row_value_bytes, layout,
                             versions_in_memory=versions_in_memory)
    one_restarted = estimate_partition(restarted, i.row_key_bytes, i.row_value_bytes, layout,
                                       versions_in_memory=versions_in_memory)
    memory, memory_restarted = MemoryEstimate(), MemoryEstimate()
    for _ in range(parts):
        memory, memory_restarted = memory + one, memory_restarted + one_restarted
    payload = rows * (i.row_key_bytes + i.row_value_bytes)
    rec = recommend(rows, memory.heap_bytes, payload, parts)
    return Napkin(i, rows, arrivals, payload, memory, memory_restarted, continuous, layout, rec)


def _n(x: float) -> str:
    return f"{round(x):,}"


def napkin_lines(est: Napkin, width: int = 100) -> list[str]:
    """The napkin estimate step by step, in prose with the numbers filled in."""
    import textwrap

    i, lay, part = est.inputs, est.layout, est.partition
    k, v = i.row_key_bytes, i.row_value_bytes
    key_obj, value_obj = lay.key_overhead + k, lay.value_overhead() + v
    per_version = lay.map_node + key_obj + value_obj
    mem, mem_r = est.memory, est.memory_restarted
    rule_lo, rule_hi = est.rule_of_thumb_bytes()
    plain = napkin(i, PLAIN_OOPS)
    per_part = est.rows / i.num_partitions
    steps = []
    window = (f"{i.input_rows_per_second:,g} rows/s x ({i.watermark_seconds:g} s + "
              f"{i.trigger_seconds:g} s)")
    if i.key_cardinality == 0:
        steps.append(
            f"1. Rows held. Every event has its own key (key_cardinality = 0), so the state holds "
            f"every row still inside the watermark delay plus the batch being processed: {window} "
            f"= {est.rows:,} rows, {per_part:,.0f} per partition over {i.num_partitions:,} "
            f"partitions. Each {i.trigger_seconds:g} s batch adds {est.arrivals_per_batch:,} keys "
            "and the watermark evicts as many.")
    else:
        steps.append(
            f"1. Rows held. One row per key: {i.key_cardinality:,} keys, and never more than the "
            f"rows arriving within the watermark delay plus one batch ({window}): {est.rows:,} "
            f"rows, {per_part:,.0f} per partition over {i.num_partitions:,} partitions. Each "
            f"batch replaces the value of up to {est.arrivals_per_batch:,} of them.")
    steps.append(
        f"2. Row bytes as stored. Spark keeps keys and values in its UnsafeRow format (8 bytes of "
        f"null bits per 64 fields, 8 bytes per field, variable-length data rounded up to 8): "
        f"{k} + {v} = {k + v} bytes per row, {_n(est.payload_bytes)} B "
        f"({format_bytes(est.payload_bytes)}) for {est.rows:,} rows.")
    steps.append(
        f"3. The widely quoted rule of thumb, rows x (key + value) x 1.0 to 1.5, stops there: "
        f"{format_bytes(rule_lo)} to {format_bytes(rule_hi)}. It leaves out the objects every row "
        "needs in the JVM, the second version kept in memory, and the hash tables.")
    steps.append(
        f"4. Objects per row on the HDFS-backed provider. A key is an UnsafeRow object "
        f"({lay.unsafe_row} B) pointing at its own byte[] ({lay.array_header} B header + {k} B); "
        f"a value is a StateStoreRow wrapper ({lay.value_wrapper()} B), an UnsafeRow "
        f"({lay.unsafe_row} B) and a byte[] ({lay.array_header} B + {v} B); the version's hash "
        f"map adds a node ({lay.map_node} B). One version: {lay.map_node} + {key_obj} + "
        f"{value_obj} = {per_version} B per row, {per_version / (k + v):.1f}x the row bytes.")
    if part.old_capacity:
        steps.append(
            f"5. Versions in memory. The provider keeps the last {DEFAULT_VERSIONS_IN_MEMORY} "
            "versions of every partition (spark.sql.streaming.maxBatchesToRetainInMemory). The "
            "older one shares the unchanged rows with the newest, but has its own nodes "
            f"({part.old_rows:,} x {lay.map_node} B per partition) and hash table, and still "
            f"holds the {part.removed + part.replaced:,} rows per partition that the newest batch "
            "evicted or replaced.")
    steps.append(
        f"6. Hash tables. Each batch starts its version as a copy (ConcurrentHashMap.putAll) of "
        f"the previous one, and JDK 17 sizes that table at twice the power of two >= 1.5 x rows "
        f"+ 1: {part.new_capacity:,} slots of {lay.reference} B = "
        f"{format_bytes(lay.reference_array(part.new_capacity))} per version and partition.")
    steps.append(
        f"7. Heap. {i.num_partitions:,} partitions x (row objects, map nodes, tables, fixed parts) "
        f"= {format_bytes(mem.row_object_bytes)} + {format_bytes(mem.entry_bytes)} + "
        f"{format_bytes(mem.table_bytes)} + {format_bytes(mem.fixed_bytes)} = "
        f"{format_bytes(mem.heap_bytes)}" + (
            f": {mem.heap_bytes / est.rows:,.0f} B per row, "
            f"{mem.heap_bytes / est.payload_bytes:.1f}x the row bytes and "
            f"{mem.heap_bytes / rule_hi:.1f}x the rule of thumb's upper figure" if est.rows else
            " (no rows: the fixed parts only)") + "; "
        f"{format_bytes(mem.heap_bytes / i.num_partitions)} per partition. (With executor heaps "
        f"of 32 GB or more, without compressed oops: {format_bytes(plain.memory.heap_bytes)}.)")
    steps.append(
        f"8. What Spark's memoryUsedBytes will read. Its SizeEstimator counts a row shared by "
        f"both versions once when their tables have the same length, as in a query running "
        f"continuously at steady state: about {format_bytes(mem.reported_bytes)}. After a "
        f"restart the older version is read back from the state files into a table of "
        f"{restarted_table(est):,} slots, so the sampled rows count twice: about "
        f"{format_bytes(mem_r.reported_bytes)} for jobs that start once per batch "
        "(availableNow, Trigger.Once, and this runbook's demo).")
    steps.append(
        f"9. RocksDB instead. The rows live in RocksDB's files ({format_bytes(est.payload_bytes)} "
        f"before compression), not in the JVM heap; its native memory is capped per store "
        f"instance by configuration: {i.num_partitions:,} x ({ROCKSDB_BLOCK_CACHE_MB} MiB block "
        f"cache + {ROCKSDB_MAX_WRITE_BUFFERS} x {ROCKSDB_WRITE_BUFFER_MB} MiB write buffers) = "
        f"{format_bytes(rocksdb_native_cap(i.num_partitions))} at most (a stream-stream join "
        "has 4 stores per partition).")
    rec = est.recommendation
    steps.append(
        f"10. Recommendation: {PROVIDER_NAMES[rec.provider]}, {rec.partitions:,} partitions. "
        f"Thresholds: {rec.reason}." + (
            f" You planned {PROVIDER_NAMES[i.provider]}." if i.provider != rec.provider else ""))
    return [textwrap.fill(s, width, subsequent_indent="   ") for s in steps]


def restarted_table(est: Napkin) -> int:
    """The older version's table length after a restart: filled by put from the state files."""
    return filled_capacity(est.partition.rows + est.partition.inserted)


# -- measured: tables and totals -------------------------------------------------------------------
def measured_totals(measurements: list[StoreMeasurement]) -> MemoryEstimate:
    total = MemoryEstimate()
    for m in measurements:
        total = total + m.estimate
    return total


def _disk_by_folder(measurements: list[StoreMeasurement]) -> list[dict]:
    """Each store folder's bytes once: the units of one folder (a join in state format 3, the
    variables of transformWithState) all report that folder's files."""
    folders = {}
    for m in measurements:
        folder = m.report.files_store if m.report is not None else m.store_name
        folders[(m.operator_id, folder)] = m.disk
    return list(folders.values())


def measured_summary(measurements: list[StoreMeasurement], restarted_each_batch: bool) -> dict:
    """The summary's ``measured`` entry."""
    total = measured_totals(measurements)
    return {
        "batch_id": measurements[0].batch_id if measurements else None,
        "rows": sum(m.rows for m in measurements),
        "payload_bytes": sum(m.payload_bytes for m in measurements),
        "estimated_memory_bytes": round(total.reported_bytes),
        "estimated_memory_sd_bytes": round(total.reported_sd),
        "heap_bytes": round(total.heap_bytes),
        "restarted_each_batch": restarted_each_batch,
        "disk_bytes": {"latest_version": sum(d.get("latest_version_bytes", 0)
                                             for d in _disk_by_folder(measurements)),
                       "retained": sum(d.get("retained_bytes", 0)
                                       for d in _disk_by_folder(measurements))},
        "per_store": [{"operator_id": m.operator_id, "operator_name": m.operator_name,
                       "store_name": m.store_name, "rows": m.rows, "key_bytes": m.key_bytes,
                       "value_bytes": m.value_bytes, "rows_per_partition": m.rows_per_partition,
                       "payload_bytes_per_partition": m.payload_bytes_per_partition,
                       "disk_bytes": m.disk, "churn_source": m.churn_source,
                       **{f"estimate_{k}": v for k, v in m.estimate.as_dict().items()
                          if k not in ("rows", "payload_bytes")}}
                      for m in measurements],
    }


def stores_table(measurements: list[StoreMeasurement]):
    """One row per store: rows and bytes as stored, on disk, and the in-memory estimate."""
    import pandas as pd
    return pd.DataFrame([{
        "store": m.label, "operator": m.operator_name, "rows": m.rows,
        "key_B": m.key_bytes, "value_B": m.value_bytes,
        "disk_latest_B": m.disk.get("latest_version_bytes"),
        "disk_retained_B": m.disk.get("retained_bytes"),
        "hdfs_heap_B": round(m.estimate.heap_bytes),
        "hdfs_memoryUsedBytes_B": round(m.estimate.reported_bytes),
    } for m in measurements])


def partitions_table(measurements: list[StoreMeasurement]):
    """One row per store partition: rows, row bytes, and what the older kept version adds."""
    import pandas as pd
    rows = []
    for m in measurements:
        for p, part in enumerate(m.partitions):
            rows.append({"store": m.label, "partition": p, "rows": part.rows,
                         "payload_B": (m.payload_bytes_per_partition[p]
                                       if p < len(m.payload_bytes_per_partition) else None),
                         "inserted": part.inserted, "removed": part.removed,
                         "replaced": part.replaced, "table_new": part.new_capacity,
                         "table_old": part.old_capacity})
    return pd.DataFrame(rows)


# -- Spark's own report ----------------------------------------------------------------------------
def reported(progress: dict | None) -> dict | None:
    """From one ``query.lastProgress``: memoryUsedBytes, rows and RocksDB's SST bytes, summed over
    stateful operators (each already summed over its partitions and stores)."""
    if not progress or not progress.get("stateOperators"):
        return None
    ops = progress["stateOperators"]
    sst = [op.get("customMetrics", {}).get("rocksdbSstFileSize") for op in ops]
    return {"batch_id": progress.get("batchId"),
            "memory_used_bytes": sum(int(op["memoryUsedBytes"]) for op in ops),
            "num_rows_total": sum(int(op["numRowsTotal"]) for op in ops),
            "rocksdb_sst_bytes": sum(sst) if all(v is not None for v in sst) else None,
            "operators": {op["operatorName"]: int(op["memoryUsedBytes"]) for op in ops}}


# -- growth and projection -------------------------------------------------------------------------
@dataclass
class Projection:
    horizon_batches: int
    last_batch: int
    rows_now: int
    growth_per_batch: float  # rows per batch, over the last (up to) 3 sampled batches
    rows: int  # projected at last_batch + horizon_batches
    heap_bytes: float
    reported_bytes: float

    def summary(self) -> dict:
        return {"horizon_batches": self.horizon_batches, "last_batch": self.last_batch,
                "rows_now": self.rows_now, "growth_rows_per_batch": round(self.growth_per_batch, 1),
                "rows": self.rows, "heap_bytes": round(self.heap_bytes),
                "memory_bytes": round(self.reported_bytes)}


def growth_rate(table, points: int = 3) -> float:
    """Rows per batch: least-squares slope of the total rows over the last ``points`` samples."""
    totals = table.sum(axis=1)
    xs = [float(b) for b in totals.index[-points:]]
    ys = [float(v) for v in totals.values[-points:]]
    if len(xs) < 2:
        return 0.0
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def project(table, measurements: list[StoreMeasurement], horizon_batches: int) -> Projection:
    """Rows and memory ``horizon_batches`` ahead, at the recent growth rate (linear). A state the
    watermark bounds levels off: its recent rate is 0 and the projection stays where it is."""
    _check(isinstance(horizon_batches, int) and not isinstance(horizon_batches, bool)
           and horizon_batches >= 0,
           f"horizon_batches={horizon_batches!r} is not valid: pass how many batches ahead to "
           "project, 0 or more")
    total = measured_totals(measurements)
    if table.empty:  # no store could be measured
        return Projection(horizon_batches, -1, 0, 0.0, 0, 0.0, 0.0)
    rows_now = int(table.sum(axis=1).iloc[-1])
    rate = growth_rate(table)
    rows = max(0, round(rows_now + rate * horizon_batches))
    scale = rows / total.rows if total.rows else 0.0
    return Projection(horizon_batches, int(table.index[-1]), rows_now, rate, rows,
                      total.heap_bytes * scale, total.reported_bytes * scale)


# -- the demo: napkin vs measured vs Spark's report, per workload and provider ---------------------
COMPARED_WORKLOADS = ("dedup", "window_agg_many_users", "join")
WORKLOAD_LABELS = {"dedup": "deduplication", "window_agg_many_users": "windowed aggregation",
                   "join": "stream-stream join"}
# Rows per batch and batches of each compared demo, about 10,000 to 12,000 rows each: the
# deduplication runs until the watermark evicts (the napkin's steady state); the windowed
# aggregation's last batch falls inside a window, so it replaces values; the join buffers both
# sides.
DEMO_RUNS = {"dedup": (4000, 8), "window_agg_many_users": (10000, 3), "join": (2000, 3)}
ACCURACY_TARGET = 0.25  # the estimator's error against memoryUsedBytes, HDFS-backed provider


def demo_run_for_rows(workload: str, rows: int) -> tuple[int, int]:
    """(rows_per_batch, batches) of a demo whose state holds about ``rows`` rows (Spark's
    numRowsTotal), in few batches: 2 for the deduplication (each batch brings rows_per_batch / 2
    ids), 3 for the windowed aggregation (rows_per_batch / 2 users in 2 windows) and for the join
    (about 5.4 x rows_per_batch rows after 3 batches)."""
    _check(rows >= 10, f"rows={rows} is too few for a demo: pass 10 or more")
    if workload == "dedup":
        return rows, 2
    if workload == "window_agg_many_users":
        return rows, 3
    if workload == "join":
        return max(2, round(rows / 5.4)), 3
    raise RunbookError(f"workload {workload!r} has no sizing demo: use one of "
                       f"{', '.join(COMPARED_WORKLOADS)}")


@dataclass
class Comparison:
    """One demo query: the estimate from its checkpoint next to what the query reported."""
    workload: str
    provider: str
    checkpoint_path: str
    rows: int  # Spark's numRowsTotal (a join counts its keyWithIndexToValue rows)
    state_rows: int  # rows in every store
    payload_bytes: int
    disk_bytes: int  # latest version's files
    rule_of_thumb_bytes: float  # the widely quoted rule of thumb, upper factor
    estimated_bytes: float  # the HDFS-backed provider's expected memoryUsedBytes
    estimated_sd: float
    heap_bytes: float
    reported_bytes: int  # memoryUsedBytes
    rocksdb_sst_bytes: int | None = None

    @property
    def error(self) -> float | None:
        """Estimate over report, minus 1 (HDFS-backed provider only)."""
        if self.provider != "hdfs" or not self.reported_bytes:
            return None
        return self.estimated_bytes / self.reported_bytes - 1

    @property
    def ratio_to_rule_of_thumb(self) -> float:
        if not self.rule_of_thumb_bytes:
            return float("nan")
        return self.reported_bytes / self.rule_of_thumb_bytes

    def summary(self) -> dict:
        return {k: (round(v) if isinstance(v, float) else v) for k, v in self.__dict__.items()} | {
            "error": None if self.error is None else round(self.error, 4)}


def compare(spark, run, measurements: list[StoreMeasurement] | None = None) -> Comparison:
    """Estimate from a demo run's checkpoint (restarted for every batch, as the demo runs) and
    compare with the memoryUsedBytes its last batch reported. ``measurements`` of the same
    deterministic workload on the HDFS-backed provider can be passed in for a RocksDB run: the
    state rows are the same, only the provider differs."""
    from .checkpoint import Checkpoint

    if measurements is None:
        measurements = measure_stores(Checkpoint(spark, run.checkpoint_path),
                                      restarted_each_batch=True)
    total = measured_totals(measurements)
    rep = reported(run.progress[-1] if run.progress else None) or {}
    payload = sum(m.payload_bytes for m in measurements)
    latest_disk = 0
    if run.provider != "hdfs":  # the files are the run's own, not the HDFS run's
        ckpt = Checkpoint(spark, run.checkpoint_path)
        latest_disk = sum(ckpt.disk_bytes(s.operator_id, s.store_name)["latest_version_bytes"]
                          for s in ckpt.stores())
    else:
        latest_disk = sum(d.get("latest_version_bytes", 0) for d in _disk_by_folder(measurements))
    return Comparison(
        workload=run.workload, provider=run.provider, checkpoint_path=run.checkpoint_path,
        rows=int(rep.get("num_rows_total", 0)), state_rows=sum(m.rows for m in measurements),
        payload_bytes=payload, disk_bytes=latest_disk,
        rule_of_thumb_bytes=payload * RULE_OF_THUMB_FACTORS[1],
        estimated_bytes=total.reported_bytes, estimated_sd=total.reported_sd,
        heap_bytes=total.heap_bytes, reported_bytes=int(rep.get("memory_used_bytes", 0)),
        rocksdb_sst_bytes=rep.get("rocksdb_sst_bytes"))


def compare_demo_workloads(spark, workloads=COMPARED_WORKLOADS, rocksdb_workloads=("dedup",),
                           runs: dict | None = None, reuse=None) -> list[Comparison]:
    """Run each compared demo query on the HDFS-backed provider (and those in
    ``rocksdb_workloads`` on RocksDB too) and compare estimate and report.

    ``runs`` maps workload -> (rows_per_batch, batches) (default ``DEMO_RUNS``); ``reuse`` is a
    DemoRun already built (the runbook's own demo) that stands for its workload and provider.
    """
    from .checkpoint import Checkpoint
    from .demo import build_demo_checkpoint

    runs = runs or DEMO_RUNS
    out = []
    for workload in workloads:
        _check(workload in runs, f"workload {workload!r} has no demo size: use one of "
                                 f"{', '.join(runs)}")
        rows_per_batch, batches = runs[workload]
        hdfs_measurements = None
        for provider in ("hdfs", "rocksdb") if workload in rocksdb_workloads else ("hdfs",):
            if (reuse is not None and reuse.workload == workload and reuse.provider == provider
                    and (reuse.rows_per_batch, reuse.batches) == (rows_per_batch, batches)):
                run = reuse
            else:
                run = build_demo_checkpoint(spark, workload, batches=batches,
                                            rows_per_batch=rows_per_batch, provider=provider)
            if provider == "hdfs":
                hdfs_measurements = measure_stores(Checkpoint(spark, run.checkpoint_path),
                                                   restarted_each_batch=True)
            out.append(compare(spark, run, hdfs_measurements))
    return out


def comparison_table(comparisons: list[Comparison]):
    """Per workload and provider: rows, row bytes, the rule of thumb, the estimate, the report."""
    import pandas as pd
    return pd.DataFrame([{
        "workload": WORKLOAD_LABELS.get(c.workload, c.workload), "provider": c.provider,
        "rows": c.rows, "state_rows": c.state_rows, "row_bytes": format_bytes(c.payload_bytes),
        "rule_of_thumb_x1.5": format_bytes(c.rule_of_thumb_bytes),
        "estimate": format_bytes(c.estimated_bytes) if c.provider == "hdfs" else "-",
        "memoryUsedBytes": format_bytes(c.reported_bytes),
        "error": f"{c.error:+.1%}" if c.error is not None else "-",
        "report/rule": f"{c.ratio_to_rule_of_thumb:.1f}x",
    } for c in comparisons])


def accuracy_lines(comparisons: list[Comparison], target: float = ACCURACY_TARGET) -> list[str]:
    """One line per HDFS workload with its error, also in standard deviations of Spark's own
    sampling, and a verdict against the target."""
    lines = []
    hdfs = [c for c in comparisons if c.error is not None]
    for c in hdfs:
        sigmas = (c.estimated_bytes - c.reported_bytes) / c.estimated_sd if c.estimated_sd else 0
        lines.append(f"{WORKLOAD_LABELS.get(c.workload, c.workload)}: estimate "
                     f"{format_bytes(c.estimated_bytes)}, memoryUsedBytes "
                     f"{format_bytes(c.reported_bytes)}: error {c.error:+.1%} "
                     f"({sigmas:+.1f} sd of SizeEstimator's sampling)")
    if hdfs:
        worst = max(abs(c.error) for c in hdfs)
        verdict = "within" if worst <= target else "OUTSIDE"
        lines.append(f"largest error {worst:.1%}: {verdict} the {target:.0%} target on "
                     f"{len(hdfs)} workloads")
    return lines


def three_way_lines(napkin_est: Napkin, comparisons: list[Comparison], workload: str = "dedup"
                    ) -> list[str]:
    """Napkin vs measured vs Spark's report for one workload, on each provider, with ratios."""
    import textwrap

    lines = []
    for c in comparisons:
        if c.workload != workload:
            continue
        if c.provider == "hdfs":
            nap = napkin_est.memory_restarted.reported_bytes
            text = (
                f"HDFS-backed provider, memoryUsedBytes: napkin {format_bytes(nap)}, measured "
                f"(estimated from the checkpoint's rows) {format_bytes(c.estimated_bytes)}, "
                f"reported {format_bytes(c.reported_bytes)}; napkin/reported "
                f"{nap / c.reported_bytes:.2f}, measured/reported "
                f"{c.estimated_bytes / c.reported_bytes:.2f}. Rows: napkin {napkin_est.rows:,}, "
                f"measured {c.state_rows:,}, reported {c.rows:,}. Heap: napkin "
                f"{format_bytes(napkin_est.memory.heap_bytes)}, measured "
                f"{format_bytes(c.heap_bytes)}. The rule of thumb: "
                f"{format_bytes(c.rule_of_thumb_bytes)}, "
                f"{c.reported_bytes / c.rule_of_thumb_bytes:.1f}x under the report.")
        else:
            cap = rocksdb_native_cap(napkin_est.inputs.num_partitions)
            sst = (f", SST files {format_bytes(c.rocksdb_sst_bytes)} (rocksdbSstFileSize, "
                   f"{c.rocksdb_sst_bytes / c.payload_bytes:.2f}x the row bytes)"
                   if c.rocksdb_sst_bytes else "")
            text = (
                f"RocksDB, memoryUsedBytes: napkin cap {format_bytes(cap)}, measured row bytes "
                f"{format_bytes(c.payload_bytes)}{sst}, reported {format_bytes(c.reported_bytes)}; "
                f"reported/cap {c.reported_bytes / cap:.4f}, reported/row bytes "
                f"{c.reported_bytes / c.payload_bytes:.2f}. RocksDB reports its native memory "
                "(memtables, block cache, index and filter blocks), which follows its "
                "configuration and when it last flushed, not the row count; the rows themselves "
                "are in its files on local disk.")
        lines.append(textwrap.fill(text, 100))
    return lines


def plot_table(comparisons: list[Comparison]):
    """Bytes per workload for ``plots.estimate_vs_reported``: the rule of thumb, the estimate and
    each provider's memoryUsedBytes."""
    import pandas as pd
    rows = {}
    for c in comparisons:
        row = rows.setdefault(WORKLOAD_LABELS.get(c.workload, c.workload), {})
        row["rule of thumb (x1.5)"] = c.rule_of_thumb_bytes
        if c.provider == "hdfs":
            row["estimate (HDFS)"] = c.estimated_bytes
        row[f"memoryUsedBytes ({c.provider})"] = c.reported_bytes
    return pd.DataFrame.from_dict(rows, orient="index")


def summarize(summary, napkin_est: Napkin | None, measurements: list[StoreMeasurement] | None,
              restarted_each_batch: bool, reported_now: dict | None,
              projection: Projection | None, comparisons: list[Comparison] | None = None,
              provider_kind: str = "hdfs", unreadable: list | None = None) -> None:
    """Fill the summary: the runbook's keys, and findings for what needs acting on.
    ``unreadable``: the reports of units Spark's reader refused (not measured)."""
    d = summary.details
    d["unmeasured"] = [r.summary() for r in unreadable or []]
    if unreadable:
        summary.add_finding("info", "stores_not_measured",
                            f"{len(unreadable)} store(s) Spark's reader refused were not "
                            f"measured: {', '.join(r.label for r in unreadable)}")
    d["napkin"] = napkin_est.summary() if napkin_est else None
    d["measured"] = measured_summary(measurements, restarted_each_batch) if measurements else None
    d["reported_memory_bytes"] = reported_now["memory_used_bytes"] if reported_now else None
    d["projection"] = projection.summary() if projection else None
    if comparisons:
        d["comparison"] = [c.summary() for c in comparisons]
        d["estimator_error"] = {c.workload: round(c.error, 4) for c in comparisons
                                if c.error is not None}
        worst = max((abs(c.error) for c in comparisons if c.error is not None), default=0.0)
        if worst > ACCURACY_TARGET:
            summary.add_finding("warning", "estimator_error",
                                f"estimate off memoryUsedBytes by {worst:.1%} > "
                                f"{ACCURACY_TARGET:.0%} on a demo workload")
    rec = napkin_est.recommendation if napkin_est else None
    if rec is not None and rec.provider != napkin_est.inputs.provider:
        summary.add_finding("info", "napkin_provider",
                            f"napkin: {PROVIDER_NAMES[rec.provider]} recommended over the planned "
                            f"{PROVIDER_NAMES[napkin_est.inputs.provider]} ({rec.reason})")
    if measurements and provider_kind == "hdfs":
        from .inspection import LARGE_STATE_ROWS
        total = measured_totals(measurements)
        partitions = max(m.num_partitions for m in measurements)
        per_partition = total.heap_bytes / partitions
        if total.rows > LARGE_STATE_ROWS or per_partition > HDFS_MAX_HEAP_PER_PARTITION:
            summary.add_finding("warning", "hdfs_state_too_large",
                                f"{total.rows:,} rows, about {format_bytes(total.heap_bytes)} of "
                                f"heap ({format_bytes(per_partition)} per partition) on the "
                                "HDFS-backed provider: plan RocksDB "
                                "(runbooks/capacity-planning.md)")
        elif projection and (projection.rows > LARGE_STATE_ROWS or projection.heap_bytes
                             / partitions > HDFS_MAX_HEAP_PER_PARTITION):
            summary.add_finding("warning", "hdfs_state_growing",
                                f"at {projection.growth_per_batch:,.0f} rows per batch the state "
                                f"reaches {projection.rows:,} rows, about "
                                f"{format_bytes(projection.heap_bytes)} of heap, in "
                                f"{projection.horizon_batches:,} batches: plan RocksDB before "
                                "(runbooks/capacity-planning.md)")


def estimate_lines(measurements: list[StoreMeasurement], restarted_each_batch: bool,
                   provider_kind: str = "hdfs") -> list[str]:
    """Per store, what the HDFS-backed provider holds for the measured rows, and the figure
    Spark's memoryUsedBytes is expected to show, with why."""
    import textwrap

    lines = []
    if provider_kind != "hdfs":
        lines.append(textwrap.fill(
            f"This checkpoint's provider is {provider_kind}: the figures below are what the same "
            "rows would take on the HDFS-backed provider. RocksDB keeps them in files on local "
            "disk, and its memoryUsedBytes follows its configuration "
            "(runbooks/capacity-planning.md).", 100))
    for m in measurements:
        e = m.estimate
        old_rows = sum(p.old_rows for p in m.partitions)
        same = sum(1 for p in m.partitions if p.old_capacity and p.old_capacity == p.new_capacity)
        kept = [p for p in m.partitions if p.old_capacity]
        if not kept:
            why = "one version in memory (the first batch, or maxBatchesToRetainInMemory=1)"
        elif same == len(kept):
            why = ("both versions' tables have the same length in every partition, so "
                   "SizeEstimator samples the same slots twice and counts a shared row once")
        else:
            why = (f"the tables differ in length in {len(kept) - same} of {len(kept)} partitions "
                   f"(older {kept[0].old_capacity:,} slots, newest {kept[0].new_capacity:,} in "
                   "partition 0), so SizeEstimator samples different slots and counts most "
                   "shared rows twice")
        text = (f"{m.label} ({m.operator_name}): {m.rows:,} rows, {format_bytes(m.payload_bytes)} "
                f"as stored. Heap {format_bytes(e.heap_bytes)} = row objects "
                f"{format_bytes(e.row_object_bytes)} + map nodes {format_bytes(e.entry_bytes)} "
                f"({m.rows:,} + {old_rows:,} in the older version) + hash tables "
                f"{format_bytes(e.table_bytes)} + fixed {format_bytes(e.fixed_bytes)}. Expected "
                f"memoryUsedBytes {format_bytes(e.reported_bytes)} +/- "
                f"{format_bytes(e.reported_sd)} (one sd of SizeEstimator's sampling): {why}. "
                f"Churn from the {m.churn_source}.")
        lines.append(textwrap.fill(text, 100))
    total = measured_totals(measurements)
    mode = ("restarted for every batch" if restarted_each_batch
            else "running continuously (restarted_each_batch=False)")
    lines.append(f"Total: heap {format_bytes(total.heap_bytes)}, expected memoryUsedBytes "
                 f"{format_bytes(total.reported_bytes)} for a query {mode}.")
    return lines


def recommendation_lines(napkin_est: Napkin | None, measurements: list[StoreMeasurement] | None,
                         projection: Projection | None) -> list[str]:
    """The recommendation from the napkin (when there is one), from the measured state, and at
    the projection."""
    import textwrap

    lines = []
    if napkin_est is not None:
        rec = napkin_est.recommendation
        lines.append(f"Napkin: {PROVIDER_NAMES[rec.provider]}, {rec.partitions:,} partitions "
                     f"({rec.reason}).")
    if measurements:
        total = measured_totals(measurements)
        partitions = max(m.num_partitions for m in measurements)
        now = recommend(total.rows, total.heap_bytes, total.payload_bytes, partitions)
        lines.append(f"Measured: {PROVIDER_NAMES[now.provider]}, {now.partitions:,} partitions "
                     f"({now.reason}); the checkpoint has {partitions:,}.")
        if projection is not None and total.rows:
            scale = projection.rows / total.rows
            later = recommend(projection.rows, total.heap_bytes * scale,
                              total.payload_bytes * scale, partitions)
            lines.append(f"In {projection.horizon_batches:,} batches at the measured growth: "
                         f"{PROVIDER_NAMES[later.provider]}, {later.partitions:,} partitions "
                         f"({later.reason}).")
    return [textwrap.fill(line, 100, subsequent_indent="  ") for line in lines]


def accuracy_verdict(comparisons: list[Comparison], target: float = ACCURACY_TARGET) -> str:
    """One line without figures (stable enough to compare in tests): within the target or not."""
    hdfs = [c for c in comparisons if c.error is not None]
    if not hdfs:
        return "no query ran here: nothing to compare the estimate with"
    names = ", ".join(WORKLOAD_LABELS.get(c.workload, c.workload) for c in hdfs)
    if all(abs(c.error) <= target for c in hdfs):
        return f"estimate within {target:.0%} of memoryUsedBytes on every workload: {names}"
    bad = ", ".join(WORKLOAD_LABELS.get(c.workload, c.workload) for c in hdfs
                    if abs(c.error) > target)
    return f"estimate OUTSIDE {target:.0%} of memoryUsedBytes on: {bad}"
