"""01_enable_rocksdb: the cost of measuring, HDFS vs RocksDB at 1,000,000 state rows, and the
whole notebook on production-shape checkpoints.

1. One provider measured by the runbook (the demo query plus heap after GC, progress metrics and a
   listing of the state files) next to the bare streaming query it wraps, on 200,000 state rows.
   The target allows 1.5x: a heap figure costs two full GCs and closing the cached state stores.
2. The notebook's side-by-side at the size the README recommends for a meaningful run
   (``benchmark_rows=1000000``): the figures a reader would see, as ratios to the HDFS provider.
3. Production shape (200 partitions, 100+ retained batches; built once by ``production_shape.py``):
   the whole notebook under papermill with ``checkpoint_path`` against a bare process answering the
   same question: which provider the checkpoint's query runs (the newest offsets entry's pinned
   conf) and whether RocksDB with changelog checkpointing is in effect (the state files listed,
   the newest version's kinds).
"""
from __future__ import annotations

import itertools
import textwrap

ROWS = 200_000
BIG_ROWS = 1_000_000

# The smallest Spark work that answers 01's question on a checkpoint: the provider pinned in the
# newest offsets entry, and the kinds of file the newest state version was written as (every state
# file listed by one Hadoop glob per depth, its text fetched in one call).
BARE_PROCESS = textwrap.dedent("""
    import json, re, sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    root, jvm = sys.argv[1], spark._jvm
    Path = jvm.org.apache.hadoop.fs.Path
    fs = Path(root).getFileSystem(spark._jsc.hadoopConfiguration())

    def names(pattern):
        found = fs.globStatus(Path(root + pattern))
        paths = jvm.org.apache.hadoop.fs.FileUtil.stat2Paths(found)
        text = str(jvm.scala.collection.immutable.ArraySeq.unsafeWrapArray(paths).mkString("\\n"))
        return [p.rsplit("/", 1)[-1] for p in text.split("\\n") if p]

    newest = max(int(n) for n in names("/offsets/*") if n.isdigit())
    stream = fs.open(Path(f"{root}/offsets/{newest}"))
    conf = json.loads(str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
                      .splitlines()[1])["conf"]
    stream.close()
    files = [re.match(r"^(\\d+)\\.(delta|snapshot|zip|changelog)$", n)
             for n in names("/state/*/*/*") + names("/state/*/*/*/*")]
    versions = [(int(m.group(1)), m.group(2)) for m in files if m]
    top = max(v for v, _ in versions)
    print(conf.get("spark.sql.streaming.stateStore.providerClass"), top,
          sorted({k for v, k in versions if v == top}), len(versions))
""")


def at_production_shape(ctx) -> list[dict]:
    results = []
    for name, path in ctx.production_shapes():
        result = ctx.notebook_vs_process(
            f"[production shape: {name}] whole 01 notebook on the checkpoint under papermill vs a "
            "bare process reading the pinned provider and listing the state files",
            "01_enable_rocksdb", {"checkpoint_path": path}, BARE_PROCESS, [path],
            repeats=min(ctx.repeats, 2))
        result["shape"] = name
        results.append(result)
    return results


def bench(ctx) -> list[dict]:
    from pyspark.sql import functions as F

    from state_runbooks.demos.checkpoints import DEMO_START_MS
    from state_runbooks.runbooks import enable_rocksdb as er

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
    return results + at_production_shape(ctx)
