"""08_check_query_change: the whole check, with its rehearsal, against a bare process that copies
the same files and restarts the changed query for one batch.

The changed query is the checkpoint's own query with a filter before its stateful step (a change
Spark accepts), in a job file written beside the checkpoints. The files copied are the ones the
rehearsal copies (the logs, the operator metadata and schemas, and per store the state files that
load the newest batch's starting state), listed before the clock starts; the bare process copies
them, leaves the newest batch uncommitted, restarts with the ``noop`` sink for one batch and
removes the copy, which is the rehearsal without the comparison and Spark's planning checks. The
size of the copy against the checkpoint's is printed.

At demo scale (a windowed aggregation: HDFS, 8 partitions, 12 batches of 2,000 events) and at the
production shapes that are built (``production_shape.py``: 200 partitions, 100+ batches):

- the whole notebook under papermill against the bare process (the target, 1.5x);
- the check called from the library in one warmed process against the bare copy and restart
  there (context: where the time goes without the notebook's kernel and Spark start-up).
"""
from __future__ import annotations

import json
import textwrap

import production_shape  # beside this file, not a package

BATCHES, ROWS, PARTITIONS = 12, 2000, 8
PRODUCTION_SHAPES = ("window_agg_many_users-hdfs", "window_agg_many_users-rocksdb_changelog",
                     "dedup-rocksdb_changelog", "join-rocksdb_changelog",
                     *production_shape.YOUNG)
JOB = textwrap.dedent("""
    from state_runbooks.demos.checkpoints import WORKLOAD_CONF, demo_query

    WORKLOAD, ROWS = {workload!r}, {rows}

    def build(spark):
        for key, value in WORKLOAD_CONF.get(WORKLOAD, {{}}).items():
            spark.conf.set(key, value)
        df = demo_query(spark, WORKLOAD, ROWS)
        return df.where("true").writeStream.outputMode("append")
""")
# The bare side: copy the listed files (the newest batch left uncommitted), restart the changed
# query for one batch on the copy with a sink that writes nothing, remove the copy.
BARE = textwrap.dedent("""
    import importlib.util, json, os, shutil, sys
    from pyspark.sql import SparkSession
    root, job_file, listing, target = sys.argv[1:5]
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    for rel in json.load(open(listing)):
        os.makedirs(os.path.dirname(os.path.join(target, rel)), exist_ok=True)
        shutil.copyfile(os.path.join(root, rel), os.path.join(target, rel))
    spec = importlib.util.spec_from_file_location("job", job_file)
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    writer = job.build(spark)
    query = (writer._df.writeStream.format("noop").outputMode("append")
             .option("checkpointLocation", target).trigger(once=True).start())
    query.awaitTermination()
    shutil.rmtree(target)
""")


def bench(ctx) -> list[dict]:
    from state_runbooks.demos.checkpoints import build_demo_checkpoint

    results = []
    if ctx.demo_scale:
        run = build_demo_checkpoint(ctx.spark, "window_agg", str(ctx.folder / "agg"),
                                    batches=BATCHES, rows_per_batch=ROWS, partitions=PARTITIONS)
        results = _compare(ctx, "demo scale", run.checkpoint_path.removeprefix("file:"),
                           "window_agg", ROWS, ctx.repeats)
    for name, path in ctx.production_shapes(*PRODUCTION_SHAPES):
        workload, rows = _shape_query(name)
        results += _compare(ctx, f"{production_shape.kind(name)}: {name}", path, workload, rows,
                            min(ctx.repeats, 2))
    return results


def _shape_query(name: str) -> tuple[str, int]:
    shape = production_shape.SHAPES_BY_NAME[name]
    return shape.workload, shape.rows_per_batch


def _compare(ctx, label: str, path: str, workload: str, rows: int, repeats: int) -> list[dict]:
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.runbooks import check_query_change as qc
    from state_runbooks.query.rehearsal import plan_copy

    job_file = ctx.folder / f"job_{workload}.py"
    job_file.write_text(JOB.format(workload=workload, rows=rows))
    ckpt = Checkpoint(ctx.spark, path)
    plan = plan_copy(ckpt)
    listing = ctx.folder / f"copy_{workload}.json"
    listing.write_text(json.dumps(plan.files))
    results = [ctx.report(f"[{label}] the copy: {len(plan.files)} of {plan.checkpoint_files} "
                          f"files, bytes as a share of the checkpoint's "
                          f"({plan.copy_bytes:,} of {plan.checkpoint_bytes:,})",
                          round(100 * plan.copy_bytes / plan.checkpoint_bytes, 1), "%")]
    runs = iter(range(1_000_000))
    results.append(ctx.notebook_vs_process(
        f"[{label}] whole 08 notebook with its rehearsal under papermill vs a bare process "
        "copying the same files and restarting the changed query for one batch",
        "08_check_query_change", {"checkpoint_path": path, "query_file": str(job_file)}, BARE,
        lambda: [path, str(job_file), str(listing), str(ctx.folder / f"bare-{next(runs)}")],
        repeats=repeats))

    def library():
        job = qc.load_job(ctx.spark, str(job_file))
        check = qc.check_query_change(ctx.spark, ckpt, job)
        assert check.restart == "restarts" and check.rehearsed, qc.verdict_line(check)

    def bare_here():
        import shutil
        target = ctx.folder / f"here-{next(runs)}"
        for rel in plan.files:
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f"{path}/{rel}", target / rel)
        job = qc.load_job(ctx.spark, str(job_file))
        (job.df.writeStream.format("noop").option("checkpointLocation", str(target))
         .trigger(once=True).start().awaitTermination())
        shutil.rmtree(target)

    results.append(ctx.side_by_side(
        f"[{label}] the check with its rehearsal, from the library in one process, vs the bare "
        "copy and restart there", library, bare_here, target=None, repeats=repeats))
    return results
