"""02_estimate_state_size: the estimator's error against memoryUsedBytes from 10,000 to 1,000,000
rows on each demo workload (HDFS-backed provider), and the cost of a measurement.

The demo queries start once per batch (availableNow), as the runbook's demo does; one
deduplication also runs as a single continuous query, whose two kept versions share their table
length, to show the estimator follows that case too. Errors are printed as measured; no test asserts
a time.

On the sweep's 1,000,000-row deduplication and at the production shape (Spark's defaults: 200
partitions, 100+ retained batches; built once by ``production_shape.py``, skipped with a line
saying how to build it when missing): the whole notebook under papermill on the checkpoint against two bare processes: one counting rows per
partition of every store at the newest batch and the bytes of the state files (03's question:
context), and one that also counts them at the two batches before, which the memory estimate reads
(02's own question, still without splitting the changes into keys added, replaced and removed: the
target), the notebook's cell times, and the library's steps timed in one process, with and
without the growth step (``state_growth.growth``), against the first bare work (context).
"""
from __future__ import annotations

import textwrap
import time

import production_shape  # beside this file, not a package

SIZES = (10_000, 100_000, 1_000_000)
PRODUCTION_SHAPES = ("dedup-rocksdb_changelog", "dedup-hdfs",
                     "window_agg_many_users-rocksdb_changelog", "window_agg_many_users-hdfs",
                     "join-rocksdb_changelog", *production_shape.YOUNG)
# 03's question, narrower than 02's (context): rows per partition of every store at the newest
# batch, and the bytes its state files hold (one content summary of state/).
BARE_PROCESS = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    root = sys.argv[1]
    for store in sys.argv[2:]:
        rows = (spark.read.format("statestore").option("storeName", store).load(root)
                .groupBy("partition_id").count().collect())
        print(store, sum(r["count"] for r in rows))
    state = spark._jvm.org.apache.hadoop.fs.Path(root + "/state")
    summary = state.getFileSystem(spark._jsc.hadoopConfiguration()).getContentSummary(state)
    print("state files", summary.getFileCount(), "bytes", summary.getLength())
""")
# The smallest Spark work that answers 02's question (the target): the same, with the rows per
# partition the memory estimate also reads at the two batches before the newest, where retained
# (the versions the HDFS-backed provider keeps and copies from). Still less than 02 computes (it
# also splits each batch's changes into keys added, replaced and removed).
BARE_PROCESS_THREE_BATCHES = BARE_PROCESS.replace("""for store in sys.argv[2:]:
    rows = (spark.read.format("statestore").option("storeName", store).load(root)
            .groupBy("partition_id").count().collect())
    print(store, sum(r["count"] for r in rows))
""", """first, last = int(sys.argv[2]), int(sys.argv[3])  # the retained batches
for store in sys.argv[4:]:
    for batch in range(last, max(first, last - 2) - 1, -1):
        rows = (spark.read.format("statestore").option("storeName", store)
                .option("batchId", batch).load(root).groupBy("partition_id").count().collect())
        print(store, batch, sum(r["count"] for r in rows))
""")
assert BARE_PROCESS_THREE_BATCHES != BARE_PROCESS


def _run_continuously(spark, workload: str, path: str, rows_per_batch: int, batches: int) -> dict:
    """Run a demo query as one continuous query until it has committed ``batches`` batches; return
    the last batch's progress."""
    from state_runbooks.demos.checkpoints import demo_query, provider_conf
    from state_runbooks.session.spark_session import session_conf

    conf = {"spark.sql.shuffle.partitions": "4",
            "spark.sql.streaming.noDataMicroBatches.enabled": "false", **provider_conf("hdfs")}
    with session_conf(spark, conf):
        query = (demo_query(spark, workload, rows_per_batch).writeStream.format("noop")
                 .outputMode("append").option("checkpointLocation", path).start())
        while not (query.lastProgress and query.lastProgress["batchId"] >= batches - 1):
            time.sleep(0.2)
        query.stop()
    return query.lastProgress


def bench(ctx) -> list[dict]:
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.demos.checkpoints import build_demo_checkpoint
    from state_runbooks.runbooks import estimate_state_size as sizing

    if not ctx.demo_scale:
        return _at_shapes(ctx)
    results, errors = [], []
    for workload in sizing.COMPARED_WORKLOADS:
        for rows in SIZES:
            rows_per_batch, batches = sizing.demo_run_for_rows(workload, rows)
            run = build_demo_checkpoint(ctx.spark, workload,
                                        str(ctx.folder / f"{workload}-{rows}"), batches=batches,
                                        rows_per_batch=rows_per_batch)
            c = sizing.compare(ctx.spark, run)
            errors.append(abs(c.error))
            sigmas = (c.estimated_bytes - c.reported_bytes) / c.estimated_sd
            results.append(ctx.report(
                f"{sizing.WORKLOAD_LABELS[workload]}, {c.rows:,} rows ({c.state_rows:,} in all "
                f"stores): estimate {sizing.format_bytes(c.estimated_bytes)} vs memoryUsedBytes "
                f"{sizing.format_bytes(c.reported_bytes)} ({sigmas:+.1f} sd); rule of thumb "
                f"{c.reported_bytes / c.rule_of_thumb_bytes:.1f}x under; error", round(100 * c.error, 1),
                "%", target=f"|error| <= {sizing.ACCURACY_TARGET:.0%}"))

    # One continuous query at steady state (the watermark evicting): both kept versions are
    # copies with the same table length, so memoryUsedBytes counts shared rows once.
    path = str(ctx.folder / "dedup-continuous")
    progress = _run_continuously(ctx.spark, "dedup", path, 60_000, 10)
    ckpt = Checkpoint(ctx.spark, path)
    measured = sizing.measured_totals(sizing.measure_stores(ckpt, progress["batchId"]))
    reported = sizing.reported(progress)["memory_used_bytes"]
    error = measured.reported_bytes / reported - 1
    errors.append(abs(error))
    results.append(ctx.report(
        f"deduplication running continuously, {measured.rows:,} rows: estimate "
        f"{sizing.format_bytes(measured.reported_bytes)} vs memoryUsedBytes "
        f"{sizing.format_bytes(reported)}; error", round(100 * error, 1), "%",
        target=f"|error| <= {sizing.ACCURACY_TARGET:.0%}"))
    results.append(ctx.report("largest |error| over the sweep", round(100 * max(errors), 1), "%",
                              target=f"<= {100 * sizing.ACCURACY_TARGET:.0f} %"))

    # The cost of a measurement at 1,000,000 rows: one scan for rows and bytes, one job for the
    # earlier row counts and the change feed, against a bare count of the state.
    big = Checkpoint(ctx.spark, str(ctx.folder / "dedup-1000000"))
    results.append(ctx.side_by_side(
        "measure_stores (rows, bytes, partitions, changes) vs statestore count(), 1,000,000 rows",
        lambda: sizing.measure_stores(big, restarted_each_batch=True),
        lambda: ctx.spark.read.format("statestore").load(big.root).count(),
        target=4.0, repeats=3))
    results += _whole_notebook(ctx, "demo scale: deduplication, 1,000,000 rows, HDFS-backed",
                               big.root, ctx.repeats)
    return results + _at_shapes(ctx)


def _at_shapes(ctx) -> list[dict]:
    results = []
    for name, path in ctx.production_shapes(*PRODUCTION_SHAPES):
        results += _whole_notebook(ctx, f"{production_shape.kind(name)}: {name}", path,
                                   min(ctx.repeats, 2))
    return results


def _bare_in_process(spark, root: str, stores: list[str]) -> None:
    """BARE_PROCESS's work in this process."""
    for store in stores:
        (spark.read.format("statestore").option("storeName", store).load(root)
         .groupBy("partition_id").count().collect())
    state = spark._jvm.org.apache.hadoop.fs.Path(root + "/state")
    state.getFileSystem(spark._jsc.hadoopConfiguration()).getContentSummary(state).getLength()


def _library_steps(spark, path: str, with_growth: bool = True) -> dict:
    """What the notebook's cells call on a checkpoint (no napkin, no demo), each step timed."""
    from run import timed  # the bench harness, beside this file

    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.runbooks import estimate_state_size as sizing

    times = {}

    def step(name, fn):
        times[name], result = timed(fn)
        return result

    ckpt = step("open", lambda: Checkpoint(spark, path))
    measured = step("measure", lambda: sizing.measure_checkpoint(ckpt))
    step("tables", lambda: (sizing.stores_table(measured.stores),
                            sizing.partitions_table(measured.stores),
                            sizing.estimate_lines(measured.stores, False, ckpt.provider_kind)))
    if with_growth:
        table = step("growth", lambda: sizing.growth(ckpt, measured))
        projection = sizing.project(table, measured.stores, 100)
        step("recommendation", lambda: sizing.recommendation_lines(None, measured.stores,
                                                                  projection))
    return times


def _whole_notebook(ctx, shape: str, path: str, repeats: int) -> list[dict]:
    from state_runbooks.core.checkpoint import Checkpoint

    ckpt = Checkpoint(ctx.spark, path)
    stores = sorted({s.store_name for s in ckpt.stores()})
    lo, hi = ckpt.retained_batch_range()
    print(f"{shape}: stores {', '.join(stores)}, retained batches {lo}..{hi}, "
          f"{len(ckpt.state_files()):,} state files", flush=True)
    # Context: 03's question (the newest batch alone), narrower than the estimate's.
    results = [ctx.notebook_vs_process(
        f"[{shape}] whole 02 notebook under papermill vs a bare process counting rows per "
        "partition and summing the state files' bytes", "02_estimate_state_size",
        {"checkpoint_path": path}, BARE_PROCESS, [path, *stores], target=None, repeats=repeats)]
    results.append(ctx.notebook_vs_process(
        f"[{shape}] whole 02 notebook under papermill vs a bare process counting rows per "
        "partition at the newest batch and the two before (the batches the estimate reads) and "
        "summing the state files' bytes", "02_estimate_state_size", {"checkpoint_path": path},
        BARE_PROCESS_THREE_BATCHES, [path, str(lo), str(hi), *stores], repeats=repeats))
    for with_growth in (True, False):
        times = {}
        what = "with" if with_growth else "without"
        results.append(ctx.side_by_side(
            f"[{shape}] 02's library steps {what} the growth step vs the bare work, in one "
            "process", lambda: times.update(_library_steps(ctx.spark, path, with_growth)),
            lambda: _bare_in_process(ctx.spark, ckpt.root, stores), target=None,
            repeats=repeats))
        print("    steps: " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()), flush=True)
    for r in results:
        r["shape"] = shape
    return results
