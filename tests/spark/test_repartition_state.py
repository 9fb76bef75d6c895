"""Repartition state (07) on real checkpoints: Spark's offline repartition, checked, backed up,
verified, continued and undone; and every refusal, with nothing changed.

What Spark does here is Spark's: each case writes a checkpoint with a real query, repartitions it
with the installed Spark, restarts the query on the new count and compares its output and state
with a copy that was never repartitioned. Checksums are computed with hashlib on the local files,
independently of the library.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import tiers
from checkpoint_trees import age, reader_rows, tree_sha

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.demos.checkpoints import DEMO_START_MS, demo_query, provider_conf
from state_runbooks.runbooks import repartition_state as rp
from state_runbooks.runbooks.repartition_state.checks import Checks, current_partitions
from state_runbooks.runbooks.repartition_state.forecast import scan_state
from state_runbooks.running.results import Summary
from state_runbooks.safety.requirements import Requirement
from state_runbooks.session.spark_session import session_conf


def stopped_copy(path: str, target: Path) -> str:
    shutil.copytree(path.removeprefix("file:"), target)
    age(target)
    return str(target)


def continue_query(spark, df, path: str, mode: str = "append", batches: int = 1):
    """``batches`` more micro-batches of ``df`` on the checkpoint: the rows they wrote (sorted,
    collected by foreachBatch, a sink that restarts from a checkpoint) and the last progress."""
    rows, progress = [], None

    def collect(batch, _batch_id):
        rows.extend(batch.collect())

    with session_conf(spark, {"spark.sql.streaming.noDataMicroBatches.enabled": "false"}):
        for _ in range(batches):
            query = (df.writeStream.foreachBatch(collect).outputMode(mode)
                     .option("checkpointLocation", path).trigger(availableNow=True).start())
            query.awaitTermination()
            progress = query.lastProgress
    return sorted(map(repr, rows)), progress




# -- apply, verify, continue, undo: every provider Spark supports, dedup, aggregation, join ---------
# The aggregation (8 -> 16, RocksDB) is the notebook's case below; HDFS is refused further down.
# make test: the deduplication; make test-extended: the join's four stores too
CASES = [("dedup", "rocksdb_changelog"), tiers.case("join", "rocksdb", core=False)]


@pytest.mark.parametrize("workload,provider", CASES)
def test_repartition_continues_like_a_run_never_repartitioned_and_undoes(
        spark, demo_factory, tmp_path, workload, provider):
    run = demo_factory(workload, provider, batches=3, rows_per_batch=10, partitions=2)
    path = stopped_copy(run.checkpoint_path, tmp_path / "ckpt")
    reference = stopped_copy(run.checkpoint_path, tmp_path / "never-repartitioned")
    original = tree_sha(path)
    rows_before = reader_rows(spark, path)
    ckpt = Checkpoint(spark, path)

    checks = rp.check_requirements(ckpt, 3)
    assert checks.ok, rp.requirement_lines(checks)
    assert (checks.num_partitions_before, checks.num_partitions_after) == (2, 3)
    scans = scan_state(ckpt, 2, 2, 3)
    assert all(s.after is not None and sum(s.after) == s.rows for s in scans)
    dry = rp.repartition(ckpt, 3, checks=checks, before=scans)
    assert not dry.applied and dry.refused is None and tree_sha(path) == original

    backup = tmp_path / "backup"
    done = rp.repartition(ckpt, 3, dry_run=False, backup_dir=str(backup), checks=checks,
                          before=scans)
    assert done.applied and done.verified and done.rows_equal and not done.auto_undone, done.lines
    journal = json.loads((backup / "journal.json").read_text())
    assert journal["status"] == "applied"
    # The backup holds only what a repartition could change (Spark only adds files: offsets,
    # commits, new state versions), copied: the query and operator metadata and state schemas;
    # every other file is in the journal's manifest (path, size, time), which the verification
    # and undo check. Nothing of the state versions, offsets or commits is copied.
    copied = {str(f.relative_to(backup / "copy")) for f in (backup / "copy").rglob("*")
              if f.is_file()}
    assert copied and all(rel == "metadata" or rel == ".metadata.crc" or "/_metadata/" in rel
                          for rel in copied), copied
    assert {m["path"]: m["size"] for m in journal["manifest"]} == {
        rel: (Path(path) / rel).stat().st_size for rel in original}
    ckpt.refresh()
    assert current_partitions(ckpt) == 3 and ckpt.last_committed_batch_id == 3
    assert reader_rows(spark, path) == rows_before  # read by Spark's reader, not checksums
    # Spark's own placement: every row where pmod(hash, 3) puts it, as forecast.
    assert [s.per_partition for s in done.after] == [s.after for s in scans]

    # The query continues on 3 partitions and writes what a never-repartitioned run writes.
    df = demo_query(spark, run.workload, run.rows_per_batch)
    with session_conf(spark, provider_conf(run.provider)):
        ours, progress = continue_query(spark, df, path)
        theirs, _ = continue_query(spark, df, reference)
    assert ours == theirs and ours
    assert {op["numShufflePartitions"] for op in progress["stateOperators"]} == {3}
    assert reader_rows(spark, path) == reader_rows(spark, reference)

    # Undo: the original checkpoint, byte for byte; what Spark and the restart wrote goes aside.
    undone = rp.undo(Checkpoint(spark, path), done.journal_path, dry_run=False, force=True)
    assert undone.applied and undone.verified, undone.lines
    assert tree_sha(path) == original
    displaced = next(backup.glob("undo-*/displaced"))
    assert (displaced / "offsets" / "3").is_file() and (displaced / "commits" / "4").is_file()
    summaries = {}
    for name, outcome in (("applied", done), ("undone", undone)):
        summaries[name] = Summary("repartition_state", path, spark.version)
        rp.summarize(summaries[name], outcome)
    applied = summaries["applied"].to_dict()
    assert {k: applied[k] for k in ("status", "num_partitions_before", "num_partitions_after",
                                    "applied", "rows_equal")} == {
        "status": "ok", "num_partitions_before": 2, "num_partitions_after": 3, "applied": True,
        "rows_equal": True}
    assert applied["backup_dir"] == done.backup_dir and applied["journal_path"] == done.journal_path
    assert [f.code for f in summaries["undone"].findings] == ["repartition_undone"]


@pytest.mark.slow
def test_07_takes_an_aggregation_it_never_saw_from_8_to_16(spark, run_notebook, tmp_path):
    """The issue's "done when": a query none of the demos is, repartitioned by the notebook."""
    from pyspark.sql import functions as F
    path, reference = str(tmp_path / "orders"), str(tmp_path / "orders-never-repartitioned")
    df = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 40)
          .option("startTimestamp", DEMO_START_MS).load()
          .groupBy((F.col("value") % 13).alias("store"), (F.col("value") % 3).alias("region"))
          .agg(F.count("*").alias("n"), F.sum("value").alias("total")))
    with session_conf(spark, {"spark.sql.shuffle.partitions": "8", **provider_conf("rocksdb")}):
        for _ in range(3):
            continue_query(spark, df, path, "update")
    shutil.copytree(path, reference)
    age(path)
    original = tree_sha(path)
    rows_before = reader_rows(spark, path)

    result = run_notebook("07_repartition_state", checkpoint_path=path, num_partitions=16,
                          dry_run=False)
    summary = result.summary
    assert summary["num_partitions_before"] == 8 and summary["num_partitions_after"] == 16
    assert summary["applied"] is True and summary["rows_equal"] is True, summary["findings"]
    assert Path(summary["backup_dir"].removeprefix("file:")).is_dir()
    assert summary["journal_path"].startswith(summary["backup_dir"])
    assert summary["status"] == "ok"
    assert reader_rows(spark, path) == rows_before

    ours, progress = continue_query(spark, df, path, "update")
    theirs, _ = continue_query(spark, df, reference, "update")
    assert ours == theirs and ours
    assert progress["stateOperators"][0]["numShufflePartitions"] == 16
    assert reader_rows(spark, path) == reader_rows(spark, reference)

    undone = rp.undo(Checkpoint(spark, path), summary["journal_path"], dry_run=False, force=True)
    assert undone.verified and tree_sha(path) == original
    assert Path(summary["backup_dir"].removeprefix("file:")).is_dir()  # the backup remains


# -- refusals: one line, nothing changed -------------------------------------------------------------
def refused_unchanged(ckpt: Checkpoint, num_partitions: int, tmp_path, **kwargs) -> str:
    local = ckpt.root.removeprefix("file:")
    before = tree_sha(local)
    assert before
    out = rp.repartition(ckpt, num_partitions, dry_run=False, backup_dir=str(tmp_path / "b"),
                         **kwargs)
    assert not out.applied and out.refused and "\n" not in out.refused
    assert tree_sha(local) == before and not (tmp_path / "b").exists()
    return out.refused


def test_each_refusal_changes_nothing(spark, demo_factory, tmp_path):
    run = demo_factory("dedup", "rocksdb", batches=3, rows_per_batch=10, partitions=2)
    path = stopped_copy(run.checkpoint_path, tmp_path / "ckpt")
    ckpt = Checkpoint(spark, path)
    assert refused_unchanged(ckpt, 2, tmp_path).startswith(
        "the query already runs on 2 partitions")
    # Active-looking: a commit written just now (force would go on, as the first test shows).
    os.utime(f"{path}/commits/2")
    assert refused_unchanged(ckpt, 3, tmp_path).startswith("the query looks active")
    age(path)
    # An older Spark: refused with one screen of alternatives (the offsets to start from).
    old = rp.check_requirements(ckpt, 3, spark_version="4.1.1")
    assert old.spark_cannot and not old.ok
    screen = rp.alternatives_lines(ckpt, old)
    assert "Spark 4.1.1" in screen[0] and "Nothing was changed" in screen[0] and len(screen) < 12
    assert any('"offset": 30' in line for line in screen)
    assert refused_unchanged(ckpt, 3, tmp_path, checks=old).startswith("Spark 4.1.1")
    # The last batch in flight: offsets without a commit.
    shutil.move(f"{path}/commits/2", tmp_path / "commit-2")
    assert "has an offsets entry but no commit" in refused_unchanged(ckpt.refresh(), 3, tmp_path)
    shutil.move(tmp_path / "commit-2", f"{path}/commits/2")
    for bad, message in ((-1, "num_partitions=-1 is not valid"),
                         (0, "num_partitions=0 only forecasts")):
        with pytest.raises(RunbookError, match=message) as excinfo:
            rp.repartition(ckpt.refresh(), bad, dry_run=False, force=True,
                           backup_dir=str(tmp_path / "b"))
        assert "\n" not in str(excinfo.value)


def test_a_batch_run_after_the_checks_makes_the_apply_refuse(spark, demo_factory, tmp_path):
    """The apply journals the files the checks listed: a query that ran a batch in between (its
    offsets and commit) makes the checks stale, and the apply refuses with nothing changed."""
    run = demo_factory("dedup", "rocksdb", batches=3, rows_per_batch=10, partitions=2)
    path = stopped_copy(run.checkpoint_path, tmp_path / "ckpt")
    ckpt = Checkpoint(spark, path)
    checks = rp.check_requirements(ckpt, 3)
    assert checks.ok and checks.inventory
    with session_conf(spark, provider_conf(run.provider)):
        continue_query(spark, demo_query(spark, run.workload, run.rows_per_batch), path)
    refused = refused_unchanged(ckpt, 3, tmp_path, checks=checks, before=[])
    assert refused.startswith("the query looks active: its offsets or commits changed since the "
                              "requirements were checked (commits/3 appeared")


@pytest.mark.parametrize("workload,provider,said", [
    ("dedup", "hdfs", "UNSUPPORTED_PROVIDER"),
    ("limit", "rocksdb", "STDS_FAILED_TO_READ_STATE_SCHEMA"),
])
def test_what_spark_refuses_is_refused_before_spark_is_called(spark, demo_factory, tmp_path,
                                                              workload, provider, said):
    run = demo_factory(workload, provider, batches=3, rows_per_batch=10, partitions=2)
    ckpt = Checkpoint(spark, stopped_copy(run.checkpoint_path, tmp_path / "ckpt"))
    assert said in refused_unchanged(ckpt, 3, tmp_path)


def test_spark_failing_midway_is_undone_on_its_own(spark, demo_factory, tmp_path):
    """Spark writes its new offsets entry before it fails (seen with a streaming limit): with the
    runbook's own checks lifted, the failure is undone byte for byte."""
    run = demo_factory("limit", "rocksdb", batches=3, rows_per_batch=10, partitions=2)
    path = stopped_copy(run.checkpoint_path, tmp_path / "ckpt")
    original = tree_sha(path)
    ckpt = Checkpoint(spark, path)
    lifted = Checks(2, 3, requirements=(Requirement("lifted", True, "lifted by this test"),))
    out = rp.repartition(ckpt, 3, dry_run=False, backup_dir=str(tmp_path / "b"), checks=lifted,
                         before=[])
    assert out.applied and not out.verified and out.auto_undone
    assert "NOT verified: Spark's repartition failed" in "\n".join(out.lines)
    assert out.lines[-1].startswith("undone on its own: verified")
    assert tree_sha(path) == original
    assert (tmp_path / "b" / "journal.json").is_file()


def test_spark_refusing_after_its_offsets_entry_leaves_the_checkpoint_stuck(spark, demo_factory,
                                                                           tmp_path):
    """Why 07 checks everything before calling Spark (the playbook's claim, on this Spark):
    Spark's own repartition of an HDFS-backed checkpoint writes a new offsets entry, then refuses
    the provider; the query then fails at restart, and a repartition to another count is refused
    for the abandoned batch."""
    from state_runbooks.demos.checkpoints import demo_query
    from state_runbooks.demos.continuation import continue_query
    run = demo_factory("dedup", "hdfs", batches=3, rows_per_batch=10, partitions=2)
    path = stopped_copy(run.checkpoint_path, tmp_path / "ckpt")
    offsets = sorted(int(p.name) for p in (Path(path) / "offsets").iterdir() if p.name.isdigit())
    with pytest.raises(Exception, match="UNSUPPORTED_PROVIDER"):
        spark._streamingCheckpointManager.repartition(path, 3, True)
    after = sorted(int(p.name) for p in (Path(path) / "offsets").iterdir() if p.name.isdigit())
    assert after == offsets + [offsets[-1] + 1]
    with pytest.raises(RunbookError, match="STREAMING_UNFINISHED_REPARTITION_DETECTED"):
        continue_query(spark, demo_query(spark, "dedup", 10), path)
    with pytest.raises(Exception, match="LAST_BATCH_ABANDONED_REPARTITION"):
        spark._streamingCheckpointManager.repartition(path, 4, True)
