"""Every runbook's "Try it yourself" exercise on a demo checkpoint written by a real query: the
answer it computes for the changed parameter, a right prediction called right and a wrong one
not (02's and 06's, which need no Spark, are in the unit tier)."""
from __future__ import annotations

import shutil

from checkpoint_trees import age

from state_runbooks.common.runtime import provider_classes
from state_runbooks.core import growth as state_growth
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.demos import faults
from state_runbooks.demos.checkpoints import JOIN_DEMO_BATCHES
from state_runbooks.query.job import load_job
from state_runbooks.runbooks import check_query_change as qc
from state_runbooks.runbooks import diagnose_join_mismatch as jd
from state_runbooks.runbooks import enable_rocksdb as er
from state_runbooks.runbooks import fleet_health as fh
from state_runbooks.runbooks import inspect_state, template
from state_runbooks.runbooks import migrate_state as ms
from state_runbooks.runbooks import move_checkpoint as mc
from state_runbooks.runbooks import recover_corrupted_state as recovery
from state_runbooks.runbooks import repartition_state as rp
from state_runbooks.runbooks.repartition_state.forecast import scan_state
from state_runbooks.runbooks import rewrite_state as rs
from state_runbooks.runbooks import trace_key as tk
from state_runbooks.runbooks.trace_key.demo import trace_demo_keys


def wrong(answer):
    return answer + 1 if isinstance(answer, int) else f"not {answer}"


def told_apart(exercise) -> None:
    assert exercise is not None
    assert exercise.check(exercise.answer).startswith(f"right: {exercise.answer}")
    assert exercise.check(wrong(exercise.answer)).startswith("not quite: you said ")
    assert exercise.check(None).startswith("no prediction yet")


def copy_of(spark, run, tmp_path) -> Checkpoint:
    path = tmp_path / "ckpt"
    shutil.copytree(run.checkpoint_path.removeprefix("file:"), path)
    age(path)
    return Checkpoint(spark, str(path))


def test_00_rows_at_an_earlier_batch(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("dedup", batches=4, rows_per_batch=20,
                                          partitions=4).checkpoint_path)
    exercise = template.try_it(ckpt)
    assert exercise.answer == template.expected_rows(template.exercise.BATCH + 1)
    told_apart(exercise)


def test_01_the_provider_a_restart_of_a_rocksdb_checkpoint_runs(spark, tmp_path):
    verification = er.verify_rocksdb(spark, str(tmp_path), er.plan(spark, "oss"))
    exercise = er.try_it(verification)
    assert verification.pinned_provider_class == provider_classes().rocksdb
    assert exercise.answer == "rocksdb"
    told_apart(exercise)


def test_03_a_stricter_skew_threshold(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("two_operators", batches=8, rows_per_batch=40)
                      .checkpoint_path)
    reports = inspect_state.inspect_stores(ckpt)
    exercise = inspect_state.try_it(ckpt, reports, state_growth.growth(ckpt))
    assert exercise.answer in ("pass", "warn", "info")
    told_apart(exercise)


def test_04_one_keys_category_under_a_wider_bound(spark, demo_factory):
    """The order whose payment is dated 8 s late is outside the query's bounds (3 s); with a
    lower bound of 10 s given, its pair fits, and Spark's not matching it is what stands out."""
    run = demo_factory("join", batches=JOIN_DEMO_BATCHES, rows_per_batch=20)
    ckpt = Checkpoint(spark, run.checkpoint_path)
    spec = jd.resolve_join(ckpt)
    exercise = jd.try_it(jd.diagnose(ckpt, spec), run.rows_per_batch)
    assert exercise.question.startswith("With lower_bound_seconds=10 instead of 3, ")
    assert exercise.answer == "unmatched_within_bounds"
    assert "-8 s, allowed -10 s to +3 s" in exercise.why
    told_apart(exercise)


def test_05_a_rollback_further_back(spark, demo_factory, tmp_path):
    ckpt = copy_of(spark, demo_factory("two_operators", "rocksdb_changelog", batches=6,
                                       rows_per_batch=20), tmp_path)
    faults.inject_fault(ckpt, "break_middle")
    diag = recovery.diagnose(ckpt.refresh())
    exercise = recovery.try_it(ckpt, diag)
    target = diag.last_good_batch_id - 1
    assert exercise.answer == len(recovery.plan_rollback(ckpt, diag, target).moves) > 0
    told_apart(exercise)


def test_07_the_skew_on_one_partition(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("window_agg", "rocksdb", batches=3, rows_per_batch=10,
                                          partitions=2).checkpoint_path)
    exercise = rp.try_it(ckpt, ckpt.last_committed_batch_id, 2)
    scan = scan_state(ckpt, ckpt.last_committed_batch_id, 2, 1)[0]
    assert scan.after == [scan.rows] and scan.rows > 0
    assert exercise.answer == 1.0 and scan.skew > 1.0  # not the page's own figure
    told_apart(exercise)


def test_08_a_deduplication_added_in_front(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory(**{k: v for k, v in qc.DEMO.items()}).checkpoint_path)
    exercise = qc.try_it(spark, ckpt)
    assert exercise.answer == "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA"
    told_apart(exercise)


def test_09_a_drop_of_one_users_keys(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("window_agg", "hdfs", batches=3, rows_per_batch=10,
                                          partitions=2).checkpoint_path)
    exercise = rs.try_it(ckpt)
    rows = spark.read.format("statestore").load(ckpt.root)
    assert exercise.answer == rows.where("key.user_id = 'user-1'").count() > 0
    told_apart(exercise)


def test_10_the_migration_without_its_fill(spark, demo_factory):
    demo = {k: v for k, v in ms.DEMO.items()}
    ckpt = Checkpoint(spark, demo_factory(**demo).checkpoint_path)
    exercise = ms.try_it(spark, ckpt, load_job(spark, ms.DEMO_JOB_FILE, ms.DEMO_FUNCTION))
    assert exercise.answer == "value.max"
    told_apart(exercise)


def test_11_the_first_window_traced_from_the_batch_that_evicted_it(spark, demo_factory):
    d = tk.DEMO
    ckpt = Checkpoint(spark, demo_factory(d["workload"], d["provider"], d["batches"],
                                          d["rows_per_batch"], d["partitions"]).checkpoint_path)
    evicted = trace_demo_keys(ckpt).evicted
    assert evicted.status.evicted_at_batch == 7
    exercise = tk.try_it(ckpt, evicted, -1)
    assert exercise.question.startswith("With from_batch=7 instead of -1, ")
    assert exercise.answer == "never_seen"
    assert "never in the state of batches 7..7" in exercise.why
    told_apart(exercise)


def test_12_the_moved_folder_read_from_its_first_file(spark, tmp_path):
    from state_runbooks.demos.checkpoints import build_demo_checkpoint
    from state_runbooks.demos.jobs import files_per_window as fw
    run = build_demo_checkpoint(spark, **mc.DEMO, checkpoint_path=str(tmp_path / "ckpt"))
    rb = type("Run", (), {"checkpoint": Checkpoint(spark, run.checkpoint_path), "spark": spark})
    mc.prepare_demo(rb)
    job = load_job(spark, mc.DEMO_JOB_FILE, mc.DEMO_FUNCTION)
    moves = mc.compare_move(spark, rb.checkpoint, job)
    exercise = mc.try_it(spark, mc.check_requirements(spark, rb.checkpoint, moves, "source"))
    files = mc.DEMO["batches"] + mc.demo.NEW_FILES
    assert exercise.answer == files * fw.ROWS_PER_FILE  # every file, the ones read before too
    told_apart(exercise)


def test_13_a_stricter_files_threshold(spark, demo_factory, tmp_path):
    for name, batches in (("few", 2), ("more", 4)):
        shutil.copytree(demo_factory("dedup", batches=batches).checkpoint_path
                        .removeprefix("file:"), tmp_path / "fleet" / name)
    age(tmp_path / "fleet")
    exercise = fh.try_it(fh.run_fleet(spark, str(tmp_path / "fleet"), state_rows="metadata"))
    assert exercise.answer == 1  # four deltas in a partition of the one that ran four batches
    told_apart(exercise)
