"""04_diagnose_join_mismatch at two shapes: demo scale (a join state of about 500,000 rows per side
on 8 partitions) and production shape (a stream-stream join on 200 partitions, four stores, RocksDB
with changelog checkpointing; built once by ``production_shape.py``). At both, the whole notebook
under papermill against a bare process (the target); at demo scale also the classification in one
warmed process (context: where the notebook's time goes).

The runbook classifies every key from its history: the change feed of both sides, read in one pass,
whose last change per slot is also the state of the diagnosed batch. The bare side is the commonly published approach: the two
``keyWithIndexToValue`` stores of that batch, full-outer-joined on the key and classified by
``matched`` and presence.
"""
from __future__ import annotations

import inspect
import textwrap
import time

ROWS_PER_BATCH = 80_000
BATCHES = 8  # the demo's eviction horizon: the first batch's unmatched rows are evicted at batch 7
PRODUCTION_SHAPES = ("join-rocksdb_changelog",)


def bare_outer_join(spark, root: str, batch: int) -> dict:
    from pyspark.sql import functions as F

    def side(name):
        return (spark.read.format("statestore").option("storeName", f"{name}-keyWithIndexToValue")
                .option("batchId", batch).load(root))

    left, right = side("left"), side("right")
    joined = left.join(right, left["key.field0"] == right["key.field0"], "full_outer").select(
        left["key.field0"].alias("left_key"), left["value"].alias("left_value"),
        right["key.field0"].alias("right_key"), right["value"].alias("right_value"))
    category = (F.when(F.col("left_value.matched"), "joined")
                .when(F.col("right_key").isNull(), "waiting_for_right")
                .when(F.col("left_key").isNull(), "waiting_for_left")
                .otherwise("outside_time_bounds"))
    return {r[0]: r[1] for r in joined.groupBy(category).count().collect()}


# The same as a process of its own: a session, the outer join at the given batch, the counts.
BARE_PROCESS = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
""") + inspect.getsource(bare_outer_join) + textwrap.dedent("""
    print(bare_outer_join(spark, sys.argv[1], int(sys.argv[2])))
""")


def _whole_notebook(ctx, shape: str, path: str, repeats: int) -> list[dict]:
    from state_runbooks.core.checkpoint import Checkpoint
    ckpt = Checkpoint(ctx.spark, path)
    batch = ckpt.resolve_batch()
    lo, hi = ckpt.retained_batch_range()
    parts = max(s.num_partitions for s in ckpt.stores())
    print(f"{shape}: {parts} partitions, stores "
          f"{', '.join(sorted(s.store_name for s in ckpt.stores()))}, retained batches {lo}..{hi}, "
          f"{len(ckpt.state_files()):,} state files", flush=True)
    result = ctx.notebook_vs_process(
        f"[{shape}] whole 04 notebook under papermill (time bounds read from the checkpoint) vs a "
        "bare process outer-joining the two sides at the batch", "04_diagnose_join_mismatch",
        {"checkpoint_path": path}, BARE_PROCESS, [path, str(batch)], repeats=repeats)
    result["shape"] = shape
    return [result]


def bench(ctx) -> list[dict]:
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.core.state_reader import read_state
    from state_runbooks.demos.checkpoints import (
        JOIN_LOWER_BOUND_SECONDS,
        JOIN_UPPER_BOUND_SECONDS,
        build_demo_checkpoint,
    )
    from state_runbooks.runbooks import diagnose_join_mismatch as jd

    # The HDFS-backed provider keeps the last versions of all four stores in JVM memory while the
    # query runs; at this size that overflows a 2 GB driver. The files written are the same.
    run = build_demo_checkpoint(ctx.spark, "join", str(ctx.folder / "join"), batches=BATCHES,
                                rows_per_batch=ROWS_PER_BATCH, partitions=8,
                                extra_conf={"spark.sql.streaming.maxBatchesToRetainInMemory": "0"})
    ckpt = Checkpoint(ctx.spark, run.checkpoint_path)
    batch = ckpt.resolve_batch()
    rows = {s: read_state(ckpt, 0, f"{s}-keyWithIndexToValue", batch).count()
            for s in ("left", "right")}
    print(f"checkpoint: {rows['left']:,} left and {rows['right']:,} right rows at batch {batch}, "
          "8 partitions, HDFS-backed provider", flush=True)

    def runbook():
        # A new Checkpoint each time: the keys' history is kept per checkpoint object, and the
        # comparison is of one whole diagnosis against one outer join.
        fresh = Checkpoint(ctx.spark, run.checkpoint_path)
        spec = jd.resolve_join(fresh, batch_id=batch,
                               lower_bound_seconds=JOIN_LOWER_BOUND_SECONDS,
                               upper_bound_seconds=JOIN_UPPER_BOUND_SECONDS)
        return jd.diagnose(fresh, spec, batch).counts

    counts = runbook()
    print("categories: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()), flush=True)
    start = time.perf_counter()
    spec = jd.resolve_join(Checkpoint(ctx.spark, run.checkpoint_path), batch_id=batch)
    seconds = time.perf_counter() - start
    print(f"bounds read from the checkpoint: {spec.lower_bound_seconds:g} s and "
          f"{spec.upper_bound_seconds:g} s in {seconds:.1f} s", flush=True)
    results = [
        ctx.report("time bounds read from the watermark's evictions", seconds, "s"),
        ctx.side_by_side(
            "classify every key (change feed of both sides) vs bare outer join of the two "
            "stores at the batch",
            runbook, lambda: bare_outer_join(ctx.spark, ckpt.root, batch), target=None),
        ctx.report("join keys classified", sum(counts.values()), "keys"),
        *_whole_notebook(ctx, "demo scale", run.checkpoint_path, ctx.repeats),
    ]
    for name, path in ctx.production_shapes(*PRODUCTION_SHAPES):
        results += _whole_notebook(ctx, f"production shape: {name}", path, min(ctx.repeats, 2))
    return results
