"""The demo's second checkpoint and its last claims: a deduplication without a watermark (its
keys never expire), its oldest keys dropped, after which those keys come through again; and a
query continued on a rewritten checkpoint next to one that never was.
"""
from __future__ import annotations

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.state_diff import WITH_PARTITION, diff_checkpoints
from state_runbooks.demos.checkpoints import DEMO_START_MS
from state_runbooks.demos.continuation import Continued, continue_query

DEDUP_IDS = 30  # the deduplicated ids cycle through 0..29: batch 3 brings batch 0's ids again
DEDUP_ROWS_PER_BATCH = 10


def dedup_query(spark, rows_per_batch: int = DEDUP_ROWS_PER_BATCH):
    """``dropDuplicates(["id"])`` without a watermark over ids ``value % DEDUP_IDS``: every id
    stays in the state for good, and an id seen once never comes through again."""
    from pyspark.sql import functions as F
    return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", rows_per_batch)
            .option("numPartitions", 1).option("startTimestamp", DEMO_START_MS)
            .option("advanceMillisPerBatch", 1000).load()
            .select((F.col("value") % DEDUP_IDS).alias("id"), F.col("value").alias("event"))
            .dropDuplicates(["id"]))


def build_dedup_demo(spark, path: str, batches: int = 3, provider: str = "rocksdb") -> Continued:
    """The deduplication demo checkpoint: ``batches`` batches of 10 events, ids 0..29."""
    return continue_query(spark, dedup_query(spark), path, batches, provider)


def operator_provider(progress: dict) -> str:
    """Which provider ran a batch's first stateful operator, from its metrics: RocksDB reports
    ``rocksdb*`` metrics, the HDFS-backed provider does not."""
    metrics = progress["stateOperators"][0].get("customMetrics", {})
    return "rocksdb" if any(k.startswith("rocksdb") for k in metrics) else "hdfs"


def state_comparison(spark, path: str, other: str) -> str:
    """Every store of two checkpoints at their last committed batch, compared row by row (by
    key, value and partition), as one line."""
    diffs = diff_checkpoints(Checkpoint(spark, path), Checkpoint(spark, other),
                             columns=WITH_PARTITION)
    return "; ".join(f"{d.label} {d.found} vs {d.expected} rows, "
                     f"{'equal' if d.equal else 'DIFFERENT'} row by row" for d in diffs)
