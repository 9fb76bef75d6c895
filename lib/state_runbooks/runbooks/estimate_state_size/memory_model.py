"""The HDFS-backed provider's memory, one store partition at a time: what the kept versions hold
on the heap, and the figure Spark's ``memoryUsedBytes`` will read.

The model follows how Spark 4.x's ``HDFSBackedStateStoreProvider`` keeps state:

- Each state store partition keeps its newest versions in memory, in a ``TreeMap`` (``loadedMaps``):
  at most ``spark.sql.streaming.maxBatchesToRetainInMemory`` of them, 2 by default.
- A version is a ``java.util.concurrent.ConcurrentHashMap`` from a key ``UnsafeRow`` to a
  ``StateStoreRow`` that wraps the value ``UnsafeRow``; each ``UnsafeRow`` points at its own
  ``byte[]`` holding the row in Spark's binary format (the bytes ``unsafe_row_size_sql`` computes).
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

Object sizes, table lengths and the sampling are in :mod:`.jvm_objects`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .jvm_objects import (
    COMPRESSED_OOPS,
    MIN_TABLE,
    SAMPLE_SLOTS,
    SAMPLING_ABOVE,
    JvmLayout,
    copied_capacity,
    estimated_slots_bytes,
    estimated_slots_variance,
    filled_capacity,
)

DEFAULT_VERSIONS_IN_MEMORY = 2


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
    index_bytes: float = 0.0  # session windows: the second map per version (prefix_index_bytes)

    @property
    def reported_sd(self) -> float:
        """One standard deviation of Spark's figure around ``reported_bytes``."""
        return math.sqrt(self.reported_variance)

    @property
    def heap_bytes(self) -> float:
        """What the executor heap holds for this state."""
        return (self.row_object_bytes + self.entry_bytes + self.table_bytes + self.fixed_bytes
                + self.index_bytes)

    def with_index(self, index_bytes: float) -> "MemoryEstimate":
        """This estimate with a prefix index's bytes added (held, and counted by Spark)."""
        return self + MemoryEstimate(reported_bytes=index_bytes, index_bytes=index_bytes)

    def __add__(self, other: "MemoryEstimate") -> "MemoryEstimate":
        return MemoryEstimate(*(getattr(self, f) + getattr(other, f) for f in
                                ("rows", "payload_bytes", "row_object_bytes", "entry_bytes",
                                 "table_bytes", "fixed_bytes", "reported_bytes",
                                 "reported_variance", "index_bytes")))

    def as_dict(self) -> dict:
        return {"rows": int(self.rows), "payload_bytes": round(self.payload_bytes),
                "row_object_bytes": round(self.row_object_bytes),
                "entry_bytes": round(self.entry_bytes), "table_bytes": round(self.table_bytes),
                "fixed_bytes": round(self.fixed_bytes), "index_bytes": round(self.index_bytes),
                "heap_bytes": round(self.heap_bytes),
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


def prefix_index_bytes(part: PartitionVersions, prefixes: int, prefix_bytes: float,
                       fixed: tuple[int, int], layout: JvmLayout = COMPRESSED_OOPS,
                       versions_in_memory: int = DEFAULT_VERSIONS_IN_MEMORY) -> float:
    """The second map a session window's store keeps per version on the HDFS-backed provider
    (``PrefixScannableHDFSBackedStateStoreMap``: each session key -> the set of its full keys),
    for one store partition with ``prefixes`` session keys of ``prefix_bytes`` each.

    Per version: the map's fixed part (``fixed``: measured by SizeEstimator for the key schema,
    first version and each further one), its table (filled by ``put``), per session key a map
    node and a set with its 16-slot table, per full key a set node. The session key objects are
    shared by the versions. Counted whole: SizeEstimator samples only tables of over 400 slots,
    and its expected figure for those is the same."""
    if versions_in_memory <= 0 or prefixes <= 0:
        return 0.0
    has_old = versions_in_memory >= 2 and part.old_capacity > 0
    per_prefix = layout.map_node + layout.hash_set + layout.reference_array(MIN_TABLE)
    table = layout.reference_array(filled_capacity(prefixes))
    versions = [part.rows] + ([part.old_rows] if has_old else [])
    total = prefixes * (layout.key_overhead + prefix_bytes)
    for i, keys in enumerate(versions):
        total += (fixed[0] if i == 0 else fixed[1]) + table + prefixes * per_prefix
        total += keys * layout.hash_set_node
    return total
