"""09_rewrite_state: the runbook's apply against the bare Spark call it wraps.

At the production shape's partition count (Spark's default 200 partitions) on a deduplication
without a watermark (RocksDB; built here in a few batches, each run on its own copy made before the
clock starts):

- the library's apply of a drop in place (checks, the plan's counts and checksums, backup and
  journal, Spark's rewriter with the drop, the verification: each store read once and
  checksummed) against a bare call in the same warmed process: the new batch's offsets entry,
  Spark's ``StateRewriter`` with the same drop as a Python transform, the commit, and the rows
  counted before and after (the target: within 1.5x);
- the library's move to a new location against a bare rewriter call there (context: the bare side
  prepares the location's logs by hand);
- the driver's memory while applying, at two key counts (4x apart): the Python heap's peak
  (``tracemalloc``) and the driver JVM's heap in use after the apply, both flat in the number of
  keys because the rows never travel to the driver.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

PARTITIONS = 200  # the production shape: Spark's default spark.sql.shuffle.partitions
BATCHES = 3
KEYS = (20_000, 80_000)  # ids per checkpoint: batches of KEYS / BATCHES new ids
DROP = "key.id < 1000"


def _build(ctx, keys: int) -> str:
    from pyspark.sql import functions as F

    from state_runbooks.demos.checkpoints import DEMO_START_MS
    from state_runbooks.demos.continuation import continue_query
    path = str(ctx.folder / f"dedup-{keys}")
    df = (ctx.spark.readStream.format("rate-micro-batch").option("rowsPerBatch", keys // BATCHES)
          .option("startTimestamp", DEMO_START_MS).load()
          .select(F.col("value").alias("id")).dropDuplicates(["id"]))
    start = time.perf_counter()
    continue_query(ctx.spark, df, path, BATCHES, provider="rocksdb", partitions=PARTITIONS)
    print(f"checkpoint: {keys:,} keys on {PARTITIONS} partitions written in "
          f"{time.perf_counter() - start:.0f} s", flush=True)
    return path


_COPIES = iter(range(1_000_000))  # one numbering for every copy of the run


class Copies:
    def __init__(self, ctx, path: str):
        self.ctx, self.path = ctx, path

    def fresh(self) -> str:
        target = self.ctx.folder / f"rewrite-copy-{next(_COPIES)}"
        shutil.copytree(self.path, target)
        return str(target)


def _bare_drop(spark, path: str, last: int) -> tuple[int, int]:
    """What the apply does at its least: the new batch's offsets entry, Spark's rewriter with the
    drop, the commit, and the rows counted before and after."""
    from state_runbooks.safety.state_rewriter import run_rewriter
    count = spark.read.format("statestore").load(path).count()
    shutil.copy(f"{path}/offsets/{last}", f"{path}/offsets/{last + 1}")
    run_rewriter(spark, "file:" + path, last, "file:" + path, last + 1,
                 lambda raw, op, store: raw.where("NOT (partition_key.id < 1000)"))
    shutil.copy(f"{path}/commits/{last}", f"{path}/commits/{last + 1}")
    return count, spark.read.format("statestore").load(path).count()


def bench(ctx) -> list[dict]:
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.runbooks import rewrite_state as rs

    results = []
    paths = {keys: _build(ctx, keys) for keys in KEYS}
    path = paths[KEYS[0]]
    copies = Copies(ctx, path)
    last = Checkpoint(ctx.spark, path).last_committed_batch_id

    def runbook():
        copy = copies.fresh()
        out = rs.rewrite(Checkpoint(ctx.spark, copy), "", DROP, dry_run=False, force=True,
                         backup_dir=copy + ".backup")
        assert out.verified and out.rows_ok, out.lines
        steps.append(out.seconds)

    def bare():
        before, after = _bare_drop(ctx.spark, copies.fresh(), last)
        assert before - after == 1000

    steps: list = []
    results.append(ctx.side_by_side(
        f"[{PARTITIONS} partitions, {KEYS[0]:,} keys] drop in place, the library's steps (checks, "
        "plan, backup, Spark's rewriter, verification by checksums) vs the bare rewriter call with "
        "the same drop and the rows counted before and after, in one warmed process",
        runbook, bare, target=1.5, repeats=min(ctx.repeats, 3)))
    print("    where the apply's time went (last run): "
          + ", ".join(f"{k} {v:.1f} s" for k, v in steps[-1].items()), flush=True)

    def move():
        target = str(ctx.folder / f"moved-{time.perf_counter_ns()}")
        out = rs.rewrite(Checkpoint(ctx.spark, path), "", "", target, dry_run=False, force=True)
        assert out.verified, out.lines

    def bare_move():
        target = Path(ctx.folder / f"bare-moved-{time.perf_counter_ns()}")
        for folder in ("offsets", "commits"):
            shutil.copytree(f"{path}/{folder}", target / folder)
        shutil.copy(f"{path}/metadata", target / "metadata")
        for meta in Path(path).glob("state/*/**/_metadata/*"):
            dest = target / meta.relative_to(path)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(meta, dest)
        shutil.copy(f"{path}/offsets/{last}", target / "offsets" / str(last + 1))
        from state_runbooks.safety.state_rewriter import run_rewriter
        run_rewriter(ctx.spark, "file:" + path, last, "file:" + str(target), last + 1)
        shutil.copy(f"{path}/commits/{last}", target / "commits" / str(last + 1))

    results.append(ctx.side_by_side(
        f"[{PARTITIONS} partitions, {KEYS[0]:,} keys] rewrite to a new location, the library's "
        "steps vs a bare rewriter call there (logs copied by hand)", move, bare_move,
        target=None, repeats=min(ctx.repeats, 3)))

    for keys in KEYS:
        copy = Copies(ctx, paths[keys]).fresh()
        applied = []
        results += ctx.driver_heaps(
            f"[{PARTITIONS} partitions, {keys:,} keys]",
            lambda: applied.append(rs.rewrite(Checkpoint(ctx.spark, copy), "", DROP,
                                              dry_run=False, force=True,
                                              backup_dir=copy + ".backup")),
            "applying a drop")
        assert applied[0].verified
    return results
