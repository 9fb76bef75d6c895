"""03_inspect_state on about 1,000,000 state rows (a deduplication, 8 partitions)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

BARE_PROCESS = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    rows = (spark.read.format("statestore").load(sys.argv[1])
            .groupBy("partition_id").count().collect())
    print(sum(r["count"] for r in rows))
""")


def bench(ctx) -> list[dict]:
    from state_runbooks import inspection
    from state_runbooks.checkpoint import Checkpoint
    from state_runbooks.demo import build_demo_checkpoint
    from state_runbooks.notebooks import execute, resolve_notebook

    # Two batches of 1,000,000 events, each id twice: 1,000,000 distinct ids held in the state.
    run = build_demo_checkpoint(ctx.spark, "dedup", str(ctx.folder / "dedup"), batches=2,
                                rows_per_batch=1_000_000, partitions=8)
    total = sum(op["numRowsTotal"] for op in run.last_state_operators)
    print(f"checkpoint: {total:,} state rows in 8 partitions", flush=True)
    ckpt = Checkpoint(ctx.spark, run.checkpoint_path)
    store, batch = ckpt.stores()[0], ckpt.resolve_batch()
    script = ctx.folder / "bare.py"
    script.write_text(BARE_PROCESS)
    notebook = resolve_notebook("03_inspect_state")
    return [
        ctx.side_by_side(
            "per-store scan (rows, bytes, partitions, expiry) vs statestore count()",
            lambda: inspection.inspect_store(ckpt, store, batch),
            lambda: ctx.spark.read.format("statestore").load(ckpt.root).count(),
            target=1.3),
        ctx.side_by_side(
            "whole notebook under papermill vs a bare process counting rows per partition",
            lambda: execute(notebook, ctx.folder / "out", {"checkpoint_path": run.checkpoint_path},
                            html=False),
            lambda: subprocess.run([sys.executable, str(script), run.checkpoint_path], check=True,
                                   capture_output=True),
            target=1.5, warm_up=False, repeats=3),
    ]
