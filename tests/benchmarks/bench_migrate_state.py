"""10_migrate_state: the runbook's apply against the bare Spark work it wraps.

At the production shape's partition count (Spark's default 200 partitions), RocksDB: a count and a
sum per key (``jobs/counts_per_key.py``, as many keys as input rows, built here in a few batches),
migrated to its changed query whose key is widened from int to bigint, so every row is mapped and
placed again. Each run works on its own copy made before the clock starts.

- the library's migration in place (Spark's planning of the changed query, the checks, the plan's
  counts and checksums, backup and journal, Spark's state rewriter into a folder of its own, the
  batch moved in, the verification: Spark's restart check and every store read back) against a
  bare process in the same warmed session that reads the state, maps it with the same expression,
  writes the new batch with Spark's state rewriter (the changed query's schema files from Spark's
  planning, the logs copied by hand) and counts the rows before and after (the target: 1.5x);
- the driver's memory while migrating, at two key counts (4x apart): the Python heap's peak
  (``tracemalloc``) and the driver JVM's heap in use after it, both flat in the number of keys
  because the rows never travel to the driver.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

PARTITIONS = 200  # the production shape: Spark's default spark.sql.shuffle.partitions
BATCHES = 3
KEYS = (21_000, 84_000)  # as many keys as rows: BATCHES batches of KEYS / BATCHES
JOB = str(Path(__file__).resolve().parent / "jobs" / "counts_per_key.py")
_COPIES = iter(range(1_000_000))


def _job(spark, function: str, keys: int):
    """The job with ``keys`` rows in all, loaded as the runbook loads it."""
    from state_runbooks.query.job import load_job
    os.environ["BENCH_ROWS_PER_BATCH"] = str(keys // BATCHES)
    return load_job(spark, JOB, function)


def _build(ctx, keys: int) -> str:
    from state_runbooks.demos.continuation import continue_query
    path = str(ctx.folder / f"counts-{keys}")
    start = time.perf_counter()
    continue_query(ctx.spark, _job(ctx.spark, "build", keys).df, path, BATCHES,
                   provider="rocksdb", partitions=PARTITIONS, mode="update")
    print(f"checkpoint: {keys:,} keys on {PARTITIONS} partitions written in "
          f"{time.perf_counter() - start:.0f} s", flush=True)
    return path


def _copy(ctx, path: str) -> str:
    target = ctx.folder / f"migrate-copy-{next(_COPIES)}"
    shutil.copytree(path, target)
    return str(target)


def _migrate(spark, path: str, job):
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.runbooks import migrate_state as ms
    ckpt = Checkpoint(spark, path)
    change = ms.compare_schemas(spark, ckpt, job, {})
    checks = ms.check_requirements(ckpt, change, force=True)
    plan, checks = ms.plan_unless_active(ckpt, checks, change, {})
    out = ms.migrate(ckpt, checks, change, plan, {}, job, dry_run=False,
                     backup_dir=path + ".backup")
    change.remove_fresh()
    assert out.verified, out.lines
    return out


def _bare(spark, path: str, job, last: int) -> tuple[int, int]:
    """The least a migration does: Spark's planning of the changed query for its schema files, the
    logs copied, the state read and mapped (the key cast to bigint), placed and encoded, Spark's
    state rewriter, the commit, and the rows counted before and after."""
    from pyspark.sql import functions as F

    from state_runbooks.core.unsafe_row import encode_state_rows
    from state_runbooks.query.planning import plan_fresh
    from state_runbooks.safety.state_rewriter import as_raw_rows, run_rewriter
    target = Path(path + "-migrated")
    fresh = tempfile.mkdtemp(prefix="bench-migrate-fresh-")
    _batch, metadata, query_id = restart_settings_of(spark, path)
    plan_fresh(spark, job, fresh, metadata, query_id)
    shutil.copytree(f"{fresh}/state", target / "state")
    for folder in ("offsets", "commits", "sources"):
        if Path(path, folder).exists():
            shutil.copytree(f"{path}/{folder}", target / folder)
    shutil.copy(f"{path}/metadata", target / "metadata")
    shutil.copy(f"{path}/offsets/{last}", target / "offsets" / str(last + 1))
    before = spark.read.format("statestore").load(path)
    count = before.count()

    key = before.schema["key"].dataType.fields[0].name  # _groupingexpression: a cast's alias

    def transform(raw, _op, _store):
        rows = before.select(F.struct(F.col("key")[key].cast("bigint").alias(key)).alias("key"),
                             "value")
        placed = rows.withColumn("_pk", F.col("key")).repartition(PARTITIONS, "_pk")
        return as_raw_rows(encode_state_rows(placed.drop("_pk")), raw.schema)
    run_rewriter(spark, "file:" + path, last, "file:" + str(target), last + 1, transform)
    shutil.copy(f"{path}/commits/{last}", target / "commits" / str(last + 1))
    shutil.rmtree(fresh)
    return count, spark.read.format("statestore").load(str(target)).count()


def restart_settings_of(spark, path: str):
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.query.planning import restart_settings
    return restart_settings(Checkpoint(spark, path))


def bench(ctx) -> list[dict]:
    from state_runbooks.core.checkpoint import Checkpoint

    results = []
    paths = {keys: _build(ctx, keys) for keys in KEYS}
    path = paths[KEYS[0]]
    job = _job(ctx.spark, "widened", KEYS[0])
    last = Checkpoint(ctx.spark, path).last_committed_batch_id
    steps: list = []

    def runbook():
        steps.append(_migrate(ctx.spark, _copy(ctx, path), job).seconds)

    def bare():
        before, after = _bare(ctx.spark, _copy(ctx, path), job, last)
        assert before == after == KEYS[0]

    results.append(ctx.side_by_side(
        f"[{PARTITIONS} partitions, {KEYS[0]:,} keys] migrate a widened key in place, the "
        "library's steps (planning, checks, plan, backup, Spark's rewriter, the batch moved in, "
        "verification by Spark's restart check and checksums) vs a bare process reading, mapping "
        "and writing the state with Spark's rewriter and counting the rows, in one warmed process",
        runbook, bare, target=1.5, repeats=min(ctx.repeats, 3)))
    print("    where the apply's time went (last run): "
          + ", ".join(f"{k} {v:.1f} s" for k, v in steps[-1].items()), flush=True)

    for keys in KEYS:
        copy = _copy(ctx, paths[keys])
        results += ctx.driver_heaps(
            f"[{PARTITIONS} partitions, {keys:,} keys]",
            lambda: _migrate(ctx.spark, copy, _job(ctx.spark, "widened", keys)), "migrating")
    return results
