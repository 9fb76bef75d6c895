"""Rewrite state (09) on real checkpoints: Spark's state rewriter, checked by reflection, called,
verified row by row, continued and undone; and every refusal, with nothing changed.

What Spark does here is Spark's: each case writes a checkpoint with a real query, rewrites it with
the installed Spark, restarts the query on the result and compares its output and state with a
copy that was never rewritten (a provider move) or with what the drop means (the dropped keys
come through again). Checksums are computed with hashlib on the local files, independently of the
library.
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
from state_runbooks.demos.checkpoints import demo_query
from state_runbooks.demos.continuation import continue_query
from state_runbooks.runbooks import rewrite_state as rs
from state_runbooks.runbooks.rewrite_state.demo import (
    build_dedup_demo,
    dedup_query,
    operator_provider,
)
from state_runbooks.runbooks.rewrite_state.plan import plan_rewrite
from state_runbooks.running.results import Summary
from state_runbooks.safety import state_rewriter as rewriter
from state_runbooks.session.spark_session import session_conf

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
WITH_PARTITION = ("key", "value", "partition_id")  # Spark's reader: the rows and where they are


def stopped_copy(path: str, target: Path) -> str:
    shutil.copytree(path.removeprefix("file:"), target)
    age(target)
    return str(target)




def pinned_provider(path: str) -> str:
    newest = max(int(n) for n in os.listdir(f"{path}/offsets") if n.isdigit())
    return json.loads(Path(f"{path}/offsets/{newest}").read_text().splitlines()[1])["conf"][
        "spark.sql.streaming.stateStore.providerClass"]


@pytest.fixture(scope="module")
def dedup_demo(spark, tmp_path_factory) -> str:
    """The deduplication demo (RocksDB, 3 batches, ids 0..29), built once: each test changes a
    copy of it."""
    path = str(tmp_path_factory.mktemp("dedup") / "ckpt")
    build_dedup_demo(spark, path, batches=3)
    return path


# -- the rewriter itself, on the installed Spark ----------------------------------------------------
def test_the_rewriter_is_the_one_verified_and_takes_a_python_transform(spark, dedup_demo,
                                                                       tmp_path):
    """Reflection finds the constructor this runbook pins; a Python transform reaches Spark
    through the gateway's callback, sees every store's raw rows and what it returns is written:
    here a filter written in Python, proven on real state (the rows read back)."""
    assert ".".join(spark.version.split(".")[:2]) in rewriter.VERIFIED_SPARK
    cls = spark._jvm.java.lang.Class.forName(rewriter.REWRITER_CLASS)
    shapes = [tuple(str(t.getName()) for t in c.getParameterTypes()) for c in cls.getConstructors()]
    assert shapes == [rewriter.VERIFIED_CONSTRUCTOR]
    assert rewriter.rewriter_presence(spark).ok
    path = stopped_copy(dedup_demo, tmp_path / "dedup")
    shutil.copy(f"{path}/offsets/2", f"{path}/offsets/3")
    seen = []

    def keep_even(raw, operator_id, store):
        seen.append((operator_id, store, raw.columns))
        return raw.where("partition_key.id % 2 = 0")

    ran = rewriter.run_rewriter(spark, "file:" + path, 2, "file:" + path, 3, keep_even)
    shutil.copy(f"{path}/commits/2", f"{path}/commits/3")
    assert ran.stores == [(0, "default")]
    assert seen == [(0, "default", list(rewriter.RAW_COLUMNS))]
    ids = sorted(r.key.id for r in spark.read.format("statestore").option("batchId", 3)
                 .load(path).collect())
    assert ids == list(range(0, 30, 2))


# -- the two cases ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hdfs_aggregation(spark, tmp_path_factory):
    """A windowed count per user on the HDFS-backed provider, 3 batches, 2 partitions."""
    from state_runbooks.demos.checkpoints import build_demo_checkpoint
    folder = tmp_path_factory.mktemp("agg")
    run = build_demo_checkpoint(spark, "window_agg", str(folder / "ckpt"), 3, "hdfs", 10, 2)
    age(folder / "ckpt")
    return run


@tiers.EXTENDED  # make test: the same move through the notebook (test_09_moves_an_aggregation...)
def test_an_hdfs_aggregation_moves_to_rocksdb_at_a_new_location_and_continues_as_before(
        spark, hdfs_aggregation, tmp_path):
    path = stopped_copy(hdfs_aggregation.checkpoint_path, tmp_path / "ckpt")
    reference = stopped_copy(path, tmp_path / "never-rewritten")
    output = str(tmp_path / "on-rocksdb")
    original = tree_sha(path)
    rows_before = reader_rows(spark, path, WITH_PARTITION)
    ckpt = Checkpoint(spark, path)

    checks = rs.check_requirements(ckpt, "rocksdb", "", output)
    assert checks.ok, rs.requirement_lines(checks)
    plan = plan_rewrite(ckpt)
    dry = rs.rewrite(ckpt, "rocksdb", "", output, checks=checks, plan=plan)
    assert not dry.applied and not os.path.exists(output) and tree_sha(path) == original

    done = rs.rewrite(ckpt, "rocksdb", "", output, dry_run=False, checks=checks, plan=plan)
    assert done.applied and done.verified and done.rows_ok and not done.auto_undone, done.lines
    assert done.backup_dir is None and done.journal_path is None
    assert tree_sha(path) == original  # the original only read
    assert pinned_provider(output) == ROCKSDB and pinned_provider(path) != ROCKSDB
    assert reader_rows(spark, output, WITH_PARTITION) == rows_before  # Spark's reader, every row
    assert any(f.endswith(".zip") for f in os.listdir(f"{output}/state/0/0"))

    # The query continues there exactly as on a copy never rewritten, on RocksDB.
    df = demo_query(spark, "window_agg", 10)
    there = continue_query(spark, df, output, batches=3, mode="update")
    here = continue_query(spark, df, reference, batches=3, mode="update")
    assert there.output == here.output and len(there.output) >= 10
    assert operator_provider(there.progress[-1]) == "rocksdb"
    assert operator_provider(here.progress[-1]) == "hdfs"
    assert (reader_rows(spark, output, WITH_PARTITION)
            == reader_rows(spark, reference, WITH_PARTITION))

    summary = Summary("rewrite_state", path, spark.version)
    rs.summarize(summary, done)
    got = summary.to_dict()
    assert {k: got[k] for k in ("status", "applied", "provider_before", "provider_after",
                                "rows_before", "rows_after", "rows_dropped", "rows_equal",
                                "backup_dir", "journal_path")} == {
        "status": "ok", "applied": True, "provider_before": "hdfs", "provider_after": "rocksdb",
        "rows_before": {"0/default": 10}, "rows_after": {"0/default": 10},
        "rows_dropped": {"0/default": 0}, "rows_equal": True, "backup_dir": None,
        "journal_path": None}
    assert got["output_path"] == "file:" + output

    # Undo at a new location: the location goes, the original was never touched.
    undone = rs.undo(ckpt, output_path=output, dry_run=False, force=True)
    assert undone.verified and not os.path.exists(output) and tree_sha(path) == original


def test_a_deduplication_loses_exactly_the_dropped_keys_in_place_which_come_through_again(
        spark, dedup_demo, tmp_path):
    path = stopped_copy(dedup_demo, tmp_path / "dedup")
    reference = stopped_copy(path, tmp_path / "never-rewritten")
    original = tree_sha(path)
    before = reader_rows(spark, path, WITH_PARTITION)["0/default"]
    ckpt = Checkpoint(spark, path)

    backup = tmp_path / "backup"
    done = rs.rewrite(ckpt, "", "key.id < 10", dry_run=False, backup_dir=str(backup))
    assert done.applied and done.verified and done.rows_ok, done.lines
    journal = json.loads((backup / "journal.json").read_text())
    assert journal["status"] == "applied" and journal["drop_keys_where"] == "key.id < 10"
    assert {m["path"] for m in journal["manifest"]} == set(original)
    after = reader_rows(spark, path, WITH_PARTITION)["0/default"]
    assert sorted(after) == sorted(r for r in before if "id=" not in r or
                                   int(r.split("id=")[1].split(")")[0]) >= 10)
    assert len(before) - len(after) == 10

    # Batch 3 brings ids 0..9 again: they come through here, not on the copy never rewritten.
    again = continue_query(spark, dedup_query(spark), path)
    never = continue_query(spark, dedup_query(spark), reference)
    assert [r.split(",")[0] for r in again.output] == [f"Row(id={i}" for i in range(10)]
    assert never.output == []

    undone = rs.undo(Checkpoint(spark, path), done.journal_path, dry_run=False, force=True)
    assert undone.applied and undone.verified, undone.lines
    assert tree_sha(path) == original
    assert backup.is_dir()


def test_many_keys_are_dropped_through_a_shuffle_and_placed_again(spark, dedup_demo, tmp_path,
                                                                  monkeypatch):
    """Past the broadcast limit the drop is a shuffle join: the rows are placed again with Spark's
    rule for state, and the query still finds every key (the dropped ones come through)."""
    from state_runbooks.runbooks.rewrite_state import plan as plan_module
    from state_runbooks.runbooks.rewrite_state import transforms
    monkeypatch.setattr(plan_module, "BROADCAST_KEYS", 0)
    monkeypatch.setattr(transforms, "BROADCAST_KEYS", 0)
    path = stopped_copy(dedup_demo, tmp_path / "dedup")
    done = rs.rewrite(Checkpoint(spark, path), "", "key.id % 3 = 0", dry_run=False,
                      backup_dir=str(tmp_path / "b"))
    assert done.verified and done.rows_ok, done.lines
    again = continue_query(spark, dedup_query(spark), path)
    assert [int(r.split("id=")[1].split(",")[0]) for r in again.output] == [0, 3, 6, 9]


def test_a_failed_verification_is_undone_on_its_own_byte_for_byte(spark, dedup_demo, tmp_path,
                                                                  monkeypatch):
    """A transform that writes fewer rows than planned: not verified, undone, the checkpoint as
    it was."""
    from state_runbooks.runbooks.rewrite_state import apply
    path = stopped_copy(dedup_demo, tmp_path / "dedup")
    original = tree_sha(path)
    monkeypatch.setattr(apply, "make_transform",
                        lambda *_: (lambda raw, op, store: raw.where("partition_key.id > 3")))
    out = rs.rewrite(Checkpoint(spark, path), "", "key.id < 2", dry_run=False,
                     backup_dir=str(tmp_path / "b"))
    assert out.applied and not out.verified and out.auto_undone
    assert any(line.startswith("NOT verified: 0/default") for line in out.lines)
    assert out.lines[-1].startswith("undone on its own: verified")
    assert tree_sha(path) == original


# -- the other operators ------------------------------------------------------------------------------
@pytest.mark.slow
# make test: session windows (a join's four stores are rewritten in the test above)
@pytest.mark.parametrize("workload", tiers.tiered(["join", "session_window"], {"session_window"}))
def test_an_hdfs_operator_moves_to_rocksdb_and_continues_as_before(spark, shape_demo, tmp_path,
                                                                   workload):
    run = shape_demo(workload)
    path = stopped_copy(run.checkpoint_path, tmp_path / "ckpt")
    reference = stopped_copy(path, tmp_path / "never-rewritten")
    output = str(tmp_path / "on-rocksdb")
    rows_before = reader_rows(spark, path, WITH_PARTITION)
    done = rs.rewrite(Checkpoint(spark, path), "rocksdb", "", output, dry_run=False)
    assert done.verified and done.rows_ok, done.lines
    assert reader_rows(spark, output, WITH_PARTITION) == rows_before
    assert len(rows_before) == (4 if workload == "join" else 1)
    df = demo_query(spark, workload, run.rows_per_batch)
    there = continue_query(spark, df, output, batches=2)
    here = continue_query(spark, df, reference, batches=2)
    assert there.output == here.output
    assert (reader_rows(spark, output, WITH_PARTITION)
            == reader_rows(spark, reference, WITH_PARTITION))


@pytest.mark.slow
def test_a_join_loses_a_key_on_all_four_stores(spark, demo_factory, tmp_path):
    """A drop on a join (on RocksDB, in place): the key's rows go from both sides' counts and
    rows, so the stores stay consistent; the query restarts on it."""
    run = demo_factory("join", "rocksdb", batches=3, rows_per_batch=10, partitions=2)
    path = stopped_copy(run.checkpoint_path, tmp_path / "ckpt")
    ckpt = Checkpoint(spark, path)
    plan = plan_rewrite(ckpt, "key.field0 = 'ord-27'")
    assert sum(plan.rows_dropped.values()) >= 4 and all(
        plan.rows_dropped[label] >= 1 for label in plan.rows_dropped)
    done = rs.rewrite(ckpt, "", "key.field0 = 'ord-27'", dry_run=False, plan=plan,
                      backup_dir=str(tmp_path / "b"))
    assert done.verified and done.rows_ok, done.lines
    rows = reader_rows(spark, path, WITH_PARTITION)
    assert not any("ord-27'" in r for store in rows.values() for r in store)
    with session_conf(spark, {"spark.sql.streaming.join.stateFormatVersion": "2"}):
        continue_query(spark, demo_query(spark, "join", 10), path)


@pytest.mark.slow
def test_transform_with_state_drops_every_variable_and_timer_of_a_key(spark, shape_demo,
                                                                    tmp_path):
    """transformWithState (RocksDB only): dropping a user removes its value, list and map
    variables and its timer together; the query restarts on it."""
    run = shape_demo("transform_with_state")
    path = stopped_copy(run.checkpoint_path, tmp_path / "ckpt")
    ckpt = Checkpoint(spark, path)
    plan = plan_rewrite(ckpt, "key.user_id = 'user-1'")
    assert plan.rows_dropped and all(v >= 1 for v in plan.rows_dropped.values()), plan.stores
    done = rs.rewrite(ckpt, "", "key.user_id = 'user-1'", dry_run=False, plan=plan,
                      backup_dir=str(tmp_path / "b"))
    assert done.verified and done.rows_ok, done.lines
    continue_query(spark, demo_query(spark, "transform_with_state", 10), path)


@pytest.mark.slow
@tiers.EXTENDED  # make test: transformWithState's variables and timers, in the test above
def test_transform_with_state_in_pandas_is_rewritten_at_a_new_location(spark, shape_demo,
                                                                       tmp_path):
    """transformWithStateInPandas, a key dropped at a new location: exactly its rows gone there,
    the original untouched, and the query goes on at the new location."""
    run = shape_demo("transform_with_state_pandas")
    path = stopped_copy(run.checkpoint_path, tmp_path / "ckpt")
    before = tree_sha(path)
    ckpt = Checkpoint(spark, path)
    output = str(tmp_path / "rewritten")
    plan = plan_rewrite(ckpt, "key.user_id = 'user-1'")
    assert plan.rows_dropped and all(v >= 1 for v in plan.rows_dropped.values()), plan.stores
    done = rs.rewrite(ckpt, "", "key.user_id = 'user-1'", output, dry_run=False, plan=plan)
    assert done.applied and done.verified and done.rows_ok, done.lines
    assert tree_sha(path) == before
    continue_query(spark, demo_query(spark, "transform_with_state_pandas", 10), output)


# -- refusals: one line, nothing changed ----------------------------------------------------------------
def refused_unchanged(ckpt: Checkpoint, tmp_path, *args, **kwargs) -> str:
    local = ckpt.root.removeprefix("file:")
    before = tree_sha(local)
    out = rs.rewrite(ckpt, *args, dry_run=False, backup_dir=str(tmp_path / "b"), **kwargs)
    assert not out.applied and out.refused and "\n" not in out.refused
    assert tree_sha(local) == before and not (tmp_path / "b").exists()
    return out.refused


def test_each_refusal_changes_nothing(spark, hdfs_aggregation, tmp_path):
    path = stopped_copy(hdfs_aggregation.checkpoint_path, tmp_path / "ckpt")
    ckpt = Checkpoint(spark, path)
    assert refused_unchanged(ckpt, tmp_path, "", "key.user_id = 'user-1'").startswith(
        "the checkpoint pins the hdfs provider, and Spark's rewriter writes with RocksDB only")
    assert refused_unchanged(ckpt, tmp_path).startswith("nothing asked")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    assert "exists and is not empty" in refused_unchanged(ckpt, tmp_path, "rocksdb", "",
                                                          str(tmp_path / "taken"))
    assert "overlaps the checkpoint" in refused_unchanged(ckpt, tmp_path, "rocksdb", "",
                                                          path + "/moved")
    os.utime(f"{path}/commits/2")  # written just now: the query looks active
    assert refused_unchanged(ckpt, tmp_path, "rocksdb").startswith("the query looks active")
    age(path)
    shutil.move(f"{path}/commits/2", tmp_path / "commit-2")
    assert "has an offsets entry but no commit" in refused_unchanged(ckpt.refresh(), tmp_path,
                                                                     "rocksdb")
    shutil.move(tmp_path / "commit-2", f"{path}/commits/2")
    # An older Spark: refused with one screen of alternatives (the offsets to start from).
    old = rs.check_requirements(ckpt.refresh(), "rocksdb", spark_version="4.1.1")
    assert old.spark_cannot and not old.ok
    screen = rs.alternatives_lines(ckpt, old)
    assert "Spark 4.1.1" in screen[0] and "Nothing was changed" in screen[0] and len(screen) < 12
    assert any("drain and switch" in line for line in screen)
    assert refused_unchanged(ckpt, tmp_path, "rocksdb", checks=old).startswith("Spark 4.1.1")
    for bad, message in ((("hdfs",), "target_provider='hdfs' is not valid"),
                         (("rocksdb", "key.user_id = = 1"),
                          r"is not a SQL condition: \[PARSE_SYNTAX_ERROR\] Syntax error"),
                         (("rocksdb", "no_such_column > 1"), "resolves on no store")):
        with pytest.raises(RunbookError, match=message) as excinfo:
            rs.rewrite(ckpt, *bad, dry_run=False, force=True)
        assert "\n" not in str(excinfo.value)


def test_a_drop_that_would_empty_a_store_or_matches_nothing(spark, dedup_demo, tmp_path):
    """A drop matching every key of a store is refused in one line unless allowed; a drop
    matching no key changes nothing at all (no batch, no backup) and says so."""
    path = stopped_copy(dedup_demo, tmp_path / "dedup")
    ckpt = Checkpoint(spark, path)
    original = tree_sha(path)
    everything = refused_unchanged(ckpt, tmp_path, "", "key.id >= 0")
    assert everything.startswith("drop_keys_where='key.id >= 0' matches every key of 0/default "
                                 "(30 rows): the state would be empty; pass allow_empty_state")
    nothing = rs.rewrite(ckpt, "", "key.id > 1000", dry_run=False, backup_dir=str(tmp_path / "b"))
    assert not nothing.applied and not nothing.refused
    assert nothing.lines == ["nothing to do: drop_keys_where='key.id > 1000' matches no key, and "
                             "nothing else is asked; nothing was changed (no new batch, no "
                             "backup)"]
    summary = Summary("rewrite_state", ckpt.root, spark.version)
    rs.summarize(summary, nothing)
    assert summary.status == "ok" and not summary.change_failed
    assert tree_sha(path) == original and not (tmp_path / "b").exists()
    emptied = rs.rewrite(ckpt, "", "key.id >= 0", dry_run=False, backup_dir=str(tmp_path / "b"),
                         allow_empty_state=True)
    assert emptied.applied and emptied.verified and emptied.rows_ok, emptied.lines
    assert reader_rows(spark, path, WITH_PARTITION) == {"0/default": []}


def test_an_undo_right_after_the_rewrite_is_not_refused_for_its_own_batch(spark, dedup_demo,
                                                                         tmp_path):
    """The undo of the runbook's own change, unforced: the journal names the batch the rewrite
    wrote, so that batch is no sign of a live query; the undo says only what it does, and the
    summary then describes the state it restored. With nothing left to undo, it says so."""
    path = stopped_copy(dedup_demo, tmp_path / "dedup")
    original = tree_sha(path)
    ckpt = Checkpoint(spark, path)
    done = rs.rewrite(ckpt, "", "key.id < 10", dry_run=False, backup_dir=str(tmp_path / "b"))
    assert done.verified, done.lines
    journal = json.loads((tmp_path / "b" / "journal.json").read_text())
    assert set(journal["written"]) >= {"offsets/3", "commits/3"}
    undone = rs.undo(ckpt.refresh(), done.journal_path, dry_run=False)  # not forced
    assert undone.applied and undone.verified and not undone.refused, undone.lines
    assert not any("requirement" in line or "Spark is not called" in line
                   for line in undone.lines)
    assert tree_sha(path) == original
    summary = Summary("rewrite_state", ckpt.root, spark.version)
    rs.summarize(summary, undone)
    details = summary.to_dict()
    assert (details["rows_after"], details["rows_before"]) == (
        {"0/default": 30}, {"0/default": 20})
    assert details["undone"] is True and details["applied"] is False
    again = rs.undo(Checkpoint(spark, path), str(tmp_path / "b"), dry_run=False)
    assert not again.applied and not again.refused
    assert again.lines[-1].startswith("nothing to undo: journal") and "already undone" in \
        again.lines[-1]


def test_what_the_rewriter_does_not_handle_is_refused_before_it_is_called(spark, shape_demo,
                                                                          tmp_path):
    run = shape_demo("limit")
    ckpt = Checkpoint(spark, stopped_copy(run.checkpoint_path, tmp_path / "ckpt"))
    assert "streaming limit" in refused_unchanged(ckpt, tmp_path, "rocksdb", "",
                                                  str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_spark_connect_is_told_in_one_line(spark, connect_spark, on_connect):
    """(``spark`` first: the classic session stays the one the other tests get.)"""
    with on_connect():
        presence = rewriter.rewriter_presence(connect_spark)
    assert not presence.ok and "Spark Connect" in presence.seen and "\n" not in presence.seen


@pytest.mark.slow
def test_09_moves_an_aggregation_it_never_saw_to_rocksdb(spark, run_notebook, tmp_path):
    """Through the notebook's parameters: an HDFS-backed aggregation on a composite key moved to
    RocksDB at a new location, and continued there as the never-moved run continues."""
    from pyspark.sql import functions as F

    from state_runbooks.demos.checkpoints import DEMO_START_MS
    path, output = str(tmp_path / "orders"), str(tmp_path / "orders-rocksdb")
    df = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 40)
          .option("startTimestamp", DEMO_START_MS).load()
          .groupBy((F.col("value") % 13).alias("store"), (F.col("value") % 3).alias("region"))
          .agg(F.count("*").alias("n"), F.sum("value").alias("total")))
    continue_query(spark, df, path, batches=3, provider="hdfs", partitions=4, mode="update")
    reference = stopped_copy(path, tmp_path / "orders-never-rewritten")
    age(path)
    original, rows_before = tree_sha(path), reader_rows(spark, path, WITH_PARTITION)
    summary = run_notebook("09_rewrite_state", checkpoint_path=path, target_provider="rocksdb",
                           output_path=output, dry_run=False).summary
    assert summary["status"] == "ok" and summary["applied"] is True, summary["findings"]
    assert summary["rows_equal"] is True and summary["provider_after"] == "rocksdb"
    assert tree_sha(path) == original and reader_rows(spark, output, WITH_PARTITION) == rows_before
    there = continue_query(spark, df, output, batches=2, mode="update")
    here = continue_query(spark, df, reference, batches=2, mode="update")
    assert there.output == here.output and there.output
    assert (reader_rows(spark, output, WITH_PARTITION)
            == reader_rows(spark, reference, WITH_PARTITION))


@pytest.mark.slow
@tiers.EXTENDED  # make test: dropping keys in place in the tests above, and in 09's demo
def test_09_drops_chosen_keys_of_a_deduplication_it_never_saw(spark, run_notebook, tmp_path):
    """Through the notebook's parameters: a deduplication's chosen keys dropped in place, which
    then come through again; undone byte for byte."""
    from pyspark.sql import functions as F

    from state_runbooks.demos.checkpoints import DEMO_START_MS
    dedup = str(tmp_path / "events")
    events = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 20)
              .option("startTimestamp", DEMO_START_MS).load()
              .select((F.col("value") % 50).alias("user"), "value").dropDuplicates(["user"]))
    continue_query(spark, events, dedup, batches=2, provider="rocksdb", partitions=3)
    age(dedup)
    original = tree_sha(dedup)
    summary = run_notebook("09_rewrite_state", checkpoint_path=dedup,
                           drop_keys_where="key.user < 5", dry_run=False,
                           summary_path=str(tmp_path / "drop.json")).summary
    assert summary["applied"] is True and summary["rows_as_planned"] is True
    assert summary["rows_dropped"] == {"0/default": 5} and summary["rows_before"] == {
        "0/default": 40}
    assert Path(summary["backup_dir"].removeprefix("file:")).is_dir()
    again = continue_query(spark, events, dedup, batches=1)  # values 40..59: users 40..49, 0..9
    users = sorted(int(r.split("user=")[1].split(",")[0]) for r in again.output)
    assert users == list(range(5)) + list(range(40, 50))
    undone = rs.undo(Checkpoint(spark, dedup), summary["journal_path"], dry_run=False, force=True)
    assert undone.verified and tree_sha(dedup) == original
