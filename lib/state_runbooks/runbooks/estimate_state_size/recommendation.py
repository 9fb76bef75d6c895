"""Which provider and how many partitions, for a state of a given size, with the thresholds that
decided it; and RocksDB's native memory cap, the figure RocksDB is planned by."""
from __future__ import annotations

import math
from dataclasses import dataclass

from state_runbooks.common.formatting import format_bytes
from state_runbooks.core.state_limits import (
    HDFS_HEAP_PER_PARTITION,
    HDFS_STATE_ROWS,
    ROCKSDB_BLOCK_CACHE_MB,
    ROCKSDB_MAX_WRITE_BUFFERS,
    ROCKSDB_PAYLOAD_PER_PARTITION,
    ROCKSDB_WRITE_BUFFER_MB,
)

PROVIDER_NAMES = {"hdfs": "the HDFS-backed provider", "rocksdb": "RocksDB"}


def rocksdb_configured_memory(instances: int, block_cache_mb: int = ROCKSDB_BLOCK_CACHE_MB,
                       write_buffer_mb: int = ROCKSDB_WRITE_BUFFER_MB,
                       write_buffers: int = ROCKSDB_MAX_WRITE_BUFFERS) -> int:
    """RocksDB's native memory as the default configuration sizes it: per store instance (one per
    partition and store), a block cache plus full write buffers. Not a cap: index and filter
    blocks and open iterators come on top, and only bounded memory
    (``spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage``) caps it, per executor."""
    return instances * (block_cache_mb + write_buffer_mb * write_buffers) * 1024 ** 2


def thresholds_line(rocksdb_only: str | None = None, max_rows_on_hdfs: int | None = None) -> str:
    """The thresholds :func:`recommend` decides by, said once for every recommendation shown;
    with ``rocksdb_only`` (why a checkpoint runs on RocksDB only), the rule for that checkpoint."""
    limit = HDFS_STATE_ROWS if max_rows_on_hdfs is None else max_rows_on_hdfs
    rocksdb = (f"RocksDB, with the row bytes per partition <= "
               f"{format_bytes(ROCKSDB_PAYLOAD_PER_PARTITION)}")
    if rocksdb_only:
        return f"On this checkpoint: {rocksdb} ({rocksdb_only})."
    return (f"Thresholds: above {limit:,} rows {rocksdb} (beyond that many rows the HDFS-backed "
            "provider's JVM memory becomes a risk); otherwise the HDFS-backed provider, with the "
            f"estimated heap per partition <= {format_bytes(HDFS_HEAP_PER_PARTITION)}.")


@dataclass
class Recommendation:
    provider: str
    partitions: int
    reason: str


def recommend(rows: int, heap_bytes: float, payload_bytes: float, num_partitions: int,
              max_rows_on_hdfs: int | None = None,
              max_heap_per_partition: int = HDFS_HEAP_PER_PARTITION,
              max_payload_per_partition: int = ROCKSDB_PAYLOAD_PER_PARTITION,
              rocksdb_only: str | None = None) -> Recommendation:
    """Provider and partitions, with the thresholds that decided them in ``reason``.

    RocksDB above the inspect runbook's row threshold (``store_scan.HDFS_STATE_ROWS``); otherwise
    the HDFS-backed provider, with enough partitions to keep the estimated heap per partition under
    ``max_heap_per_partition``. For RocksDB, enough partitions to keep the row bytes per partition
    under ``max_payload_per_partition``.
    """
    limit = HDFS_STATE_ROWS if max_rows_on_hdfs is None else max_rows_on_hdfs
    if rocksdb_only:
        partitions = max(num_partitions, math.ceil(payload_bytes / max_payload_per_partition))
        return Recommendation("rocksdb", partitions,
                              f"{rocksdb_only}; partitions keep the row bytes per partition <= "
                              f"{format_bytes(max_payload_per_partition)}")
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

