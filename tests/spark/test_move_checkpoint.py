"""Runbook 12 (move a checkpoint) on checkpoints written by real queries: a file folder moved,
a file source swapped for rate-micro-batch, a source added by a union (refused), a relocation
across a path with a space; after each move the job continues and its state and output equal a
run that never moved; in place is undone byte for byte; every refusal changes nothing; beside a
running query nothing moves. The jobs are in tests/jobs/move_jobs.py."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from checkpoint_trees import age, tree_sha
from messages import one_line

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.demos.checkpoints import build_demo_checkpoint
from state_runbooks.demos.continuation import continue_query
from state_runbooks.demos.jobs import files_per_window as fw
from state_runbooks.runbooks import move_checkpoint as mc
from state_runbooks.running.results import Summary

JOBS = str(Path(__file__).resolve().parents[1] / "jobs" / "move_jobs.py")
BATCHES = 3


def _old(spark, folder: Path, batches: int = BATCHES) -> str:
    """A file-source checkpoint of ``batches`` batches in ``folder``, stopped an hour ago."""
    run = build_demo_checkpoint(spark, **{**mc.DEMO, "batches": batches},
                                checkpoint_path=str(folder / "ckpt"))
    age(run.checkpoint_path)
    return run.checkpoint_path


def _moved_input(spark, ckpt_path: str, new_files: int = 1) -> str:
    """The input folder moved (``moved input``) and ``new_files`` more files there."""
    old = fw.input_folder(ckpt_path)
    moved = os.path.join(os.path.dirname(old), "moved input")
    shutil.move(old, moved)
    for n in range(BATCHES, BATCHES + new_files):
        fw.write_file(moved, n)
    spark.conf.set(fw.INPUT_CONF, moved)
    return moved


def _checks(spark, path: str, function: str, move: str = "source", **kw):
    job = mc.load_job(spark, JOBS, function)
    ckpt = Checkpoint(spark, path)
    moves = mc.compare_move(spark, ckpt, job, move=move)
    return job, ckpt, mc.check_requirements(spark, ckpt, moves, move, **kw)


def _state(spark, path: str) -> list:
    return sorted(map(repr, spark.read.format("statestore").load(path)
                      .select("key", "value").collect()))


def test_a_moved_folder_continues_with_its_state_equal_to_a_run_that_never_moved(spark, tmp_path):
    path = _old(spark, tmp_path / "moved")
    moved = _moved_input(spark, path, new_files=2)
    job, ckpt, checks = _checks(spark, path, "on_files")
    assert checks.ok, checks.refusal()
    assert checks.starts[0].counted_as_read == BATCHES
    before = tree_sha(path)
    out = mc.move(ckpt, checks, job, dry_run=False)
    assert out.verified, out.lines
    assert out.rehearsal.sources[0].rows_read == 2 * fw.ROWS_PER_FILE
    continued = continue_query(spark, job.df, path, provider="rocksdb", mode="update")
    # The reference: the same files, in the same batches, from a folder that never moved.
    ref = _old(spark, tmp_path / "reference")
    for n in range(BATCHES, BATCHES + 2):
        fw.write_file(fw.input_folder(ref), n)
    ref_df = fw.counts(fw.events(spark, fw.input_folder(ref)))
    expected = continue_query(spark, ref_df, ref, provider="rocksdb", mode="update")
    assert continued.output == expected.output and continued.output
    assert _state(spark, path) == _state(spark, ref)
    # Undo gives back the same bytes (the batch run since goes aside, not deleted).
    back = mc.undo(Checkpoint(spark, path), out.journal_path, dry_run=False, force=True)
    assert back.verified, back.lines
    assert tree_sha(path) == before
    assert moved


def test_a_file_source_swapped_for_rate_micro_batch_reads_its_first_batch(spark, tmp_path):
    path = _old(spark, tmp_path / "swap")
    spark.conf.set(fw.INPUT_CONF, fw.input_folder(path))
    job, ckpt, checks = _checks(spark, path, "on_rate", output_path=str(tmp_path / "new"))
    assert checks.ok, checks.refusal()
    assert checks.starts[0].line is None  # "-": the source starts from its own options
    out = mc.move(ckpt, checks, job, dry_run=False)
    assert out.verified, out.lines
    assert out.rehearsal.sources[0].rows_read == 7
    summary = Summary(runbook="move_checkpoint", checkpoint_path=path, spark_version=None)
    mc.summarize(summary, out)
    assert summary.details["verified"] and summary.details["sources"][0]["offset"] == "-"
    assert summary.details["watermark_carried"] == Checkpoint(spark, path).watermark(2)[0]
    assert [op["rows"] > 0 for op in summary.details["state_after_first_batch"]] == [True]
    # Undo at a new location: removed, after checking it holds this query; the original never
    # changed.
    back = mc.undo(ckpt, output_path=str(tmp_path / "new"), dry_run=False, force=True)
    assert back.verified and not (tmp_path / "new").exists()


def test_a_source_added_by_a_union_is_refused_in_one_line_and_nothing_changes(spark, tmp_path):
    path = _old(spark, tmp_path / "union")
    spark.conf.set(fw.INPUT_CONF, fw.input_folder(path))
    before = tree_sha(path)
    job, ckpt, checks = _checks(spark, path, "on_files_and_rate")
    assert [r.name for r in checks.blocking] == ["sources", "start"]
    out = mc.move(ckpt, checks, job, dry_run=False)
    assert out.refused and "\n" not in out.refused and "union" in out.refused
    assert tree_sha(path) == before


def test_a_relocation_across_a_path_with_a_space_restarts_there(spark, tmp_path):
    path = _old(spark, tmp_path / "relocate")
    spark.conf.set(fw.INPUT_CONF, fw.input_folder(path))
    target = str(tmp_path / "new place" / "ckpt")
    before = tree_sha(path)
    job, ckpt, checks = _checks(spark, path, "on_files", "location", output_path=target)
    assert checks.ok, checks.refusal()
    out = mc.move(ckpt, checks, job, dry_run=False)
    assert out.verified, out.lines
    assert tree_sha(path) == before
    fw.write_file(fw.input_folder(path), BATCHES)
    continued = continue_query(spark, job.df, target, provider="rocksdb", mode="update")
    assert continued.output and Checkpoint(spark, target).last_committed_batch_id == BATCHES


def test_beside_a_running_query_nothing_moves(spark, tmp_path):
    path = _old(spark, tmp_path / "live")
    os.utime(os.path.join(path, "commits", str(BATCHES - 1)))  # committed just now
    _moved_input(spark, path)
    before = tree_sha(path)
    job, ckpt, checks = _checks(spark, path, "on_files")
    assert [r.name for r in checks.blocking] == ["stopped"]
    out = mc.move(ckpt, checks, job, dry_run=False)
    assert out.refused and "active" in out.refused
    assert tree_sha(path) == before


def test_bad_parameters_are_one_line(spark, tmp_path):
    with pytest.raises(RunbookError) as excinfo:
        mc.check_move_kind("sideways")
    assert "source" in one_line(excinfo)
    path = _old(spark, tmp_path / "bad", batches=2)
    _moved_input(spark, path)
    _, _, checks = _checks(spark, path, "on_files", start_at="yesterday-ish")
    assert not checks.get("start").ok and "\n" not in checks.get("start").seen


def test_a_new_source_behind_the_carried_watermark_is_reported_with_its_late_rows(spark,
                                                                                  tmp_path):
    path = _old(spark, tmp_path / "behind")
    spark.conf.set(fw.INPUT_CONF, fw.input_folder(path))
    job, ckpt, checks = _checks(spark, path, "on_rate_behind", output_path=str(tmp_path / "new"))
    out = mc.move(ckpt, checks, job, dry_run=False)
    # Counted as rows reach the stateful operator: the 7 events of one second, 5 users, are 5
    # partial aggregates there.
    assert out.verified and out.rehearsal.late_rows == 5, out.lines
    assert any("behind the carried watermark" in line for line in out.lines)
    summary = Summary(runbook="move_checkpoint", checkpoint_path=path, spark_version=None)
    mc.summarize(summary, out)
    assert summary.details["late_rows_sampled"] == 5 and summary.status == "warning"


def test_over_spark_connect_the_state_check_is_unknown_and_nothing_moves(spark, tmp_path,
                                                                         on_connect):
    path = _old(spark, tmp_path / "connect")
    _moved_input(spark, path)
    before = tree_sha(path)
    with on_connect() as connect:
        connect.conf.set(fw.INPUT_CONF, spark.conf.get(fw.INPUT_CONF))
        job, ckpt, checks = _checks(connect, path, "on_files")
        out = mc.move(ckpt, checks, job, dry_run=False)
        summary = Summary("move_checkpoint", ckpt.root, connect.version)
        mc.summarize(summary, out)
    assert checks.get("state").seen.startswith("unknown")
    assert not out.applied and out.refused and summary.status != "ok"
    assert tree_sha(path) == before
