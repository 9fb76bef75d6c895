"""07_repartition_state: the runbook's apply against the bare Spark call it wraps.

At demo scale (a windowed aggregation with many users: RocksDB, 8 partitions, 5 batches of 4,000
events, repartitioned to 16) and on the RocksDB production shapes, each run on its own copy of the
checkpoint (copied before the clock starts; never the shape itself):

- the whole notebook applying (``dry_run=False``: the requirements checked, one scan per store with
  the forecast and a checksum of every row, the journal and metadata copies, Spark's call, the
  verification scan) under papermill against a bare process making Spark's call, and against one
  that also compares each store's row count and checksum before and after (the least Spark work
  that shows what the apply shows: nothing lost; the target, the first is context).
  ``force=True``: a demo checkpoint just written looks active (the check still runs);
- the same steps called from the library in one warmed process against
  ``spark._streamingCheckpointManager.repartition`` there, with where the apply's time went (its
  steps, timed by the library), what the backup copied and journaled, and the JVM calls and
  listing calls the steps made (context).

At the production shape (Spark's defaults: 200 partitions, 100+ retained batches; built once by
``production_shape.py``, skipped with a line saying how to build it when missing) also the whole
notebook in its default dry run (``num_partitions=0``: what twice the partitions would do) under
papermill against a bare process reading each store at the newest batch and counting its rows by
the partition Spark would place them in on twice the count.
"""
from __future__ import annotations

import shutil
import textwrap
import time
from pathlib import Path

import production_shape  # beside this file, not a package

BATCHES, ROWS, BEFORE, AFTER = 5, 4000, 8, 16
PRODUCTION_SHAPES = ("dedup-rocksdb_changelog", "dedup-hdfs",
                     "window_agg_many_users-rocksdb_changelog", "join-rocksdb_changelog",
                     *production_shape.YOUNG)
# The smallest Spark work that answers 07's dry run: per store, rows per partition on the new
# count, each row where Spark would place it (pmod of the murmur3 hash of its partitioning key:
# the key, or for a join's keyWithIndexToValue the key without its index; repartition/forecast.py).
BARE_FORECAST = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession, functions as F
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    root, new_count = sys.argv[1], int(sys.argv[2])
    for store in sys.argv[3:]:
        df = spark.read.format("statestore").option("storeName", store).load(root)
        key = F.col("key")
        if store.endswith("keyWithIndexToValue"):
            fields = df.schema["key"].dataType.fieldNames()
            key = F.struct(*[F.col("key")[f] for f in fields[:-1]])
        rows = df.groupBy(F.pmod(F.hash(key), F.lit(new_count)).alias("p")).count().collect()
        print(store, sum(r["count"] for r in rows))
""")
# The bare side of the notebook's apply: Spark's repartition call, in a process of its own.
BARE_APPLY = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark._streamingCheckpointManager.repartition(sys.argv[1], int(sys.argv[2]), True)
""")
# The least Spark work that answers what the notebook's apply answers (repartitioned, and no row
# lost or changed): each store's row count and a checksum of its keys and values before and after
# Spark's call, compared.
BARE_APPLY_CHECKED = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession, functions as F
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    root, new_count, stores = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

    def rows():
        return [spark.read.format("statestore").option("storeName", store).load(root)
                .select(F.count(F.lit(1)), F.sum(F.xxhash64("key", "value").cast("decimal(20,0)")))
                .first() for store in stores]

    before = rows()
    spark._streamingCheckpointManager.repartition(root, new_count, True)
    assert rows() == before
""")


def bench(ctx) -> list[dict]:
    from state_runbooks.demos.checkpoints import build_demo_checkpoint

    results = []
    if ctx.demo_scale:
        start = time.perf_counter()
        run = build_demo_checkpoint(ctx.spark, "window_agg_many_users", str(ctx.folder / "agg"),
                                    batches=BATCHES, provider="rocksdb", rows_per_batch=ROWS,
                                    partitions=BEFORE)
        print(f"checkpoint: {BATCHES} batches written in {time.perf_counter() - start:.0f} s",
              flush=True)
        results = _apply(ctx, "demo scale", run.checkpoint_path.removeprefix("file:"), BEFORE,
                         AFTER, ctx.repeats)
    for name, path in ctx.production_shapes(*PRODUCTION_SHAPES):
        results += _at_production_shape(ctx, name, path, min(ctx.repeats, 2))
    return results


def _at_production_shape(ctx, name: str, path: str, repeats: int) -> list[dict]:
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.runbooks.repartition_state.checks import current_partitions

    ckpt = Checkpoint(ctx.spark, path)
    stores = sorted({s.store_name for s in ckpt.stores()})
    before = current_partitions(ckpt)
    shape = f"{production_shape.kind(name)}: {name}"
    results = [ctx.notebook_vs_process(
        f"[{shape}] whole 07 notebook, dry run ({before} -> {2 * before} partitions forecast) "
        "under papermill vs a bare process counting each store's rows by their partition on the "
        "new count", "07_repartition_state", {"checkpoint_path": path}, BARE_FORECAST,
        [path, str(2 * before), *stores], repeats=repeats)]
    if ckpt.provider_kind == "rocksdb":
        results += _apply(ctx, shape, path, before, 2 * before, repeats)
    for r in results:
        r["shape"] = shape
    return results


class Copies:
    """Copies of a checkpoint for runs that repartition it: each run its own, made before the
    clock starts; each one used is checked to hold the new batch, then all are removed."""

    def __init__(self, ctx, path: str):
        self.ctx, self.path, self.used = ctx, path, []
        self.last = _checkpoint(ctx, path).last_committed_batch_id
        self._numbers = iter(range(10_000))

    def made(self, runs: int) -> dict[str, list[str]]:
        return {side: [self._fresh() for _ in range(runs)] for side in ("runbook", "bare")}

    def _fresh(self) -> str:
        target = self.ctx.folder / f"repartition-copy-{next(self._numbers)}"
        shutil.copytree(self.path, target)
        return str(target)

    def take(self, queue: list[str]) -> str:
        self.used.append(queue.pop())
        return self.used[-1]

    def all_repartitioned(self) -> None:
        for copy in self.used:
            assert (Path(copy) / "commits" / str(self.last + 1)).is_file(), f"{copy}: no new batch"
        self.used.clear()
        for copy in self.ctx.folder.glob("repartition-copy-*"):
            shutil.rmtree(copy, ignore_errors=True)


def _apply(ctx, shape: str, path: str, before: int, after: int, repeats: int) -> list[dict]:
    """The apply on copies of the checkpoint: the whole notebook against a bare process making
    Spark's call, and against one that also checks each store's rows before and after (the least
    that shows nothing was lost, which the notebook shows); then the library's steps against the
    bare call in one warmed process (no session start on either side), with where the time
    went."""
    copies = Copies(ctx, path)
    stores = sorted({s.store_name for s in _checkpoint(ctx, path).stores()})
    return [_whole_notebook(ctx, copies, shape, before, after, repeats, BARE_APPLY,
                            "making Spark's call", [], target=None),
            _whole_notebook(ctx, copies, shape, before, after, repeats, BARE_APPLY_CHECKED,
                            "making Spark's call with each store's row count and checksum "
                            "before and after, compared", stores),
            *_library_steps(ctx, copies, shape, before, after, repeats)]


def _checkpoint(ctx, path: str):
    from state_runbooks.core.checkpoint import Checkpoint
    return Checkpoint(ctx.spark, path)


def _whole_notebook(ctx, copies: Copies, shape: str, before: int, after: int, repeats: int,
                    bare_script: str, bare_side: str, more_args: list[str],
                    target: float | None = 1.5) -> dict:
    pending = copies.made(repeats)
    result = ctx.notebook_vs_process(
        f"[{shape}] whole 07 notebook applying {before} -> {after} partitions (checks, forecast, "
        f"backup, Spark's call, verification) under papermill vs a bare process {bare_side}, "
        "each on its own copy", "07_repartition_state",
        lambda: {"checkpoint_path": copies.take(pending["runbook"]), "num_partitions": after,
                 "dry_run": False, "force": True},
        bare_script, lambda: [copies.take(pending["bare"]), str(after), *more_args],
        target=target, repeats=repeats)
    copies.all_repartitioned()
    return result


def _library_steps(ctx, copies: Copies, shape: str, before: int, after: int,
                   repeats: int) -> list[dict]:
    from bench_inspect_state import CallCounter  # beside this file

    from state_runbooks.runbooks import repartition_state as rp
    from state_runbooks.runbooks.repartition_state.forecast import scan_state
    from state_runbooks.safety.safekeeping import read_journal

    pending = copies.made(1 + repeats)  # the warm-up and the timed runs
    outcomes, steps, calls = [], [], []

    def runbook():
        with CallCounter() as counted:
            start = time.perf_counter()
            ckpt = _checkpoint(ctx, copies.take(pending["runbook"]))
            checks = rp.check_requirements(ckpt, after, force=True)
            checked = time.perf_counter()
            scans = scan_state(ckpt, ckpt.last_committed_batch_id, before, after)
            scanned = time.perf_counter()
            out = rp.repartition(ckpt, after, dry_run=False, force=True, checks=checks,
                                 before=scans, backup_dir=ckpt.root + ".backup")
        assert out.verified and out.rows_equal, out.lines
        outcomes.append(out)
        calls.append(counted)
        steps.append({"checks": checked - start, "scan before": scanned - checked,
                      **out.seconds})

    def bare():
        ctx.spark._streamingCheckpointManager.repartition(copies.take(pending["bare"]), after,
                                                          True)

    results = [ctx.side_by_side(
        f"[{shape}] repartition {before} -> {after} partitions, the library's steps (checks, the "
        "scan before, backup, Spark's call, verification) vs the bare Spark call, in one warmed "
        "process, each on its own copy", runbook, bare, target=None, repeats=repeats)]
    print_steps(steps[-1])
    backup = outcomes[-1].backup_dir.removeprefix("file:")
    files = [p for p in Path(backup).rglob("*") if p.is_file()]
    results.append(ctx.report(f"[{shape}] the apply's backup folder (journal and copies)",
                              len(files), f"files, {sum(p.stat().st_size for p in files):,} bytes"))
    journal = read_journal(ctx.spark, outcomes[-1].journal_path, rp.REPARTITION)
    journaled = len(journal["manifest"])
    results += [ctx.report(f"[{shape}] JVM calls of 07's steps, the apply included ({journaled:,} "
                           "files journaled)", calls[-1].jvm_calls, "py4j calls"),
                ctx.report(f"[{shape}] listing calls of 07's steps", calls[-1].listings,
                           "listings")]
    copies.all_repartitioned()
    return results


def print_steps(seconds: dict) -> None:
    print("    where the apply's time went (last run): "
          + ", ".join(f"{step} {s:.1f} s" for step, s in seconds.items()), flush=True)
