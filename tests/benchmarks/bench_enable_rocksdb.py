"""01_enable_rocksdb: the cost of measuring, and HDFS vs RocksDB at 1,000,000 state rows.

1. One provider measured by the runbook (the demo query plus heap after GC, progress metrics and a
   listing of the state files) next to the bare streaming query it wraps, on 200,000 state rows.
   The target allows 1.5x: a heap figure costs two full GCs and closing the cached state stores.
2. The notebook's side-by-side at the size the README recommends for a meaningful run
   (``benchmark_rows=1000000``): the figures a reader would see, as ratios to the HDFS provider.
"""
from __future__ import annotations

import itertools

ROWS = 200_000
BIG_ROWS = 1_000_000


def bench(ctx) -> list[dict]:
    from pyspark.sql import functions as F

    from state_runbooks import enable_rocksdb as er
    from state_runbooks.demo import DEMO_START_MS

    spark = ctx.spark
    counter = itertools.count()
    rows_per_batch = er.bench_rows_per_batch(ROWS)

    def runbook():
        er.measure_provider(spark, str(ctx.folder / f"runbook-{next(counter)}"), "hdfs", ROWS)

    def bare():
        """The same deduplication as the demo, written directly against PySpark."""
        path = str(ctx.folder / f"bare-{next(counter)}")
        spark.conf.set("spark.sql.shuffle.partitions", "4")
        spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
        df = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", rows_per_batch)
              .option("numPartitions", 1).option("startTimestamp", DEMO_START_MS)
              .option("advanceMillisPerBatch", 1000).load()
              .select(F.concat(F.lit("evt-"), (F.col("value") / 2).cast("long").cast("string"))
                      .alias("event_id"),
                      F.concat(F.lit("user-"), (F.col("value") % 5).cast("string"))
                      .alias("user_id"),
                      (F.col("value") % 100).cast("double").alias("amount"),
                      F.col("timestamp").alias("event_time"))
              .withWatermark("event_time", "5 seconds")
              .dropDuplicates(["event_id", "event_time"]))
        for _ in range(er.BENCH_BATCHES):
            query = (df.writeStream.format("noop").outputMode("append")
                     .option("checkpointLocation", path).trigger(availableNow=True).start())
            query.awaitTermination()

    results = [ctx.side_by_side(
        f"measure one provider ({ROWS:,} state rows, {er.BENCH_BATCHES} batches) vs the bare query",
        runbook, bare, target=1.5, repeats=3)]

    plan = er.plan(spark, "auto")
    measurements = er.measure_providers(spark, str(ctx.folder / "big"), BIG_ROWS, plan)
    print(er.benchmark_table(measurements).to_string(), flush=True)
    for line in er.benchmark_verdict(measurements):
        print(f"  {line}", flush=True)
    by = {m.provider: m for m in measurements}
    hdfs = by["hdfs"]
    for name in ("rocksdb", "rocksdb_changelog"):
        m = by[name]
        for field, unit in (("heap_bytes", "x of hdfs heap retained"),
                            ("memory_bytes", "x of hdfs memoryUsedBytes"),
                            ("disk_bytes", "x of hdfs bytes on disk"),
                            ("batch_ms", "x of hdfs batch time"),
                            ("commit_ms", "x of hdfs commit time")):
            ours, theirs = getattr(m, field), getattr(hdfs, field)
            if ours is not None and theirs:
                results.append(ctx.report(f"{name} at {BIG_ROWS:,} rows: {field}",
                                          round(ours / theirs, 3), unit))
    return results
