"""05_recover_corrupted_state: diagnose 200 retained batches with a fault in the middle.

The checkpoint: a deduplication (2 partitions, HDFS-backed provider) run for 200 micro-batches,
keeping every version (``minBatchesToRetain`` 1000) and writing no snapshots
(``minDeltasForSnapshot`` 100000), so that each version is rebuilt from all the deltas before it
and a delta cut in half in the middle breaks every later batch. Diagnose is measured twice: with
the ``.crc`` sidecar of the broken file (local file systems: the files point at the answer) and
without it (as on object stores, where only Spark's loads see the damage: the bisection finds the
batch, single-version change feed reads the file). The baseline loads every retained batch, one Spark job each, as ``load_batch`` does.
The linear scan takes minutes, so it runs once; the diagnoses run three times.

Production shape (200 partitions, 100+ retained batches; built once by ``production_shape.py``): the
whole notebook in its default mode (diagnose, a dry run) on a healthy checkpoint under papermill,
against a bare process asking the same question: can Spark load every store's state at the newest
batch (a ``statestore`` count of every store at the last committed batch). What diagnose costs in
Spark loads, JVM calls and listing calls is reported too, and the checkpoint's files are checked
to be byte for byte the same after all runs.
"""
from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

import production_shape  # beside this file, not a package

# The smallest Spark work that answers 05's question on a healthy checkpoint: every store loads at
# the last committed batch (the reader's default batch).
BARE_PROCESS = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    for store in sys.argv[2:]:
        print(store, spark.read.format("statestore").option("storeName", store)
              .load(sys.argv[1]).count())
""")
PRODUCTION_SHAPES = ("dedup-rocksdb_changelog", "dedup-hdfs",
                     "window_agg_many_users-rocksdb_changelog", "window_agg_many_users-hdfs",
                     "join-rocksdb_changelog", *production_shape.YOUNG)

BATCHES = 200
MIDDLE_VERSION = 101  # written by batch 100: batches 100..199 do not load, 99 is the last good


def at_production_shape(ctx) -> list[dict]:
    from bench_inspect_state import CallCounter  # beside this file

    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.runbooks import recover_corrupted_state as recovery

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from checkpoint_trees import tree_sha  # tests/

    results = []
    for name, path in ctx.production_shapes(*PRODUCTION_SHAPES):
        before = tree_sha(path)
        ckpt = Checkpoint(ctx.spark, path)
        stores = sorted({s.store_name for s in ckpt.stores()})
        with CallCounter() as counted:
            start = time.perf_counter()
            diag = recovery.diagnose(ckpt)
            seconds = time.perf_counter() - start
        print(f"{name}: {diag.verdict()}", flush=True)  # a healthy checkpoint: nothing broken
        print(f"{name}: {diag.files_checked:,} files; diagnose in this process {seconds:.1f} s; "
              f"{diag.content_checked:,} files' bytes compared with their sidecars", flush=True)
        results += [
            ctx.report(f"[{name}] diagnose: state loads (Spark jobs)", diag.loads, "loads"),
            ctx.report(f"[{name}] diagnose: JVM calls", counted.jvm_calls, "py4j calls"),
            ctx.report(f"[{name}] diagnose: listing calls", counted.listings, "listings"),
            ctx.notebook_vs_process(
                f"[{production_shape.kind(name)}: {name}] whole 05 notebook (diagnose) under "
                "papermill vs a bare process loading every store at the last committed batch",
                "05_recover_corrupted_state",
                {"checkpoint_path": path}, BARE_PROCESS, [path, *stores],
                repeats=min(ctx.repeats, 2)),
        ]
        assert tree_sha(path) == before, f"{name}: diagnose changed the checkpoint"
        for r in results[-4:]:
            r["shape"] = name
    return results


def bench(ctx) -> list[dict]:
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.core.fs import open_fs
    from state_runbooks.demos.checkpoints import build_demo_checkpoint
    from state_runbooks.runbooks import recover_corrupted_state as recovery

    if not ctx.demo_scale:
        return at_production_shape(ctx)
    start = time.perf_counter()
    run = build_demo_checkpoint(
        ctx.spark, "dedup", str(ctx.folder / "dedup-200"), batches=BATCHES, rows_per_batch=10,
        partitions=2, extra_conf={"spark.sql.streaming.minBatchesToRetain": "1000",
                                  "spark.sql.streaming.stateStore.minDeltasForSnapshot": "100000"})
    print(f"checkpoint: {BATCHES} batches written in {time.perf_counter() - start:.0f} s",
          flush=True)
    ckpt = Checkpoint(ctx.spark, run.checkpoint_path)
    raw = open_fs(ctx.spark, run.checkpoint_path).raw()
    broken = f"state/0/0/{MIDDLE_VERSION}.delta"
    data = raw.read_bytes(broken)
    raw.write_bytes(broken, data[: len(data) // 2], overwrite=True)
    assert ckpt.refresh().retained_batch_range() == (0, BATCHES - 1)

    results = []
    diag = recovery.diagnose(ckpt)  # also warms the JVM up for both sides
    assert diag.last_good_batch_id == MIDDLE_VERSION - 2, recovery.bisection_lines(diag)
    results.append(ctx.report("with .crc sidecars: state loads (Spark jobs) to find the last good "
                              "batch", diag.loads, "loads", "<= 10"))
    with_sidecar = ctx.side_by_side(
        f"diagnose with .crc sidecars ({diag.loads} loads) vs loading all {BATCHES} batches",
        lambda: recovery.diagnose(ckpt), lambda: recovery.linear_scan(ckpt),
        target=0.1, warm_up=False, repeats=1)

    aside = open_fs(ctx.spark, str(ctx.folder / "aside")).raw()
    raw.move_to(f"state/0/0/.{MIDDLE_VERSION}.delta.crc", aside, f"{MIDDLE_VERSION}.delta.crc")
    blind = recovery.diagnose(ckpt.refresh())
    assert blind.last_good_batch_id == MIDDLE_VERSION - 2, recovery.bisection_lines(blind)
    results.append(ctx.report("without the sidecar (object stores): state loads, bisection",
                              blind.loads, "loads", "<= 10"))
    named = [p for p in blind.problems if p.path == broken]
    results.append(ctx.report("without the sidecar: the broken file named by Spark's own loads",
                              int(bool(named)), "named", "== 1"))
    linear_s = with_sidecar["bare_s"]
    times = sorted(ctx_time(lambda: recovery.diagnose(ckpt)) for _ in range(ctx.repeats))
    median = times[len(times) // 2]
    ratio = median / linear_s
    print(f"diagnose without sidecars ({blind.loads} loads) vs loading all {BATCHES} batches\n"
          f"    runbook {median:7.2f} s   bare {linear_s:7.2f} s   ratio {ratio:5.2f}x   "
          f"(target <= 0.1x: {'within' if ratio <= 0.1 else 'OVER'})", flush=True)
    results.append({"label": "diagnose without sidecars vs linear scan", "runbook_s": median,
                    "bare_s": linear_s, "ratio": ratio, "target": 0.1})
    return results + [with_sidecar] + at_production_shape(ctx)


def ctx_time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
