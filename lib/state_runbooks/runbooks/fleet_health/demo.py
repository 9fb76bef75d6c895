"""The fleet demo: one root holding a dozen small checkpoints of different operators and
providers, four of them in trouble (one stalled, one with a damaged newest version, one skewed,
one growing) and two broken look-alikes; a first run writes the history, the growing query runs
on, and the notebook's run is the second, a history apart."""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass

from state_runbooks.common.spark_settings import (
    NO_DATA_BATCHES_CONF,
    SHUFFLE_PARTITIONS_CONF,
)
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs.base import local_tree_checksums
from state_runbooks.demos.checkpoints import (
    DEMO_START_MS,
    new_demo_folder,
    provider_conf,
    run_demo_batches,
)
from state_runbooks.demos.faults import state_fault_target
from state_runbooks.demos.local_writes import local_write_conf
from state_runbooks.session.spark_session import session_conf

from .fleet import FleetRun, run_fleet

DEMO = {"batches": 2, "rows_per_batch": 20, "partitions": 2, "parallelism": 4}
# Healthy checkpoints: (folder under the root, workload, provider).
HEALTHY = (("orders/dedup", "dedup", "hdfs"), ("orders/windows", "window_agg", "rocksdb"),
           ("payments/join", "join", "hdfs"),
           ("sessions/by_user", "session_window", "rocksdb_changelog"),
           ("billing/buckets", "composite_agg", "hdfs"),
           ("clicks/dedup", "dedup_within_watermark", "rocksdb"))
# The four in trouble, by what is wrong with them.
PLANTED = {"stalled": ("ops/stalled", "window_agg", "rocksdb_changelog"),
           "damaged": ("ops/damaged", "window_agg", "hdfs"),
           "skewed": ("ops/skewed", "skewed", "hdfs"),
           "growing": ("ops/growing", "dedup", "hdfs")}
NEVER_RAN = "ops/never_ran"  # a metadata file only
LOGS_GONE = "archive/logs_gone"  # a copy of a checkpoint's state/ without its logs
STALLED_DAYS = 3
STOPPED_HOURS = 1  # older than the activity guard's quiet window: stopped, not active
SKEWED_ROWS_PER_BATCH = 200  # enough rows per partition for 03's skew ratio to be judged


@dataclass
class DemoFleet:
    """The demo's root, its history, and the first run (the history's first rows)."""
    folder: str
    root: str
    history_path: str
    first: FleetRun
    checksums: dict  # of everything under the root before the second run
    growing_rows: int  # the growing checkpoint's rows at the first run


@dataclass
class DemoResult:
    first: FleetRun
    second: FleetRun
    parallelism: int
    growing_rows: tuple
    files_checked: int
    unchanged: bool

    def planted(self, run: FleetRun) -> dict:
        return {name: run.by_path(path) for name, (path, _w, _p) in PLANTED.items()}


def _skewed(spark, path: str, batches: int, partitions: int) -> None:
    """An aggregation whose keys mostly hash to partition 0 (Spark's own hash partitioning,
    ``pmod(hash(key), n)``): one partition holds most of the state."""
    conf = {SHUFFLE_PARTITIONS_CONF: str(partitions), NO_DATA_BATCHES_CONF: "false",
            **provider_conf("hdfs"), **local_write_conf(spark, path)}
    with session_conf(spark, conf):
        df = (spark.readStream.format("rate-micro-batch")
              .option("rowsPerBatch", SKEWED_ROWS_PER_BATCH).option("numPartitions", 1)
              .option("startTimestamp", DEMO_START_MS).load()
              .where(f"pmod(hash(value), {partitions}) = 0 OR value % 8 = 0")
              .groupBy("value").count())
        for _ in range(batches):
            (df.writeStream.format("noop").outputMode("update")
             .option("checkpointLocation", path).trigger(availableNow=True).start()
             .awaitTermination())


def _cut_newest_snapshot_in_half(spark, path: str) -> None:
    """The damaged checkpoint's fault, made on this machine's disk as the rest of the fleet is
    (a demo folder is local), so that a Spark Connect client, which cannot write files outside
    Databricks, builds the same fleet."""
    target = os.path.join(path, state_fault_target(Checkpoint(spark, path), "truncate_latest"))
    with open(target, "r+b") as state_file:
        state_file.truncate(os.path.getsize(target) // 2)


def _age(path: str, days: float) -> None:
    stamp = time.time() - days * 86_400
    for folder, _dirs, names in os.walk(path):
        for name in names:
            os.utime(os.path.join(folder, name), (stamp, stamp))


def build_demo_fleet(spark, batches: int = DEMO["batches"],
                     rows_per_batch: int = DEMO["rows_per_batch"],
                     partitions: int = DEMO["partitions"],
                     parallelism: int = DEMO["parallelism"]) -> DemoFleet:
    """Write the demo root, plant its troubles, run the fleet once (the history's first rows)
    and let the growing query run two more batches."""
    folder = new_demo_folder()
    root = os.path.join(folder, "fleet")
    for path, workload, provider in HEALTHY + tuple(PLANTED.values()):
        where = os.path.join(root, path)
        if workload == "skewed":
            _skewed(spark, where, batches, 4)
        else:
            run_demo_batches(spark, workload, where, batches, provider, rows_per_batch,
                             partitions, local_write_conf(spark, where))
    _cut_newest_snapshot_in_half(spark, os.path.join(root, PLANTED["damaged"][0]))
    _age(root, STOPPED_HOURS / 24)  # the demo's queries stopped a while ago
    _age(os.path.join(root, PLANTED["stalled"][0]), STALLED_DAYS)
    os.makedirs(os.path.join(root, NEVER_RAN))
    shutil.copy(os.path.join(root, HEALTHY[0][0], "metadata"), os.path.join(root, NEVER_RAN))
    shutil.copytree(os.path.join(root, HEALTHY[0][0], "state"), os.path.join(root, LOGS_GONE,
                                                                            "state"))
    os.makedirs(os.path.join(root, "exports", "2026"))  # data beside the checkpoints
    with open(os.path.join(root, "exports", "2026", "part-0.csv"), "w") as out:
        out.write("id\n1\n")
    history = os.path.join(folder, "history")
    first = run_fleet(spark, root, history_path=history, parallelism=parallelism)
    growing = os.path.join(root, PLANTED["growing"][0])
    run_demo_batches(spark, "dedup", growing, 2, "hdfs", rows_per_batch, partitions,
                     local_write_conf(spark, growing))
    return DemoFleet(folder, root, history, first, local_tree_checksums(root),
                     first.by_path(PLANTED["growing"][0]).figures.get("rows"))


def start_demo(rb) -> DemoFleet:
    """The demo fleet for this run, kept on ``rb`` (``rb.demo_prepared``) for :func:`run_demo`."""
    rb.demo_prepared = build_demo_fleet(rb.spark)
    return rb.demo_prepared


def run_demo(rb, second: FleetRun) -> DemoResult:
    """What only the demo checks: nothing under the root changed during the second run."""
    demo = rb.demo_prepared
    now = local_tree_checksums(demo.root)
    return DemoResult(demo.first, second, DEMO["parallelism"],
                      (demo.growing_rows, second.by_path(PLANTED["growing"][0])
                       .figures.get("rows")), len(now), now == demo.checksums)
