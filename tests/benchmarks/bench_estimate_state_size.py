"""02_estimate_state_size: the estimator's error against memoryUsedBytes from 10,000 to 1,000,000
rows on each demo workload (HDFS-backed provider), and the cost of a measurement.

The demo queries start once per batch (availableNow), as the runbook's demo does; one
deduplication also runs as a single continuous query, whose two kept versions share their table
length, to show the estimator follows that case too. Errors are printed as measured; no test asserts
a time.
"""
from __future__ import annotations

import time

SIZES = (10_000, 100_000, 1_000_000)


def _run_continuously(spark, workload: str, path: str, rows_per_batch: int, batches: int) -> dict:
    """Run a demo query as one continuous query until it has committed ``batches`` batches; return
    the last batch's progress."""
    from state_runbooks.demo import demo_query, provider_conf
    from state_runbooks.session import session_conf

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
    from state_runbooks import sizing
    from state_runbooks.checkpoint import Checkpoint
    from state_runbooks.demo import build_demo_checkpoint

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
    return results
