"""03_inspect_state at two shapes: demo scale (about 1,000,000 rows of a deduplication on 8
partitions) and production shape (Spark's defaults: 200 partitions, 100+ retained batches; built once
by ``production_shape.py``, skipped with a line saying how to build it when missing).

Per shape: the whole notebook under papermill against a bare process counting the state's rows per
partition; 03's per-store figures against one raw scan of each store; and what the library's steps
cost in JVM calls (Python to JVM round trips) and listing calls.
"""
from __future__ import annotations

import textwrap
import time

import production_shape  # beside this file, not a package

# The smallest Spark work that answers 03's question: rows per partition of every store.
BARE_PROCESS = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    for store in sys.argv[2:]:
        rows = (spark.read.format("statestore").option("storeName", store).load(sys.argv[1])
                .groupBy("partition_id").count().collect())
        print(store, sum(r["count"] for r in rows))
""")
# A scan under a couple of seconds moves by a fifth between runs (GC, the other core's work): the
# per-store comparison then takes more repeats, so that its medians hold still.
SHORT_SCAN_SECONDS, SHORT_SCAN_REPEATS = 2.0, 7


class CallCounter:
    """Python-to-JVM round trips (py4j commands) and listing calls of the file access layer (a
    folder's ``listStatus``, or one depth level of a walk, which lists all its folders in one
    call), while a block runs."""

    def __enter__(self):
        from py4j.java_gateway import GatewayClient

        from state_runbooks.core.fs.hadoop import HadoopFS
        self.jvm_calls = self.listings = 0
        self._patched = [(GatewayClient, "send_command"), (HadoopFS, "_statuses")]
        self._originals = [getattr(cls, name) for cls, name in self._patched]
        send, listing = self._originals

        def counted_send(client, *args, **kwargs):
            self.jvm_calls += 1
            return send(client, *args, **kwargs)

        def counted_listing(fs, *args, **kwargs):
            self.listings += 1
            return listing(fs, *args, **kwargs)

        GatewayClient.send_command, HadoopFS._statuses = counted_send, counted_listing
        return self

    def __exit__(self, *exc):
        for (cls, name), original in zip(self._patched, self._originals):
            setattr(cls, name, original)


def _library_steps(spark, path: str):
    """What the notebook's cells call, in order (the plots and the demo-only step aside)."""
    from state_runbooks.core import growth as state_growth
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.runbooks import inspect_state

    times = {}

    def step(name, fn):
        start = time.perf_counter()
        result = fn()
        times[name] = time.perf_counter() - start
        return result

    ckpt = step("open", lambda: Checkpoint(spark, path))
    step("operators", lambda: (inspect_state.operators_table(ckpt),
                               inspect_state.operator_lines(ckpt),
                               inspect_state.units_table(ckpt),
                               inspect_state.retention_check(ckpt)))
    reports = step("per-store figures", lambda: inspect_state.inspect_stores(ckpt))
    table = step("growth", lambda: state_growth.growth(ckpt, reports=reports))
    step("checklist", lambda: inspect_state.production_checklist(ckpt, reports, table))
    return times, reports


def _raw_scans(spark, root: str, stores: list[str]) -> int:
    return sum(spark.read.format("statestore").option("storeName", s).load(root).count()
               for s in stores)


def _at_shape(ctx, shape: str, path: str, repeats: int) -> list[dict]:
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.runbooks import inspect_state
    ckpt = Checkpoint(ctx.spark, path)
    stores = sorted({s.store_name for s in ckpt.stores()})
    files = len(ckpt.state_files())
    lo, hi = ckpt.retained_batch_range()
    parts = max(s.num_partitions for s in ckpt.stores())
    print(f"{shape}: {parts} partitions, stores {', '.join(stores)}, retained batches {lo}..{hi}, "
          f"{files:,} state files", flush=True)
    with CallCounter() as counted:
        times, reports = _library_steps(ctx.spark, path)
    rows = sum(r.rows or 0 for r in reports)
    print(f"{shape}: {rows:,} state rows; library steps: "
          + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()), flush=True)
    start = time.perf_counter()
    _raw_scans(ctx.spark, ckpt.root, stores)
    raw = time.perf_counter() - start
    results = [
        ctx.report(f"[{shape}] JVM calls of 03's steps ({files:,} state files)",
                   counted.jvm_calls, "py4j calls"),
        ctx.report(f"[{shape}] listing calls of 03's steps", counted.listings, "listings"),
        ctx.report(f"[{shape}] growth step / one raw scan of every store",
                   round(times["growth"] / raw, 2), "x"),
        ctx.side_by_side(
            f"[{shape}] per-store figures (rows, bytes, partitions, expiry) vs one raw scan",
            lambda: inspect_state.inspect_stores(ckpt),
            lambda: _raw_scans(ctx.spark, ckpt.root, stores), target=1.3,
            repeats=max(repeats, SHORT_SCAN_REPEATS) if raw < SHORT_SCAN_SECONDS else repeats),
        ctx.notebook_vs_process(
            f"[{shape}] whole 03 notebook under papermill vs a bare process counting rows per "
            "partition", "03_inspect_state", {"checkpoint_path": path},
            BARE_PROCESS, [path, *stores], repeats=repeats),
    ]
    for r in results:
        r["shape"] = shape
    return results


def bench(ctx) -> list[dict]:
    from state_runbooks.demos.checkpoints import build_demo_checkpoint

    results = []
    if ctx.demo_scale:
        # Two batches of 1,000,000 events, each id twice: 1,000,000 distinct ids in the state.
        run = build_demo_checkpoint(ctx.spark, "dedup", str(ctx.folder / "dedup"), batches=2,
                                    rows_per_batch=1_000_000, partitions=8)
        results = _at_shape(ctx, "demo scale: dedup, HDFS, 8 partitions, 2 batches",
                            run.checkpoint_path, min(ctx.repeats, 3))
    for name, path in ctx.production_shapes():
        results += _at_shape(ctx, f"{production_shape.kind(name)}: {name}", path,
                             min(ctx.repeats, 2))
    return results
