"""05 and 07 on a checkpoint a real query is writing to (a 200 ms trigger on a rate-micro-batch
source, a stateful operator, RocksDB and HDFS-backed): the diagnosis is never a false alarm, and no
change races with the live writer: refused, or stopped at its first sign with what it moved put
back, never a partial apply left behind.

Every query is stopped in a finally block. "Nothing moved" is checked on the bytes of the files
that were there before (the query itself keeps adding files and its maintenance deletes old ones).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from checkpoint_trees import age

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.demos.checkpoints import demo_query
from state_runbooks.runbooks import recover_corrupted_state as recovery
from state_runbooks.runbooks import repartition_state as rp
from state_runbooks.runbooks import rewrite_state as rs
from state_runbooks.running.results import Summary
from state_runbooks.safety import watch
from state_runbooks.safety.watch import in_progress

TRIGGER = "200 milliseconds"


def start_live(spark, path: str, workload: str = "dedup"):
    """The demo's query continued on ``path`` with a short trigger; returns once it committed a
    new batch (so it is writing)."""
    before = len(os.listdir(f"{path}/commits"))
    query = (demo_query(spark, workload, 10).writeStream.format("noop")
             .option("checkpointLocation", path).trigger(processingTime=TRIGGER).start())
    wait_for(lambda: len(os.listdir(f"{path}/commits")) > before + 2, query)
    return query


def wait_for(condition, query=None, seconds: float = 60) -> None:
    deadline = time.time() + seconds
    while not condition():
        if query is not None and query.exception() is not None:
            raise AssertionError(f"the live query failed: {query.exception()}")
        assert time.time() < deadline, "timed out waiting for the live query"
        time.sleep(0.1)


def file_bytes(root: str) -> dict[str, str]:
    """SHA-256 of every file below root now (files that vanish while listed are skipped)."""
    out = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            try:
                out[os.path.relpath(path, root)] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            except FileNotFoundError:
                continue
    return out


def unchanged_by_us(before: dict, root: str, query) -> list[str]:
    """Files that were there before and now differ or are gone, other than what the query's own
    maintenance deleted (old state versions and their SSTs; never offsets, commits, metadata)."""
    now = file_bytes(root)
    bad = [rel for rel, sha in before.items() if rel in now and now[rel] != sha]
    # A file the query was still writing when "before" was taken (.<name>.<uuid>.tmp, and its
    # sidecar) is renamed into place by the query itself.
    gone = [rel for rel in before if rel not in now and not in_progress(rel.removesuffix(".crc"))]
    # The query's maintenance deletes old state files and purges its logs from the oldest entry
    # up (minBatchesToRetain); a rollback would take the newest entries.
    bad += [rel for rel in gone if not rel.startswith("state/") and not purged(rel, now)]
    return bad


def purged(rel: str, now: dict) -> bool:
    """An offsets or commits entry (or sidecar) older than every entry of its folder left."""
    folder, _, name = rel.partition("/")
    batch = name.removeprefix(".").removesuffix(".crc")
    left = [int(r.split("/", 1)[1]) for r in now
            if r.startswith(f"{folder}/") and r.split("/", 1)[1].isdigit()]
    return folder in ("offsets", "commits") and batch.isdigit() and bool(left) \
        and int(batch) < min(left)


def live_copy(demo_factory, tmp_path, provider: str) -> str:
    run = demo_factory("dedup", provider, batches=3, rows_per_batch=10, partitions=2)
    path = tmp_path / f"live-{provider}"
    shutil.copytree(run.checkpoint_path.removeprefix("file:"), path)
    age(path)
    return str(path)


def summary_of(spark, ckpt, diag) -> Summary:
    summary = Summary("recover_corrupted_state", ckpt.root, spark.version)
    recovery.summarize(summary, recovery.Recovery(diag, recovery.plan_rollback(ckpt, diag)))
    return summary


@pytest.mark.parametrize("provider", ["rocksdb", "hdfs"])
def test_diagnosing_a_running_query_is_never_a_false_alarm(spark, demo_factory, tmp_path,
                                                           provider):
    path = live_copy(demo_factory, tmp_path, provider)
    query = start_live(spark, path)
    try:
        for _ in range(3):
            ckpt = Checkpoint(spark, path)
            diag = recovery.diagnose(ckpt)
            said = "\n".join(recovery.problem_lines(diag) + recovery.load_lines(diag)
                             + [diag.verdict()])
            assert diag.active and diag.activity_lines()[0].startswith("the query looks active")
            assert not any("missing" in p.problem for p in diag.problems), said
            assert not diag.state_does_not_load and "does not load" not in said, said
            assert summary_of(spark, ckpt, diag).status in ("ok", "warning"), said
            assert query.isActive and query.exception() is None
    finally:
        query.stop()


def test_rollback_and_repartition_refuse_a_running_query(spark, demo_factory, tmp_path,
                                                         run_notebook):
    path = live_copy(demo_factory, tmp_path, "rocksdb")
    query = start_live(spark, path)
    try:
        before = file_bytes(path)
        ckpt = Checkpoint(spark, path)
        diag = recovery.diagnose(ckpt)
        plan = recovery.plan_rollback(ckpt, diag, 1)
        assert plan.moves
        out = recovery.rollback(ckpt, plan, dry_run=False, force=False,
                                backup_dir=str(tmp_path / "b05"))
        assert not out.applied and out.refused.startswith("the query looks active")
        summary = Summary("recover_corrupted_state", ckpt.root, spark.version)
        recovery.summarize(summary, recovery.Recovery(diag, plan, out))
        assert summary.change_failed and summary.to_dict()["change_failed"]

        # 07: refused, nothing changed
        rep = rp.repartition(Checkpoint(spark, path), 3, dry_run=False, force=False,
                             backup_dir=str(tmp_path / "b07"))
        assert not rep.applied and "the query looks active" in rep.refused

        # The notebook through papermill, force given as the string "false"
        with pytest.raises(Exception):  # noqa: B017 - papermill wraps the run's failure
            run_notebook("05_recover_corrupted_state", checkpoint_path=path, mode="rollback",
                         dry_run=False, force="false", target_batch_id=1,
                         summary_path=str(tmp_path / "05.json"))
        summary = json.loads((tmp_path / "05.json").read_text())
        assert summary["status"] != "critical" and summary["applied"] is False
        assert summary["change_failed"].startswith("rollback refused: the query looks active")
        assert not any("missing" in b["problem"] for b in summary["broken"])
        assert query.isActive and query.exception() is None
        assert unchanged_by_us(before, path, query) == []
        assert not (tmp_path / "b05").exists() and not (tmp_path / "b07").exists()
    finally:
        query.stop()


@pytest.mark.parametrize("force", [False, True])
def test_repartition_and_rewrite_beside_a_running_query_refuse_with_the_evidence(
        spark, demo_factory, tmp_path, force):
    """07 and 09 as their notebooks run them (checks, then the state read for the plan at the
    batch the checks saw, then the apply) beside a query writing every 200 ms: never a
    batch-range error, always the refusal that names what the query wrote; forced, the apply
    meets the writer (or a batch in flight) and refuses. Nothing of the checkpoint changes."""
    path = live_copy(demo_factory, tmp_path, "rocksdb")
    query = start_live(spark, path)
    try:
        before = file_bytes(path)
        ckpt = Checkpoint(spark, path)
        checks = rp.check_requirements(ckpt, 3, force=force)
        scans, checks = rp.forecast(ckpt, checks)
        rep = rp.repartition(ckpt, 3, dry_run=False, force=force, checks=checks, before=scans,
                             backup_dir=str(tmp_path / "b07"))
        assert not rep.applied, rep.lines
        ckpt = Checkpoint(spark, path)
        checks = rs.check_requirements(ckpt, "", "key.event_id = 'evt-1'", force=force)
        plan, checks = rs.plan_unless_active(ckpt, checks, "key.event_id = 'evt-1'")
        out = rs.rewrite(ckpt, "", "key.event_id = 'evt-1'", dry_run=False, force=force,
                         checks=checks, plan=plan, backup_dir=str(tmp_path / "b09"))
        assert not out.applied, out.lines
        if not force:  # forced, a later requirement may refuse first (a batch in flight)
            for refusal in (rep.refused, out.refused):
                assert refusal.startswith("the query looks active: "), refusal
                assert " ago" in refusal or "appeared" in refusal  # the evidence
        assert query.isActive and query.exception() is None
        assert unchanged_by_us(before, path, query) == []
    finally:
        query.stop()


def test_a_forced_rollback_stops_at_the_live_writer_and_puts_back(spark, demo_factory, tmp_path,
                                                                  monkeypatch):
    path = live_copy(demo_factory, tmp_path, "rocksdb")
    ckpt = Checkpoint(spark, path)
    diag = recovery.diagnose(ckpt)
    plan = recovery.plan_rollback(ckpt, diag, 1)
    before = file_bytes(path)
    live = {}
    real_signs = watch.Watch.signs

    def signs_then_a_query_starts(self, *rels):
        # The check before the first move passes (nothing runs yet); then a query starts on the
        # checkpoint and writes batches while the rollback moves files.
        found = real_signs(self, *rels)
        if "query" not in live:
            live["query"] = start_live(spark, path)
        return found

    monkeypatch.setattr(watch.Watch, "signs", signs_then_a_query_starts)
    try:
        out = recovery.rollback(ckpt, plan, dry_run=False, force=True,
                                backup_dir=str(tmp_path / "b"))
        query = live["query"]
        assert out.stopped and not out.applied, out.lines
        assert out.refused.startswith("stopped at the first sign of a live writer")
        assert "were put back, the same bytes" in out.refused
        journal = json.loads((tmp_path / "b" / "journal.json").read_text())
        assert journal["status"] == "stopped" and journal["stopped"]["put_back"]
        assert journal["stopped"]["moved_before"] >= 1
        summary = Summary("recover_corrupted_state", ckpt.root, spark.version)
        recovery.summarize(summary, recovery.Recovery(diag, plan, out))
        assert summary.change_failed
        assert unchanged_by_us(before, path, query) == []
        assert not list((tmp_path / "b" / "moved").rglob("*")) or all(
            p.is_dir() for p in (tmp_path / "b" / "moved").rglob("*"))
        # The query runs on, then stops and restarts fine.
        committed = len(os.listdir(f"{path}/commits"))
        wait_for(lambda: len(os.listdir(f"{path}/commits")) > committed + 2, query)
    finally:
        if "query" in live:
            live["query"].stop()
    monkeypatch.undo()
    again = start_live(spark, path)
    again.stop()
    assert again.exception() is None


def test_a_forced_rollback_on_a_running_query_is_refused_before_any_move(spark, demo_factory,
                                                                         tmp_path):
    path = live_copy(demo_factory, tmp_path, "hdfs")
    query = start_live(spark, path)
    try:
        ckpt = Checkpoint(spark, path)
        diag = recovery.diagnose(ckpt)
        plan = recovery.plan_rollback(ckpt, diag, 1)
        before = file_bytes(path)
        out = recovery.rollback(ckpt, plan, dry_run=False, force=True,
                                backup_dir=str(tmp_path / "b"))
        assert not out.applied and out.refused, out.lines
        # Forced past the quiet window, the query's new batch since the diagnosis refuses it.
        assert (out.refused.startswith("the query looks active") or out.stopped
                or "a query looks like it is writing to it" in out.refused), out.refused
        assert out.refused.count("nothing was changed") == 1, out.refused
        assert unchanged_by_us(before, path, query) == []
        assert query.isActive and query.exception() is None
    finally:
        query.stop()
