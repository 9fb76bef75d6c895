"""07_repartition_state: the runbook's apply against the bare Spark call it wraps.

The checkpoint: a windowed aggregation with many users (RocksDB, 8 partitions, 5 batches of 4,000
events), repartitioned to 16. The runbook side is what ``dry_run=False`` does: the requirements
checked, one scan per store (rows per partition, the forecast, a checksum of every row), the
journal and metadata copies, Spark's call, and the verification scan. The bare side is
``spark._streamingCheckpointManager.repartition`` alone. Each run gets its own fresh copy of the
checkpoint (copied before the clock starts).
"""
from __future__ import annotations

import shutil
import time

BATCHES, ROWS, BEFORE, AFTER = 5, 4000, 8, 16


def bench(ctx) -> list[dict]:
    from state_runbooks import repartition as rp
    from state_runbooks.checkpoint import Checkpoint
    from state_runbooks.demo import build_demo_checkpoint

    start = time.perf_counter()
    run = build_demo_checkpoint(ctx.spark, "window_agg_many_users", str(ctx.folder / "agg"),
                                batches=BATCHES, provider="rocksdb", rows_per_batch=ROWS,
                                partitions=BEFORE)
    print(f"checkpoint: {BATCHES} batches written in {time.perf_counter() - start:.0f} s",
          flush=True)
    copies = iter(range(10_000))

    def fresh() -> str:
        target = ctx.folder / f"copy-{next(copies)}"
        shutil.copytree(run.checkpoint_path.removeprefix("file:"), target)
        return str(target)

    pending: dict[str, list[str]] = {"runbook": [], "bare": []}
    runs = 1 + ctx.repeats  # the warm-up and the timed runs
    for side in pending:
        pending[side] = [fresh() for _ in range(runs)]

    def runbook():
        ckpt = Checkpoint(ctx.spark, pending["runbook"].pop())
        out = rp.repartition(ckpt, AFTER, dry_run=False, force=True,
                             backup_dir=ckpt.root + ".backup")
        assert out.verified and out.rows_equal, out.lines

    def bare():
        ctx.spark._streamingCheckpointManager.repartition(pending["bare"].pop(), AFTER, True)

    return [ctx.side_by_side(f"repartition {BEFORE} -> {AFTER} partitions (checks, backup, "
                             "verification) vs the bare Spark call", runbook, bare, target=1.5)]
