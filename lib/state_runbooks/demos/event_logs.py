"""Event logs written by real demo queries, for the runbook's demo and the tests.

The event log is switched on when a SparkContext starts (``spark.eventLog.enabled``), so a notebook
whose session already runs cannot turn it on for itself: the demo query runs in a child Python process
with its own local session, writes its log, and reports the progress its query returned
(``query.lastProgress`` of every batch) so that what the runbook reads can be checked against it.

Run as ``python -m state_runbooks.demos.event_logs <spec JSON>``; one process may write several
logs (a new SparkContext per log, in one JVM).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.spark_settings import (
    EVENT_LOG_CODEC_CONF,
    EVENT_LOG_COMPRESS_CONF,
    EVENT_LOG_DIR_CONF,
    EVENT_LOG_ENABLED_CONF,
    EVENT_LOG_ROLLING_CONF,
)
from state_runbooks.session.spark_session import progress_dict

from .checkpoints import new_demo_folder

DEMO_WORKLOAD = "join"  # a stream-stream join: state that levels off, and late rows dropped
# Payments dated after their order are held longer than the rest (the join's time bounds keep them
# matchable): the state rises by a few rows a batch after the first evictions, and levels off only
# once those go too; 20 batches show the whole curve.
DEMO_BATCHES = 20
# Two partitions: the rows and the curve are the same on any number, and a join batch on two takes
# three quarters of the time it takes on four (eight state stores instead of sixteen).
DEMO_PARTITIONS = 2
_RESULT_PREFIX = "demo-event-log:"


@dataclass
class DemoLog:
    """One event log written by a demo query, and what that query reported."""
    event_log_dir: str  # the spark.eventLog.dir the application wrote into
    app_id: str
    query_id: str
    codec: str
    rolling: bool
    progress: list = field(default_factory=list)  # query.lastProgress of every batch



def _write_one(spec: dict) -> dict:
    from pyspark.sql import SparkSession

    from state_runbooks.session.spark_session import LOCAL_CONF

    from .checkpoints import build_demo_checkpoint

    os.makedirs(spec["event_log_dir"], exist_ok=True)  # Spark refuses a missing log folder
    builder = SparkSession.builder.master("local[2]").appName(f"demo-{spec['workload']}")
    conf = {**LOCAL_CONF, EVENT_LOG_ENABLED_CONF: "true",
            EVENT_LOG_DIR_CONF: spec["event_log_dir"],
            EVENT_LOG_ROLLING_CONF: str(spec["rolling"]).lower(),
            EVENT_LOG_COMPRESS_CONF: str(spec["codec"] != "none").lower(),
            **spec.get("conf", {})}
    if spec["codec"] != "none":
        conf[EVENT_LOG_CODEC_CONF] = spec["codec"]
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        app_id = spark.sparkContext.applicationId
        if spec["batches"] == 0:  # an application without streaming: a batch job only
            spark.range(10).count()
            progress = []
        else:
            progress = build_demo_checkpoint(spark, spec["workload"], spec["checkpoint"],
                                             spec["batches"], spec.get("provider", "hdfs"),
                                             spec.get("rows_per_batch", 20),
                                             spec.get("partitions", 4)).progress
    finally:
        spark.stop()
    return {**spec, "app_id": app_id, "progress": [progress_dict(p) for p in progress]}


def write_event_logs(specs: list[dict], timeout_s: int = 600) -> list[DemoLog]:
    """Run demo queries with the event log on, in one child process; one log per spec.

    A spec: ``event_log_dir``, ``checkpoint``, ``workload``, ``batches``, ``codec`` (``none``,
    ``zstd``, ``lz4``, ``snappy``), ``rolling`` (bool), optional ``provider``, ``rows_per_batch``,
    ``partitions``, ``conf`` (more Spark confs). ``batches=0`` runs a batch job instead: a log
    without streaming progress.
    """
    # The child starts its own classic session (the event log is set when a SparkContext starts),
    # also when this process runs on Spark Connect: it must not inherit the Connect switches.
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    proc = subprocess.run([sys.executable, "-m", "state_runbooks.demos.event_logs",
                           json.dumps(specs)], capture_output=True, text=True, timeout=timeout_s,
                          env=env)
    results = [json.loads(line[len(_RESULT_PREFIX):]) for line in proc.stdout.splitlines()
               if line.startswith(_RESULT_PREFIX)]
    if proc.returncode != 0 or len(results) != len(specs):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RunbookError(f"the demo query with the event log on failed: {tail}")
    return [DemoLog(r["event_log_dir"], r["app_id"], r["progress"][0]["id"] if r["progress"] else "",
                    r["codec"], r["rolling"], r["progress"])
            for r in results]


def write_demo_event_log(workload: str = DEMO_WORKLOAD, batches: int = DEMO_BATCHES,
                         codec: str = "zstd", rolling: bool = True) -> DemoLog:
    """The runbook's demo: a fresh event log folder written by one demo query (in a demo folder,
    removed when this process exits)."""
    root = new_demo_folder()
    spec = {"event_log_dir": os.path.join(root, "event-logs"),
            "checkpoint": os.path.join(root, "checkpoint"), "workload": workload,
            "batches": batches, "codec": codec, "rolling": rolling, "partitions": DEMO_PARTITIONS}
    return write_event_logs([spec])[0]


def main(argv: list[str] | None = None) -> int:
    specs = json.loads((argv or sys.argv[1:])[0])
    for spec in specs:
        print(_RESULT_PREFIX + json.dumps(_write_one(spec)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
