"""The demo's second checkpoint and its last claims: a deduplication without a watermark (its
keys never expire), its oldest keys dropped, after which those keys come through again; and a
query continued on a rewritten checkpoint next to one that never was.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.common.errors import spark_errors
from state_runbooks.demos.checkpoints import DEMO_START_MS, provider_conf
from state_runbooks.session.spark_session import session_conf

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


@dataclass
class Continued:
    output: list  # the rows the continued batches wrote, sorted (as text)
    progress: list = field(default_factory=list)  # the last progress of every batch


def continue_query(spark, df, path: str, batches: int = 1, provider: str = "hdfs",
                   partitions: int = 2, mode: str = "append") -> Continued:
    """Run ``batches`` more micro-batches of ``df`` on ``path`` (one per ``availableNow`` start),
    collecting what they write (a sink that restarts from the checkpoint). The provider and
    partitions are those pinned in the checkpoint once it exists; these apply to a new one."""
    rows, progress = [], []

    def collect(batch, _batch_id):
        rows.extend(batch.collect())

    conf = {"spark.sql.streaming.noDataMicroBatches.enabled": "false",
            "spark.sql.shuffle.partitions": str(partitions), **provider_conf(provider)}
    with session_conf(spark, conf):
        for _ in range(batches):
            with spark_errors(f"running the query on {path}"):
                query = (df.writeStream.foreachBatch(collect).outputMode(mode)
                         .option("checkpointLocation", path).trigger(availableNow=True).start())
                query.awaitTermination()
            progress.append(query.lastProgress)
    return Continued(sorted(map(repr, rows)), progress)


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
    key, value and partition, in Spark), as one line."""
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.core.operators import state_units
    from state_runbooks.core.state_reader import read_unit
    a, b = Checkpoint(spark, path), Checkpoint(spark, other)
    parts = []
    for unit in state_units(a):
        x, y = read_unit(a, unit), read_unit(b, unit)
        same = x.exceptAll(y).count() == 0 and y.exceptAll(x).count() == 0
        parts.append(f"{unit.label} {x.count()} vs {y.count()} rows, "
                     f"{'equal' if same else 'DIFFERENT'} row by row")
    return "; ".join(parts)
