"""Checkpoint format v2 (``spark.sql.streaming.stateStore.checkpointFormatVersion=2``, RocksDB):
state files named ``<version>_<unique id>``, commits naming the ids, and nothing in the offsets
log saying so. On real v2 checkpoints every runbook that reads state counts every store exactly
(against Spark's reader with the session set as the checkpoint needs), calls a healthy one healthy
and plans no move on it; 05's repair and 07's repartition, applied, are followed by a restart that
gives the state of a run that never broke or was never changed.
"""
from __future__ import annotations

import shutil

import pytest
import tiers
from checkpoint_trees import state_differences

from state_runbooks.common.spark_settings import CHECKPOINT_FORMAT_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.state_loads import load_units
from state_runbooks.demos import faults
from state_runbooks.demos.checkpoints import build_demo_checkpoint, run_demo_batches
from state_runbooks.runbooks import estimate_state_size as sizing
from state_runbooks.runbooks import inspect_state
from state_runbooks.runbooks import recover_corrupted_state as recovery
from state_runbooks.runbooks import repartition_state as rp
from state_runbooks.runbooks.recover_corrupted_state.report import resume_batch_id
from state_runbooks.session.spark_session import session_conf

V2 = {CHECKPOINT_FORMAT_CONF: "2"}
BATCHES = 4
# A join and transformWithState in format v2 are shapes of the checkpoint corpus, where every
# runbook reads them (test_checkpoint_corpus.py); these two are not.
SHAPES = [("dedup", "rocksdb_changelog"), ("two_operators", "rocksdb")]


@pytest.fixture(scope="module")
def v2_demo(spark, tmp_path_factory):
    cache = {}

    def get(workload, provider):
        if (workload, provider) not in cache:
            folder = tmp_path_factory.mktemp(f"v2-{workload}-{provider}")
            cache[workload, provider] = build_demo_checkpoint(
                spark, workload, str(folder / "checkpoint"), BATCHES, provider, 20, 2,
                extra_conf=V2)
        return cache[workload, provider]
    return get


def _bare_counts(spark, ckpt: Checkpoint) -> dict[str, int]:
    """Rows per unit from Spark's reader, the session set for v2 by hand."""
    counts = {}
    with session_conf(spark, V2):
        for unit in load_units(ckpt):
            reader = spark.read.format("statestore").option("operatorId", unit.operator_id)
            for name, value in unit.options.items():
                reader = reader.option(name, value)
            counts[unit.label] = reader.load(ckpt.spark_root).count()
    return counts


@pytest.mark.slow
@pytest.mark.parametrize("workload,provider", [  # make test: one (the corpus has a v2 join)
    tiers.case(w, p, core=w == "dedup", id=w) for w, p in SHAPES])
def test_every_store_is_counted_and_a_healthy_v2_checkpoint_is_healthy(spark, v2_demo, workload,
                                                                       provider):
    run = v2_demo(workload, provider)
    ckpt = Checkpoint(spark, run.checkpoint_path)
    assert ckpt.format_version == 2
    assert all(f.unique_id for f in ckpt.state_files())
    bare = _bare_counts(spark, ckpt)
    assert bare and all(bare.values()), bare

    reports = inspect_state.inspect_stores(ckpt)
    assert {r.label: r.rows for r in reports} == bare  # 03, exact
    assert not any(r.reader_error for r in reports)
    measured = sizing.measure_checkpoint(ckpt)  # 02
    assert not measured.unreadable
    assert sum(m.rows for m in measured.stores) == sum(bare.values())

    diag = recovery.diagnose(ckpt)  # 05: healthy, nothing to move
    plan = recovery.plan_rollback(ckpt, diag)
    assert diag.nothing_broken, recovery.problem_lines(diag)
    assert not plan.moves


def test_a_v1_checkpoint_says_v1(spark, demo_factory):
    run = demo_factory("dedup", "rocksdb", batches=2, rows_per_batch=10, partitions=2)
    assert Checkpoint(spark, run.checkpoint_path).format_version == 1


def _restart(spark, run, path: str) -> None:
    run_demo_batches(spark, run.workload, path, 1, run.provider, run.rows_per_batch,
                     run.partitions, extra_conf=V2)


@pytest.fixture(scope="module")
def reference(spark, v2_demo, tmp_path_factory):
    """The two-operator v2 checkpoint's state at its last batch and, run one batch further in a
    copy, at the next: never broken."""
    run = v2_demo("two_operators", "rocksdb")
    path = str(tmp_path_factory.mktemp("v2-reference") / "checkpoint")
    shutil.copytree(run.checkpoint_path, path)
    _restart(spark, run, path)
    return run, {BATCHES - 1: run.checkpoint_path, BATCHES: path}


@pytest.mark.slow
@pytest.mark.parametrize("fault", tiers.tiered(  # make test: damage to the state's files
    ["delete_offsets", "truncate_latest"], {"truncate_latest"}))
def test_05_repairs_a_v2_checkpoint_and_the_restart_equals_a_clean_run(spark, reference,
                                                                       tmp_path, fault):
    run, clean = reference
    path = str(tmp_path / "checkpoint")
    shutil.copytree(run.checkpoint_path, path)
    ckpt = Checkpoint(spark, path)
    last = BATCHES - 1
    if fault == "delete_offsets":
        for rel in (f"offsets/{last}", f"offsets/.{last}.crc"):
            (tmp_path / "checkpoint" / rel).unlink()
    else:
        faults.inject_fault(ckpt, fault)
    ckpt = Checkpoint(spark, path)
    diag = recovery.diagnose(ckpt)
    plan = recovery.plan_rollback(ckpt, diag)
    assert resume_batch_id(diag, plan) == last - 1, recovery.problem_lines(diag)
    assert plan.target_batch_id == last - 1 and plan.moves, recovery.plan_lines(plan)
    outcome = recovery.rollback(ckpt, plan, dry_run=False, backup_dir=str(tmp_path / "backup"),
                                force=True)
    assert outcome.applied and outcome.verified, outcome.lines
    _restart(spark, run, path)  # batch 3 runs again
    restarted = Checkpoint(spark, path)
    until = restarted.last_committed_batch_id
    assert until in clean
    assert state_differences(spark, restarted, until, clean[until]) == []

    undone = recovery.undo(Checkpoint(spark, path), outcome.journal_path, dry_run=False,
                           force=True)
    assert undone.applied and undone.verified, undone.lines


@pytest.mark.slow
def test_07_repartitions_a_v2_checkpoint_and_the_query_goes_on(spark, v2_demo, tmp_path):
    run = v2_demo("dedup", "rocksdb_changelog")
    path = str(tmp_path / "checkpoint")
    shutil.copytree(run.checkpoint_path, path)
    out = rp.repartition(Checkpoint(spark, path), 4, dry_run=False, force=True,
                         backup_dir=str(tmp_path / "backup"))
    assert out.applied and out.verified and out.rows_equal, out.lines
    _restart(spark, run, path)
    after = Checkpoint(spark, path)
    assert after.format_version == 2
    assert sum(_bare_counts(spark, after).values()) > 0


def test_09_refuses_a_v2_checkpoint_in_one_line_and_changes_nothing(spark, v2_demo):
    from state_runbooks.runbooks.rewrite_state.checks import check_requirements
    run = v2_demo("dedup", "rocksdb_changelog")
    checks = check_requirements(Checkpoint(spark, run.checkpoint_path),
                                drop_keys_where="key.id < 0", force=True)
    fmt = checks.get("format")
    assert not fmt.ok and "format v2" in fmt.seen
    assert checks.refusal()


def test_11_traces_a_v2_checkpoint_one_partition_a_batch_from_its_snapshots(spark, v2_demo):
    """Format v2 names each partition's files by an id its commits keep by partition number: no
    view of one partition serves, so 11 reads the key's partition from its snapshots (every
    partition before the first one), and says what Spark's reader shows at every batch."""
    from state_runbooks.core.operators import state_units
    from state_runbooks.core.state_reader import read_unit
    from state_runbooks.runbooks import trace_key as tk
    from state_runbooks.runbooks.trace_key.locate import snapshot_batches

    ckpt = Checkpoint(spark, v2_demo("dedup", "rocksdb_changelog").checkpoint_path)
    unit = state_units(ckpt)[0]
    key_where = tk.key_where_for(read_unit(ckpt, unit).select("key").first().key)
    mine = tk.trace_key(ckpt, key_where).traces[0]
    assert "format (2)" in mine.view_why and mine.read_by == "each batch"
    first, last = ckpt.retained_batch_range(unit.operator_id)
    assert {b: bool(rows) for b, rows in mine.by_batch.items()} == \
        {b: read_unit(ckpt, unit, b).where(key_where).count() > 0 for b in range(first, last + 1)}
    snapshots = snapshot_batches(ckpt, unit, mine.placement.partition_id)
    assert mine.whole_batches == [b for b in range(first, last + 1)
                                  if not any(s <= b for s in snapshots)]
