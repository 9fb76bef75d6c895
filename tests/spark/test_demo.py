"""Demo checkpoints: exactly N batches, deterministic, continuable, with clear errors."""
from __future__ import annotations

import pathlib
import re
import shutil

import pytest
import tiers

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import tree_checksums
from state_runbooks.core.state_diff import WITH_PARTITION, all_equal, diff_checkpoints
from state_runbooks.core.state_reader import read_state
from state_runbooks.demos.checkpoints import (
    build_demo_checkpoint,
    run_demo_batches,
)


def _rows(spark, path, operator_id=0, store="default"):
    ckpt = Checkpoint(spark, path)
    return sorted(map(str, read_state(ckpt, operator_id, store).collect()))


def test_same_demo_gives_the_same_state(spark, demo_factory, tmp_path):
    first = demo_factory("window_agg")
    second = build_demo_checkpoint(spark, "window_agg", str(tmp_path / "again"), batches=4,
                                   partitions=first.partitions)
    assert _rows(spark, first.checkpoint_path) == _rows(spark, second.checkpoint_path)


def test_continuing_adds_exactly_the_asked_batches(spark, demo_factory, copy_checkpoint):
    path = copy_checkpoint(demo_factory("dedup").checkpoint_path)
    progress = run_demo_batches(spark, "dedup", path, 2)
    assert [p["batchId"] for p in progress] == [4, 5]
    assert Checkpoint(spark, path).commit_batch_ids == list(range(6))


def test_join_demo_builds_the_mismatch_cases(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("join").checkpoint_path)
    right = {r.key.field0 for r in read_state(ckpt, 0, "right-keyWithIndexToValue").collect()}
    assert any(k.startswith("missing-") for k in right)  # payments for orders that do not exist


@pytest.mark.parametrize("kwargs,message", [
    ({"workload": "sessions"}, "demo workload 'sessions' is not known"),
    ({"provider": "memory"}, "provider 'memory' is not known"),
    ({"batches": 0}, "batches must be at least 1"),
])
def test_bad_demo_arguments(spark, tmp_path, kwargs, message):
    with pytest.raises(RunbookError, match=message):
        build_demo_checkpoint(spark, checkpoint_path=str(tmp_path / "c"), **kwargs)


# The operator each newer demo workload runs, as Spark's state-metadata names it.
SHAPE_OPERATORS = {
    "dedup_within_watermark": "dedupeWithinWatermark",
    "join_v3": "symmetricHashJoin",
    "session_window": "sessionWindowStateStoreSaveExec",
    "pandas_with_state": "applyInPandasWithState",
    "transform_with_state": "transformWithStateInPySparkExec",
    "limit": "globalLimit",
}


@pytest.mark.parametrize("workload", sorted(SHAPE_OPERATORS))
def test_shape_workloads_write_state_that_spark_describes(spark, shape_demo, workload):
    run = shape_demo(workload)
    rows = spark.read.format("state-metadata").load(run.checkpoint_path).collect()
    assert {r.operatorName for r in rows} == {SHAPE_OPERATORS[workload]}
    assert {r.maxBatchId for r in rows} == {2}
    assert [p["batchId"] for p in run.progress] == [0, 1, 2]
    assert run.last_state_operators[0]["numRowsTotal"] > 0


@pytest.mark.parametrize("workload, provider", [  # make test: the HDFS-backed provider
    ("two_operators", "hdfs"), tiers.case("join", "rocksdb", core=False)])
def test_demo_files_are_the_ones_spark_s_default_writes(spark, tmp_path, monkeypatch, workload,
                                                        provider):
    """Demo queries on a local disk write through Spark's FileSystem-based checkpoint file manager
    (local_writes.py): the same files as Spark's default manager, the HDFS-backed store's with
    the same bytes (only the query id and the batch times differ), and the same state rows."""
    from state_runbooks.common.spark_settings import CHECKPOINT_FILE_MANAGER_CONF
    from state_runbooks.demos import checkpoints
    from state_runbooks.demos.local_writes import local_write_conf

    assert "FileSystemBased" in local_write_conf(spark, str(tmp_path))[CHECKPOINT_FILE_MANAGER_CONF]
    ours = build_demo_checkpoint(spark, workload, str(tmp_path / "ours"), 4, provider, 10, 2)
    monkeypatch.setattr(checkpoints, "local_write_conf", lambda spark, path: {})
    default = build_demo_checkpoint(spark, workload, str(tmp_path / "default"), 4, provider, 10, 2)

    def files(run) -> dict[str, str]:
        """Checksums of every file but RocksDB's SST files, whose names carry an id and a number
        that RocksDB gives as its background work goes: they differ between any two runs."""
        return {rel: sha for rel, sha in tree_checksums(spark, run.checkpoint_path).items()
                if "/SSTs/" not in rel}

    ours_files, default_files = files(ours), files(default)
    assert sorted(ours_files) == sorted(default_files)
    if provider == "hdfs":  # RocksDB's zips carry ids and times of their own
        assert [name for name in ours_files if ours_files[name] != default_files[name]
                and not re.match(r"\.?metadata|offsets/", name)] == []
    diffs = diff_checkpoints(Checkpoint(spark, ours.checkpoint_path),
                             Checkpoint(spark, default.checkpoint_path), 3, 3, WITH_PARTITION)
    assert all_equal(diffs), diffs


def test_a_restart_reads_a_damaged_file_as_spark_s_default_does(spark, demo_factory, tmp_path):
    """Why only a new demo is written through FileSystem's manager: the two managers read a damaged
    file differently, and a restart (faults.restart_demo, the tests' probes of Spark) must see
    what a user's restarted query sees."""
    from state_runbooks.common.errors import spark_error_text
    from state_runbooks.demos.local_writes import local_write_conf

    run = demo_factory("dedup", batches=2)
    said = {}
    # {}: what faults.restart_demo passes, so Spark's default manager reads the checkpoint.
    for manager, extra_conf in (("default", {}), ("FileSystem", local_write_conf(spark, ""))):
        path = tmp_path / manager
        shutil.copytree(run.checkpoint_path.removeprefix("file:"), path)
        metadata = path / "metadata"
        metadata.write_bytes(metadata.read_bytes()[:10])  # cut short; its .crc left as it was
        with pytest.raises(RunbookError) as failed:
            run_demo_batches(spark, "dedup", str(path), 1, extra_conf=extra_conf)
        said[manager] = spark_error_text(failed.value)
    assert "EOFException" in said["default"] and "ChecksumException" not in said["default"]
    assert "ChecksumException" in said["FileSystem"]


@tiers.EXTENDED
def test_a_demo_batch_whose_python_worker_connects_back_too_late_runs_once_more(tmp_path):
    """Real Spark in its own process, whose first Python worker sleeps past Spark's fixed 10 s
    wait: the batch fails as on a busy machine, runs once more on the checkpoint as it was, and the
    demo keeps its batch numbering; the log says so."""
    import json
    import os
    import subprocess
    import sys
    jobs = pathlib.Path(__file__).resolve().parents[1] / "jobs"
    env = {**os.environ, "SLOW_WORKER_FLAG": str(tmp_path / "slept"),
           "PYTHONPATH": os.pathsep.join([str(jobs), *sys.path])}
    run = subprocess.run([sys.executable, str(jobs / "demo_on_a_slow_worker.py"),
                          str(tmp_path / "demo"), "pandas_with_state"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.splitlines()[-1]) == {"offsets": [0, 1], "commits": [0, 1]}
    assert "did not connect back in time (a busy machine); running the batch once more" in run.stderr


def test_rate_micro_batch_stamps_every_row_of_a_batch_alike(spark, tmp_path):
    """What the course says of the demo's source: every row of a batch has one event time, 1 s
    after the batch before's (so "1 s of event time" is a step, not a spread)."""
    from state_runbooks.demos.checkpoints import DEMO_START_MS, _rate

    stamps = {}

    def keep(batch, batch_id):
        ms = batch.selectExpr("CAST(CAST(timestamp AS DOUBLE) * 1000 AS BIGINT) AS ms").distinct()
        stamps[batch_id] = sorted(r.ms for r in ms.collect())

    for _ in range(3):  # availableNow: one batch a start
        (_rate(spark, 40).writeStream.foreachBatch(keep)
         .option("checkpointLocation", str(tmp_path / "ckpt"))
         .trigger(availableNow=True).start().awaitTermination())
    assert stamps == {b: [DEMO_START_MS + 1000 * b] for b in range(3)}
