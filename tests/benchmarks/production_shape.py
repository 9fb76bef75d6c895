"""Production-shape checkpoints for the benches, built once and kept on disk across bench runs.

Spark's defaults make the shape: 200 shuffle partitions and ``minBatchesToRetain`` = 100, so a
query that ran ~105 batches keeps 100+ state versions per partition (tens of thousands of files per
operator). Written by the demo's own queries (``demo.run_demo_batches``); each shape lives in
``out/bench-checkpoints/<shape>/`` and is rebuilt only when missing. A build stopped halfway
continues where it stopped (the query restarts on its checkpoint), so it can run in the background:

    python tests/benchmarks/production_shape.py                 # build every missing shape
    python tests/benchmarks/production_shape.py dedup-rocksdb_changelog --time-one-batch

The join's build also writes its Spark event log (runbook 06 reads it), in a process of its own:
Spark reads event-log settings only when a session starts.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "out" / "bench-checkpoints"
PARTITIONS = 200
BATCHES = 105  # more than Spark's default minBatchesToRetain (100): old versions get cleaned up


@dataclass(frozen=True)
class Shape:
    workload: str
    provider: str
    rows_per_batch: int
    batches: int = BATCHES
    event_log_kept: bool = False  # the build writes its Spark event log (06's bench reads it)
    partitions: int = PARTITIONS
    young: bool = False  # a young checkpoint: RocksDB has written no snapshot yet

    @property
    def name(self) -> str:
        if self.young:
            return (f"{self.workload}-{self.provider}-young-{self.batches}b-"
                    f"{self.partitions}p")
        return f"{self.workload}-{self.provider}"

    @property
    def path(self) -> Path:
        return CACHE / self.name / "checkpoint"

    @property
    def done_marker(self) -> Path:
        return CACHE / self.name / "built.json"

    @property
    def event_log(self) -> Path:
        return CACHE / self.name / "event-log"

    @property
    def built(self) -> bool:
        return self.done_marker.exists()


# Dedup first: the shape the issue measured. 2,000 events a batch hold ~6,000 keys (6 s of event
# time behind a 5 s watermark) spread over all 200 partitions; the windowed count keys one user per
# two events, so its windows also reach every partition; the join keeps four stores, 800 store
# instances a batch, so it runs 30 batches (a batch takes ~4x a dedup's here) and writes an event
# log for runbook 06.
SHAPES = (
    Shape("dedup", "rocksdb_changelog", 2_000),
    Shape("dedup", "hdfs", 2_000),
    Shape("window_agg_many_users", "rocksdb_changelog", 2_000),
    Shape("window_agg_many_users", "hdfs", 2_000),
    Shape("join", "rocksdb_changelog", 2_000, batches=30, event_log_kept=True),
)
# Young checkpoints: the first batches of a job, before RocksDB writes a snapshot (it writes one
# every minDeltasForSnapshot = 10 versions, in the background), so every read replays changelogs.
# Each dedup batch holds rows_per_batch / 2 new keys (every event arrives twice) and the watermark
# keeps 6 batches of them: 4 batches of 500,000 events hold 1,000,000 keys; 12 batches of 133,334
# on 200 partitions hold about 400,000.
YOUNG_SHAPES = (
    Shape("dedup", "rocksdb_changelog", 500_000, batches=4, partitions=8, young=True),
    Shape("dedup", "rocksdb_changelog", 133_334, batches=12, young=True),
)
SHAPES_BY_NAME = {s.name: s for s in SHAPES + YOUNG_SHAPES}
YOUNG = tuple(s.name for s in YOUNG_SHAPES)


def kind(name: str) -> str:
    """How a bench labels the shape: a young checkpoint or the production shape."""
    return "young checkpoint" if SHAPES_BY_NAME[name].young else "production shape"


def committed_batches(path: Path) -> int:
    """Batches committed so far: the newest commit's id + 1 (Spark purges old log entries too)."""
    commits = path / "commits"
    ids = [int(p.name) for p in commits.iterdir() if p.name.isdigit()] if commits.is_dir() else []
    return max(ids) + 1 if ids else 0


def in_flight(path: Path) -> bool:
    """Whether the newest batch has an offsets entry but no commit (a stop interrupted it)."""
    offsets = path / "offsets"
    ids = [int(p.name) for p in offsets.iterdir() if p.name.isdigit()] if offsets.is_dir() else []
    return bool(ids) and max(ids) + 1 > committed_batches(path)


def run_continuously(spark, shape: Shape, until: int) -> None:
    """The demo's query on one continuous run until ``until`` batches are committed.

    One start per batch (``run_demo_batches``) also restarts the query and reloads all 200
    partitions' stores each time; one run keeps them loaded. Stopping may interrupt a batch in
    flight: the caller finishes it with ``run_demo_batches``, as a restarted query would."""
    from state_runbooks.demos.checkpoints import (
        WORKLOAD_CONF,
        demo_provider,
        demo_query,
        provider_conf,
    )
    from state_runbooks.session.spark_session import session_conf

    conf = {"spark.sql.shuffle.partitions": str(shape.partitions),
            "spark.sql.streaming.noDataMicroBatches.enabled": "false",
            **provider_conf(demo_provider(shape.workload, shape.provider)),
            **WORKLOAD_CONF.get(shape.workload, {})}
    with session_conf(spark, conf):
        query = (demo_query(spark, shape.workload, shape.rows_per_batch).writeStream
                 .format("noop").outputMode("append")
                 .option("checkpointLocation", str(shape.path)).start())
        try:
            last = time.perf_counter()
            while committed_batches(shape.path) < until and query.isActive:
                time.sleep(2)
                if time.perf_counter() - last > 30:
                    print(f"{shape.name}: {committed_batches(shape.path)}/{until} batches",
                          flush=True)
                    last = time.perf_counter()
        finally:
            query.stop()
        if query.exception():
            raise RuntimeError(str(query.exception()))


def build(spark, shape: Shape) -> Path:
    """Run the shape's query until it has ``shape.batches`` committed batches; mark it built."""
    from state_runbooks.demos.checkpoints import run_demo_batches

    batches = shape.batches
    shape.path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if shape.young and not committed_batches(shape.path):
        # Exactly ``batches`` batches, each started once (a stop would interrupt one in flight).
        run_demo_batches(spark, shape.workload, str(shape.path), batches, shape.provider,
                         shape.rows_per_batch, shape.partitions)
    elif committed_batches(shape.path) < batches - 1:
        run_continuously(spark, shape, batches - 1)
    # The last batch (and any batch the stop interrupted) as the demo runs it: one start.
    while committed_batches(shape.path) < batches or in_flight(shape.path):
        run_demo_batches(spark, shape.workload, str(shape.path), 1, shape.provider,
                         shape.rows_per_batch, shape.partitions)
    shape.done_marker.write_text(json.dumps({
        "workload": shape.workload, "provider": shape.provider, "partitions": shape.partitions,
        "batches": committed_batches(shape.path), "rows_per_batch": shape.rows_per_batch,
        "build_seconds": round(time.perf_counter() - start)}) + "\n")
    return shape.path


def ensure(spark, name: str) -> Path | None:
    """The shape's checkpoint path if built; None (and a line saying how to build it) if not.
    Benches never build on their own: a build takes many minutes on a small machine."""
    shape = SHAPES_BY_NAME[name]
    if shape.built:
        return shape.path
    print(f"{name}: not built; build it with python tests/benchmarks/production_shape.py {name}",
          flush=True)
    return None


def start_event_logging(folder: Path) -> None:
    """Start this process's session with Spark's event log on, written under ``folder``."""
    from pyspark.sql import SparkSession

    from state_runbooks.session.spark_session import DEFAULT_MASTER, LOCAL_CONF

    folder.mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder.master(DEFAULT_MASTER).appName("state-runbooks-bench-build")
    for key, value in {**LOCAL_CONF, "spark.eventLog.enabled": "true",
                       "spark.eventLog.dir": folder.as_uri()}.items():
        builder = builder.config(key, value)
    builder.getOrCreate()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("shapes", nargs="*", help=f"default: all ({', '.join(SHAPES_BY_NAME)})")
    parser.add_argument("--time-one-batch", action="store_true",
                        help="run one batch on a scratch checkpoint and print its time")
    parser.add_argument("--event-log", action="store_true",
                        help="also write the build's Spark event log (for runbook 06's bench)")
    args = parser.parse_args()
    from state_runbooks.session.spark_session import get_spark

    names = args.shapes or list(SHAPES_BY_NAME)
    if args.event_log:
        # Spark reads event-log settings only when a session starts: one shape per process.
        start_event_logging(SHAPES_BY_NAME[names[0]].event_log)
    spark = get_spark()
    for name in names:
        shape = SHAPES_BY_NAME[name]
        if args.time_one_batch:
            import tempfile

            from state_runbooks.demos.checkpoints import run_demo_batches
            with tempfile.TemporaryDirectory() as tmp:
                for label in ("first", "second"):
                    t0 = time.perf_counter()
                    run_demo_batches(spark, shape.workload, tmp + "/c", 1, shape.provider,
                                     shape.rows_per_batch, shape.partitions)
                    print(f"{name}: {label} batch {time.perf_counter() - t0:.1f} s", flush=True)
            continue
        if shape.built:
            print(f"{name}: built ({shape.path})", flush=True)
            continue
        if shape.event_log_kept and not args.event_log:
            subprocess.run([sys.executable, __file__, "--event-log", name], check=True)
            continue
        build(spark, shape)
    return 0


if __name__ == "__main__":
    sys.exit(main())
