"""12_move_checkpoint: the runbook's move against the bare Spark work it wraps.

- At demo scale (8 partitions, RocksDB) and at the production shape (Spark's default 200
  partitions, 100 retained batches, RocksDB with changelogs), where built: the checkpoint moved to
  a new place, in one warmed process, the library's steps (08's comparison and Spark's restart
  check, the requirements, every file copied and compared by SHA-256, the paths operator metadata
  names rewritten, the job restarted for one batch on a scratch copy of the result) against a bare
  move that copies every file with the operating system and restarts the query there for one
  batch with a sink that writes nothing (the target: 1.5x).
"""
from __future__ import annotations

import shutil
import textwrap
import time

import production_shape

BATCHES, ROWS, PARTITIONS = 12, 2000, 8
PRODUCTION_SHAPES = ("dedup-rocksdb_changelog",)
JOB = textwrap.dedent("""
    from state_runbooks.demos.checkpoints import WORKLOAD_CONF, demo_query

    WORKLOAD, ROWS = {workload!r}, {rows}

    def build(spark):
        for key, value in WORKLOAD_CONF.get(WORKLOAD, {{}}).items():
            spark.conf.set(key, value)
        return demo_query(spark, WORKLOAD, ROWS).writeStream.outputMode("append")
""")


def bench(ctx) -> list[dict]:
    from state_runbooks.demos.checkpoints import build_demo_checkpoint

    results = []
    if ctx.demo_scale:
        run = build_demo_checkpoint(ctx.spark, "dedup", str(ctx.folder / "dedup"),
                                    batches=BATCHES, provider="rocksdb_changelog",
                                    rows_per_batch=ROWS, partitions=PARTITIONS)
        results += _compare(ctx, "demo scale", run.checkpoint_path.removeprefix("file:"),
                            "dedup", ROWS, ctx.repeats)
    for name, path in ctx.production_shapes(*PRODUCTION_SHAPES):
        shape = production_shape.SHAPES_BY_NAME[name]
        results += _compare(ctx, f"{production_shape.kind(name)}: {name}", path, shape.workload,
                            shape.rows_per_batch, min(ctx.repeats, 2))
    return results


def _compare(ctx, label: str, path: str, workload: str, rows: int, repeats: int) -> list[dict]:
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.runbooks import move_checkpoint as mc

    job_file = ctx.folder / f"move_job_{workload}.py"
    job_file.write_text(JOB.format(workload=workload, rows=rows))
    job = mc.load_job(ctx.spark, str(job_file), "build")
    ckpt = Checkpoint(ctx.spark, path)
    runs = iter(range(1_000_000))
    steps: list = []

    def runbook():
        target = ctx.folder / f"moved-{next(runs)}"
        moves = mc.compare_move(ctx.spark, ckpt, job, move="location")
        checks = mc.check_requirements(ctx.spark, ckpt, moves, "location",
                                       output_path=str(target), force=True)
        out = mc.move(ckpt, checks, job, dry_run=False)
        assert out.verified, out.lines
        steps.append(out.seconds)
        shutil.rmtree(target)

    def bare():
        target = ctx.folder / f"bare-{next(runs)}"
        shutil.copytree(path, target)
        query = (job.df.writeStream.format("noop").outputMode("append")
                 .option("checkpointLocation", str(target)).trigger(once=True).start())
        query.awaitTermination()
        shutil.rmtree(target)

    files = len(ckpt.fs.raw().walk())
    start = time.perf_counter()
    result = ctx.side_by_side(
        f"[{label}] move the checkpoint ({files:,} files) to a new place: the library's steps "
        "(comparison and Spark's restart check, requirements, every file copied and compared by "
        "SHA-256, the job restarted for a batch on a copy of the result) vs a bare copy and "
        "restart for one batch, in one warmed process",
        runbook, bare, target=1.5, repeats=repeats)
    print(f"    where the move's time went (last run): "
          + ", ".join(f"{k} {v:.1f} s" for k, v in steps[-1].items())
          + f"; {time.perf_counter() - start:.0f} s in all", flush=True)
    return [result]
