"""The Spark Connect path against the classic one, on the same checkpoint, side by side.

Production shape for listings: a RocksDB+changelog deduplication on Spark's default 200 shuffle
partitions. Classic sessions list and read files through the JVM's FileSystem API; Connect sessions
through ``binaryFile`` reads on the server (one recursive listing per tree).
"""
from __future__ import annotations

import contextlib
import os


@contextlib.contextmanager
def _connect_mode():
    """pyspark builds Connect columns only while this is set (a notebook on Connect has it)."""
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    try:
        yield
    finally:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


def bench(ctx) -> list[dict]:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    from state_runbooks.cli.execution import execute
    from state_runbooks.cli.runbook_files import resolve_notebook
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.demos.checkpoints import build_demo_checkpoint
    from state_runbooks.runbooks import inspect_state
    from state_runbooks.session.local_servers import start_connect_server

    run = build_demo_checkpoint(ctx.spark, "dedup", str(ctx.folder / "dedup200"), batches=12,
                                provider="rocksdb_changelog", rows_per_batch=2_000,
                                partitions=200)
    classic = Checkpoint(ctx.spark, run.checkpoint_path)
    files = len(classic.fs.walk())
    print(f"checkpoint: 200 partitions, 12 batches, {files:,} files (without .crc)", flush=True)
    server = start_connect_server(str(ctx.folder / "connect.log"))
    remote = ConnectSession.builder.remote(server.url).getOrCreate()
    try:

        def open_and_list(spark):
            ckpt = Checkpoint(spark, run.checkpoint_path)
            return ckpt.operators(), ckpt.state_files(), ckpt.pinned_conf

        def inspect(spark):
            ckpt = Checkpoint(spark, run.checkpoint_path)
            return inspect_state.inspect_stores(ckpt)

        def on_connect(fn):
            def call():
                with _connect_mode():
                    return fn(remote)
            return call

        notebook = resolve_notebook("03_inspect_state")
        return [
            ctx.side_by_side("open the checkpoint, operators, every state file: Connect vs classic",
                             on_connect(open_and_list), lambda: open_and_list(ctx.spark),
                             target=2.0),
            ctx.side_by_side("03's per-store figures: Connect vs classic",
                             on_connect(inspect), lambda: inspect(ctx.spark), target=1.5),
            ctx.side_by_side(
                "03 notebook under papermill: Connect vs classic (local[2])",
                lambda: execute(notebook, ctx.folder / "out-connect",
                                {"checkpoint_path": run.checkpoint_path,
                                 "spark_master": server.url}, html=False),
                lambda: execute(notebook, ctx.folder / "out-classic",
                                {"checkpoint_path": run.checkpoint_path}, html=False),
                target=1.5, warm_up=False, repeats=3),
        ]
    finally:
        remote.stop()  # before the server: an open session retries its release calls at exit
        server.stop()
