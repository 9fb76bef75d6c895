"""06_monitor_state at two shapes: demo scale (the event log of 60 micro-batches of a two-operator
query, zstd, rolling) and production shape (the event log the join's production-shape build wrote:
200 partitions, four stores, 30+ batches; ``production_shape.py``)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

# The least a person would write: stream the zstd log, keep the progress events of the query.
BARE_PROCESS = textwrap.dedent("""
    import glob, io, json, sys
    import zstandard
    progress = []
    for path in sorted(glob.glob(sys.argv[1] + "/eventlog_v2_*/events_*")):
        with open(path, "rb") as raw:
            reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
            for line in io.TextIOWrapper(reader, encoding="utf-8"):
                if "QueryProgressEvent" in line:
                    progress.append(json.loads(line)["progress"])
    print(len(progress), [op["numRowsTotal"] for op in progress[-1]["stateOperators"]])
""")
# The same with PySpark, as a notebook cell would: a session, the log read by Spark, progress kept.
BARE_PYSPARK_PROCESS = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    lines = (spark.read.option("recursiveFileLookup", "true").text(sys.argv[1])
             .where("value LIKE '%QueryProgressEvent%'").collect())
    progress = [json.loads(r.value)["progress"] for r in lines]
    print(len(progress), [op["numRowsTotal"] for op in progress[-1]["stateOperators"]])
""")
BATCHES = 60
PRODUCTION_SHAPES = ("join-rocksdb_changelog",)


def _at_production_shape(ctx, shape: str, path: str, repeats: int) -> list[dict]:
    """The whole notebook on the shape's event log, the query picked by its checkpoint's id."""
    import production_shape

    spec = production_shape.SHAPES_BY_NAME[shape]
    if not spec.event_log.is_dir():
        print(f"{shape}: built without its event log, which only a build writes: to measure 06 "
              f"there, rm -r {spec.path.parent} and build it again with python "
              f"tests/benchmarks/production_shape.py {shape}", flush=True)
        return []
    log = str(spec.event_log)
    result = ctx.notebook_vs_process(
        f"[production shape: {shape}] whole 06 notebook under papermill (event log and checkpoint) "
        "vs a bare PySpark process reading the progress", "06_monitor_state",
        {"event_log_path": log, "checkpoint_path": path}, BARE_PYSPARK_PROCESS, [log],
        repeats=repeats)
    result["shape"] = f"production shape: {shape}"
    return [result]


def bench(ctx) -> list[dict]:
    from state_runbooks.cli.execution import execute
    from state_runbooks.cli.runbook_files import resolve_notebook
    from state_runbooks.demos.event_logs import write_event_logs
    from state_runbooks.runbooks.monitor_state import event_log
    from state_runbooks.runbooks.monitor_state.history import build_history

    spec = {"event_log_dir": str(ctx.folder / "event-logs"),
            "checkpoint": str(ctx.folder / "checkpoint"), "workload": "two_operators",
            "batches": BATCHES, "rows_per_batch": 1000, "codec": "zstd", "rolling": True}
    demo = write_event_logs([spec], timeout_s=1800)[0]
    print(f"event log: {BATCHES} batches of {demo.app_id} in {spec['event_log_dir']}", flush=True)
    script, pyspark_script = ctx.folder / "bare.py", ctx.folder / "bare_pyspark.py"
    script.write_text(BARE_PROCESS)
    pyspark_script.write_text(BARE_PYSPARK_PROCESS)
    notebook = resolve_notebook("06_monitor_state")
    app = event_log.find_applications(ctx.spark, spec["event_log_dir"])[0]
    results = [
        ctx.side_by_side(
            "read the log and build the history vs a bare zstd stream of progress lines",
            lambda: build_history(event_log.load(ctx.spark, spec["event_log_dir"])[0].progress),
            lambda: subprocess.run([sys.executable, str(script), spec["event_log_dir"]],
                                   check=True, capture_output=True),
            target=1.5),
        ctx.side_by_side(
            "the log read by Spark (spark.read.text, as for remote logs) vs streamed locally",
            lambda: event_log.read_application(ctx.spark, app, local=False),
            lambda: event_log.read_application(ctx.spark, app, local=True),
            # A Spark job's fixed start-up against a local read of a small log: the Spark path is
            # only taken for logs this process cannot open (remote, or on Spark Connect).
            target=50.0),
        ctx.side_by_side(
            "whole notebook under papermill vs a bare PySpark process reading the progress",
            lambda: execute(notebook, ctx.folder / "out",
                            {"event_log_path": spec["event_log_dir"]}, html=False),
            lambda: subprocess.run([sys.executable, str(pyspark_script), spec["event_log_dir"]],
                                   check=True, capture_output=True),
            target=2.0, warm_up=False, repeats=3),
    ]
    for name, path in ctx.production_shapes(*PRODUCTION_SHAPES):
        results += _at_production_shape(ctx, name, path, min(ctx.repeats, 3))
    return results
