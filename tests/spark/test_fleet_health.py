"""Runbook 13 (fleet health) on a root holding real checkpoints of several operators and
providers, healthy and broken (a damaged state file, a batch in flight, no metadata file, one
that never ran, an empty folder, data that is not a checkpoint): each reported as 05's diagnosis
and 03's checklist report it alone, nothing under the root changed, the history read back across
two runs; a root that is not there or holds no checkpoint is one line; a query committing while
it is examined is active."""
from __future__ import annotations

import os
import shutil
import time

import pytest
import tiers
from checkpoint_trees import age, tree_sha

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.spark_settings import PARALLEL_DISCOVERY_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.state_file_stats import spark_partitions
from state_runbooks.demos import faults
from state_runbooks.demos.checkpoints import demo_query, run_demo_batches
from state_runbooks.runbooks import fleet_health as fh
from state_runbooks.runbooks import inspect_state
from state_runbooks.runbooks import recover_corrupted_state as recovery
from state_runbooks.runbooks.fleet_health.history import SCHEMA

HEALTHY = {"orders/dedup": ("dedup", "hdfs"), "orders/windows": ("window_agg", "rocksdb"),
           "payments/join": ("join", "rocksdb_changelog"),
           "sessions/by_user": ("session_window", "hdfs")}
BROKEN = {"broken/damaged": ("window_agg", "hdfs", "truncate_latest"),
          "broken/in_flight": ("dedup", "hdfs", "uncommitted_batch")}


@pytest.fixture(scope="module")
def root(spark, demo_factory, tmp_path_factory):
    """The fleet: copies of shared demo checkpoints (never changed), broken on the copies."""
    top = tmp_path_factory.mktemp("fleet")
    fleet = top / "root"
    for path, (workload, provider) in HEALTHY.items():
        shutil.copytree(demo_factory(workload, provider).checkpoint_path.removeprefix("file:"),
                        fleet / path)
    for path, (workload, provider, fault) in BROKEN.items():
        shutil.copytree(demo_factory(workload, provider).checkpoint_path.removeprefix("file:"),
                        fleet / path)
        faults.inject_fault(Checkpoint(spark, str(fleet / path)), fault)
        shutil.rmtree(str(fleet / path) + ".removed-by-fault", ignore_errors=True)
    shutil.copytree(fleet / "orders/dedup", fleet / "broken/no_metadata")
    os.remove(fleet / "broken/no_metadata/metadata")
    (fleet / "broken/never_ran").mkdir(parents=True)
    shutil.copy(fleet / "orders/dedup/metadata", fleet / "broken/never_ran/metadata")
    (fleet / "empty").mkdir()
    (fleet / "exports/2026").mkdir(parents=True)
    (fleet / "exports/2026/part-0.csv").write_text("id\n1\n")
    age(fleet)  # stopped an hour ago
    return top


def test_every_checkpoint_is_reported_as_03_and_05_report_it_and_nothing_changes(spark, root):
    fleet = root / "root"
    before = tree_sha(fleet)
    run = fh.run_fleet(spark, str(fleet), state_rows="exact", parallelism=3)
    assert tree_sha(fleet) == before
    found = {e.checkpoint_path.removeprefix(run.roots[0]).lstrip("/"): e for e in run.examinations}
    assert sorted(found) == sorted([*HEALTHY, *BROKEN, "broken/no_metadata", "broken/never_ran"])
    for path in [*HEALTHY, *BROKEN, "broken/no_metadata"]:
        exam = found[path]
        ckpt = Checkpoint(spark, str(fleet / path), require_state=False)
        diag = recovery.diagnose(ckpt)
        assert exam.figures["state_loads"] is (not diag.state_does_not_load), path
        assert ("state_not_loaded" in {f.code for f in exam.findings}) is \
            diag.state_does_not_load, path
        if not diag.state_does_not_load:
            reports = inspect_state.inspect_stores(ckpt)
            warned = {i.code for i in inspect_state.production_checklist(ckpt, reports, None)
                      if i.severity == "warning"} - {"state_not_loaded"}
            assert {f.code for f in exam.findings} >= warned, path
            assert exam.figures["rows"] == sum(r.rows for r in reports), path
    for path in HEALTHY:
        assert found[path].status == "ok", (path, found[path].findings, found[path].not_judged)
    damaged = found["broken/damaged"]
    assert damaged.status == "critical"
    assert damaged.worst.details["open"]["parameters"] == {"checkpoint_path": damaged.checkpoint_path}
    assert found["broken/in_flight"].figures["batches_in_flight"] == [3]
    assert found["broken/in_flight"].status == "ok"  # a restart re-runs it: 05 says the same
    assert found["broken/no_metadata"].status == "critical"
    assert found["broken/no_metadata"].worst.code == "no_metadata_file"
    assert found["broken/never_ran"].findings[0].code == "never_ran"
    assert run.worst_first[0].status == "critical"
    assert run.files_counted == "one Spark job over the checkpoints' folders"
    for path in [*HEALTHY, *BROKEN, "broken/no_metadata"]:
        assert found[path].figures["files_from"] == "Spark's job over the fleet", path
        assert found[path].figures["min_batches_to_retain"] == 100, path  # Spark's default
        assert found[path].figures["retention"].startswith("not due yet: "), path


def test_spark_counts_each_partitions_files_as_the_drivers_listing_does(spark, root):
    """One Spark job over the fleet's folders gives every state partition (each operator, join
    store and provider) the bytes, files and versions the driver's own listing gives it; a
    folder whose name Spark would read as a glob is left to the driver's listing."""
    fleet = root / "root"
    ckpts = [Checkpoint(spark, str(fleet / p), require_state=False) for p in [*HEALTHY, *BROKEN]]
    counted = spark_partitions(spark, [c.root for c in ckpts])

    def key(p):
        return p["operator_id"], p["partition_id"], p["store_name"]

    for ckpt in ckpts:
        assert sorted(counted[ckpt.root], key=key) == sorted(ckpt.partition_files(), key=key)
    assert len({p["store_name"] for p in counted[ckpts[2].root]}) == 4  # the join's stores
    windows = ckpts[1]  # RocksDB: its SST files count in the bytes, beside its .zip snapshots
    assert sum(p["bytes"] for p in counted[windows.root]) > sum(
        f.size for f in windows.state_files())
    assert spark_partitions(spark, [f"{ckpts[0].root}[1]"]) == {}


def test_the_history_read_back_across_two_runs_gives_the_growth(spark, root, demo_factory):
    fleet, history = root / "growing", str(root / "history")
    shutil.copytree(demo_factory("dedup", "hdfs").checkpoint_path.removeprefix("file:"),
                    fleet / "dedup")
    shutil.copytree(demo_factory("window_agg", "rocksdb").checkpoint_path.removeprefix("file:"),
                    fleet / "windows")
    age(fleet)
    first = fh.run_fleet(spark, str(fleet), history_path=history, state_rows="metadata")
    assert first.appended == 2 and first.history == []
    run_demo_batches(spark, "dedup", str(fleet / "dedup"), 2, "hdfs", 20, 2)
    second = fh.run_fleet(spark, str(fleet), history_path=history, state_rows="metadata")
    assert len(second.history) == 2 and len(fh.read_history(spark, history)) == 4
    growing = second.by_path("dedup")
    assert growing.figures["previous_rows"] == first.by_path("dedup").figures["rows"]
    assert growing.figures["rows"] == growing.figures["previous_rows"] + 2 * 10  # 10 ids a batch
    assert "state_growing" in {f.code for f in growing.findings}
    assert growing.worst.details["open"]["runbook"] == "02_estimate_state_size"
    assert second.by_path("windows").figures["growth_per_day"] == 0


def test_the_history_in_a_catalog_table_is_appended_once_a_run_and_read_back(spark, root,
                                                                             demo_factory,
                                                                             tmp_path):
    """``history_path`` a table name (no scheme, no slash): each run appends one row per
    checkpoint to the catalog's table and the next run reads them back. The table is made at a
    folder of the test's own (the default catalog would write its warehouse into the folder
    the test runs from)."""
    fleet, table = root / "in_a_table", f"fleet_history_{os.getpid()}"
    shutil.copytree(demo_factory("dedup", "hdfs").checkpoint_path.removeprefix("file:"),
                    fleet / "dedup")
    age(fleet)
    spark.sql(f"CREATE TABLE {table} ({SCHEMA}) USING parquet LOCATION '{tmp_path / table}'")
    try:
        first = fh.run_fleet(spark, str(fleet), history_path=table, state_rows="metadata")
        second = fh.run_fleet(spark, str(fleet), history_path=table, state_rows="metadata")
        assert (first.history_format, first.appended, first.history) == ("table", 1, [])
        assert [r["run_ms"] for r in second.history] == [first.run_ms]
        assert spark.table(table).count() == 2
        dedup = second.by_path("dedup")
        assert (dedup.figures["previous_rows"], dedup.figures["growth_per_day"]) == (
            first.by_path("dedup").figures["rows"], 0)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {table}")


@pytest.mark.parametrize("where,message", [
    ("nowhere", r"^\S+/nowhere does not exist: give the folder that holds your checkpoints"),
    tiers.case("exports", r"^no checkpoint under \S+/exports \(down to 6 levels\)", core=True)])
def test_a_root_that_is_not_there_or_holds_no_checkpoint_is_one_line(spark, root, where,
                                                                     message):
    with pytest.raises(RunbookError, match=message) as raised:
        fh.run_fleet(spark, str(root / "root" / where))
    assert "\n" not in str(raised.value)


def test_a_delta_history_without_delta_lake_is_one_line_before_any_checkpoint_is_examined(
        spark, root, tmp_path):
    """The installed Spark has no Delta Lake: ``history_format: delta`` stops the run in one
    line when it starts (the history is read first), not when it appends after every
    checkpoint was examined; nothing is written."""
    history, diagnosed = tmp_path / "history", []
    with pytest.raises(RunbookError, match=r"^history_format=delta needs Delta Lake on this "
                                           r"Spark .*: install it, or keep the history as "
                                           r"parquet") as raised:
        fh.run_fleet(spark, str(root / "root" / "orders"), history_path=str(history),
                     history_format_="delta", diagnose_fn=diagnosed.append)
    assert "\n" not in str(raised.value) and not history.exists() and diagnosed == []


def test_a_query_committing_while_examined_is_active(spark, demo_factory, tmp_path):
    path = tmp_path / "live" / "dedup"
    shutil.copytree(demo_factory("dedup", "hdfs").checkpoint_path.removeprefix("file:"), path)
    query = (demo_query(spark, "dedup", 20).writeStream.format("noop")
             .option("checkpointLocation", str(path)).trigger(processingTime="500 milliseconds")
             .start())
    try:
        start = Checkpoint(spark, str(path)).last_committed_batch_id
        deadline = time.time() + 120
        while Checkpoint(spark, str(path)).last_committed_batch_id < start + 2:
            assert time.time() < deadline, "the query did not commit"
            time.sleep(0.5)
        run = fh.run_fleet(spark, str(tmp_path / "live"), state_rows="exact")
    finally:
        query.stop()
    (exam,) = run.examinations
    assert run.files_counted == "one Spark job over the checkpoints' folders"
    assert exam.status == "active", (exam.findings, exam.not_judged)
    assert exam.active and not {f.code for f in exam.findings} & {"stalled", "state_not_loaded",
                                                                  "damaged_files"}


def test_more_folders_than_sparks_threshold_are_listed_by_a_spark_job_a_task_a_core(
        spark, demo_factory, tmp_path):
    """Above ``parallelPartitionDiscovery.threshold`` (32 on the installed Spark) folders, Spark
    lists them in a job of its own, one task per core here, where at or below it the driver
    lists them: the job that counts the fleet's files runs one more job for the listing. The
    scan that follows reads no content: a task a core."""
    source = demo_factory("dedup", "hdfs").checkpoint_path.removeprefix("file:")
    threshold = int(spark.conf.get(PARALLEL_DISCOVERY_CONF))
    assert threshold == 32
    roots = []
    for i in range(threshold + 1):
        shutil.copytree(source, tmp_path / f"q{i:02d}")
        roots.append(Checkpoint(spark, str(tmp_path / f"q{i:02d}"), require_state=False).root)
    tracker, jobs = spark.sparkContext.statusTracker(), {}
    for n in (threshold, threshold + 1):
        group = f"fleet-files-{n}"
        spark.sparkContext.setJobGroup(group, group)
        try:
            assert len(spark_partitions(spark, roots[:n])) == n
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        jobs[n] = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup(group)]
    assert len(jobs[threshold + 1]) == len(jobs[threshold]) + 1
    listing, *counting = sorted(jobs[threshold + 1], key=lambda j: j.jobId)
    cores = spark.sparkContext.defaultParallelism
    assert [tracker.getStageInfo(s).numTasks for s in listing.stageIds] == [cores]
    # The scan: a task a core (Spark's packing may leave one more), where by default each small
    # file would count 4 MB: a task for every 32 files.
    assert tracker.getStageInfo(counting[0].stageIds[0]).numTasks <= cores + 1
