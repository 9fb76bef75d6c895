"""Runbook 10 (migrate state) on checkpoints written by real queries: a change Spark refuses at
restart is migrated, the changed query restarts on the result and continues, and its state and
output equal those of the changed query run from scratch over the same input, where the mapping
makes them equal, or differ from them in the filled fields alone; in place is undone byte for
byte; every refusal changes nothing. The queries are in tests/jobs/migration_jobs.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import tiers
from checkpoint_trees import age, reader_rows, tree_sha
from messages import one_line

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.demos.continuation import continue_query
from state_runbooks.runbooks import migrate_state as ms
from state_runbooks.running.results import Summary

JOBS = str(Path(__file__).resolve().parents[1] / "jobs" / "migration_jobs.py")
OLD_BATCHES, MORE = 3, 2
# Five state partitions: a key whose type widens then hashes to another partition for every user
# (on two, int and bigint happen to agree for users 0 to 6).
PARTITIONS = 5
WITH_PARTITION = ("key", "value", "partition_id")


def write_old(spark, path: str, function: str, provider: str = "rocksdb") -> str:
    """The old query's checkpoint: OLD_BATCHES batches, stopped an hour ago."""
    job = ms.load_job(spark, JOBS, function)
    continue_query(spark, job.df, path, batches=OLD_BATCHES, provider=provider,
                   partitions=PARTITIONS, mode=job.output_mode)
    age(path)
    return path


def migrate(spark, path: str, function: str, fill: dict, output_path: str = "",
            target_provider: str = "", dry_run: bool = False):
    job = ms.load_job(spark, JOBS, function)
    ckpt = Checkpoint(spark, path)
    change = ms.compare_schemas(spark, ckpt, job, fill)
    checks = ms.check_requirements(ckpt, change, target_provider, output_path)
    plan, checks = ms.plan_unless_active(ckpt, checks, change, fill)
    out = ms.migrate(ckpt, checks, change, plan, fill, job, dry_run=dry_run)
    change.remove_fresh()
    return job, change, plan, checks, out


def from_scratch(spark, job, path: str):
    """The changed query from nothing over the same input: the old batches, then MORE more
    (their output returned)."""
    continue_query(spark, job.df, path, batches=OLD_BATCHES, provider="rocksdb",
                   partitions=PARTITIONS, mode=job.output_mode)
    return continue_query(spark, job.df, path, batches=MORE, mode=job.output_mode)


CASES = [
    # old query, changed query, fill, provider, in place
    tiers.case("per_user", "per_user_bigint", {}, "rocksdb", True, core=True,
               id="aggregation key widened, in place"),
    tiers.case("per_user", "per_tenant_and_user", {"key.tenant": "'acme'"}, "hdfs", False,
               core=True, id="aggregation key column added, from HDFS to a new location"),
    tiers.case("first_of_user", "first_of_user_bigint", {}, "rocksdb", False, core=True,
               id="deduplication key widened"),
    tiers.case("first_in_watermark", "first_in_watermark_bigint", {}, "rocksdb", False,
               core=False, id="deduplication within watermark key widened"),
    tiers.case("sessions", "sessions_bigint", {}, "rocksdb", True, core=False,
               id="session window key widened, in place"),
    tiers.case("pandas_counts", "pandas_counts_bigint", {}, "rocksdb", False, core=False,
               id="applyInPandasWithState state widened"),
    tiers.case("processed", "processed_bigint", {}, "rocksdb", True, core=False,
               id="transformWithStateInPandas value variable widened, in place"),
    tiers.case("joined", "joined_bigint", {}, "rocksdb", False, core=False,
               id="stream-stream join key widened"),
]


@pytest.mark.parametrize(("old", "new", "fill", "provider", "in_place"), CASES)
def test_a_migrated_query_continues_as_a_run_from_scratch(spark, tmp_path, old, new, fill,
                                                          provider, in_place):
    path = write_old(spark, str(tmp_path / "old"), old, provider)
    before = tree_sha(path)
    output = "" if in_place else str(tmp_path / "migrated")
    target = "rocksdb" if provider == "hdfs" else ""
    job, change, plan, checks, out = migrate(spark, path, new, fill, output, target)
    assert change.spark_refuses in ("STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",
                                    "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE")
    assert out.applied and out.verified and not out.auto_undone, out.lines
    assert out.restart_check == "passes"
    result = output or path
    if not in_place:
        assert tree_sha(path) == before  # the original only read
    there = continue_query(spark, job.df, result, batches=MORE, mode=job.output_mode)
    scratch = str(tmp_path / "scratch")
    here = from_scratch(spark, job, scratch)
    # The same state, each row in the same partition, and the same output.
    assert reader_rows(spark, result, WITH_PARTITION) == reader_rows(spark, scratch,
                                                                     WITH_PARTITION)
    assert there.output == here.output
    if in_place:
        undone = ms.undo(Checkpoint(spark, path), out.journal_path, dry_run=False, force=True)
        assert undone.verified and tree_sha(path) == before


def test_a_key_change_moves_rows_to_the_partition_spark_looks_in(spark, tmp_path):
    """int and bigint hash differently: the plan says which rows move, and the rows read back
    sit where a run from scratch keeps them (the test above compares every row's partition)."""
    path = write_old(spark, str(tmp_path / "old"), "per_user")
    _job, _change, plan, _checks, out = migrate(spark, path, "per_user_bigint", {},
                                                dry_run=True)
    assert not out.applied and plan.stores[0].moved == 7  # every user, on five partitions
    assert plan.rows_before == plan.rows_after == {"0/default": 7}


@tiers.EXTENDED
def test_an_added_aggregate_is_filled_and_then_carries_on(spark, tmp_path):
    """value.max from the fill (NULL, what max starts from): after the migration it holds the
    largest amount of the events since, where a run from scratch holds the largest of all."""
    path = write_old(spark, str(tmp_path / "old"), "per_user")
    output = str(tmp_path / "migrated")
    job, _change, _plan, _checks, out = migrate(spark, path, "per_user_with_largest",
                                                {"value.max": "NULL"}, output)
    assert out.verified, out.lines
    continue_query(spark, job.df, output, batches=MORE, mode=job.output_mode)
    state = {r.key.user: r.value for r in spark.read.format("statestore").load(output).collect()}
    later = range(10 * OLD_BATCHES, 10 * (OLD_BATCHES + MORE))  # the ids of the batches since
    for user, value in state.items():
        assert value["max"] == max(v % 100 for v in later if v % 7 == user)
        assert value["count"] == len([v for v in range(10 * (OLD_BATCHES + MORE)) if v % 7 == user])


def test_every_refusal_changes_nothing(spark, tmp_path):
    path = write_old(spark, str(tmp_path / "old"), "per_user")
    wide = write_old(spark, str(tmp_path / "wide"), "per_user_bigint")
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "file").write_text("x")
    before = {p: tree_sha(p) for p in (path, wide)}
    refusals = {
        "lossy": (wide, "per_user_narrowed", {}, "", "key.user: bigint -> int can lose values"),
        "no source": (path, "per_tenant_and_user", {}, "", "key.tenant (string) has no source"),
        "one key for two": (path, "per_tenant_and_user", {"key.tenant": "'acme'",
                                                          "key.user": "0"}, "",
                            "rows the key of another row"),
        "operator added": (path, "deduplicated_per_user", {}, "", "is added by the changed query"),
        "nothing to do": (path, "per_user", {}, "", "Spark's restart check passes and no store "
                                                    "changes"),
        "unknown fill": (path, "per_user_bigint", {"value.nope": "1"}, "",
                         "fill names value.nope, not a field"),
        "output not empty": (path, "per_user_bigint", {}, str(occupied), "is not empty"),
    }
    for name, (where, function, fill, output, said) in refusals.items():
        _job, _change, _plan, _checks, out = migrate(spark, where, function, fill, output)
        assert not out.applied and out.refused, name
        assert said in out.refused and "\n" not in out.refused, (name, out.refused)
    with pytest.raises(RunbookError) as excinfo:
        migrate(spark, path, "per_tenant_and_user", {"key.tenant": "no_such_column"})
    assert "the mapping of 0/default cannot be evaluated" in one_line(excinfo)
    assert {p: tree_sha(p) for p in (path, wide)} == before


def test_over_spark_connect_the_change_is_unknown_and_nothing_changes(spark, tmp_path,
                                                                       on_connect):
    path = write_old(spark, str(tmp_path / "old"), "per_user")
    before = tree_sha(path)
    with on_connect() as connect:
        job = ms.load_job(connect, JOBS, "per_user_bigint")
        ckpt = Checkpoint(connect, path)
        change = ms.compare_schemas(connect, ckpt, job, {})
        checks = ms.check_requirements(ckpt, change)
        out = ms.migrate(ckpt, checks, change, None, {}, job, dry_run=False)
        summary = Summary("migrate_state", ckpt.root, connect.version)
        ms.summarize(summary, out)
    assert not checks.get("planning").ok and checks.spark_cannot
    assert checks.get("something").seen.startswith("not known here")
    assert not out.applied and out.refused
    assert summary.details["spark_restart_check"] is None and summary.status != "ok"
    assert tree_sha(path) == before


@pytest.mark.slow
def test_the_notebook_migrates_with_a_fill_given_as_papermill_passes_it(spark, tmp_path,
                                                                       run_notebook):
    """-p fill '<json>' and -p dry_run false, at a new location; the summary for a scheduler."""
    path = write_old(spark, str(tmp_path / "old"), "per_user")
    output = str(tmp_path / "migrated")
    result = run_notebook("10_migrate_state", checkpoint_path=path, query_file=JOBS,
                          query_function="per_user_with_largest",
                          fill=json.dumps({"value.max": "NULL"}), output_path=output,
                          dry_run="false", fail_on="warning")
    summary = result.summary
    assert summary["status"] == "ok" and summary["applied"] and summary["verified"]
    assert summary["restart_check_after"] == "passes"
    store = summary["stores"]["0/default"]
    assert (store["rows_before"], store["rows_after"]) == (7, 7)
    assert {"field": "value.max", "source": "fill: NULL", "kind": "fill"} in store["fields"]
    assert Checkpoint(spark, output).last_committed_batch_id == OLD_BATCHES
