"""13 fleet health without Spark: roots, thresholds, one checkpoint's figures and findings from
its files (05's diagnosis stood in), statuses, growth across runs, and the run read-only."""
from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from memory_checkpoints import HOUR_MS, below, write_checkpoint

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.fs.memory import MemoryFiles
from state_runbooks.runbooks.fleet_health.examine import Examination, examine
from state_runbooks.runbooks.fleet_health.fleet import run_fleet
from state_runbooks.runbooks.fleet_health.history import growth_since, judge_growth
from state_runbooks.runbooks.fleet_health.roots import Folder, find_checkpoints, roots_of
from state_runbooks.runbooks.fleet_health.thresholds import Thresholds, load_thresholds


def healthy(ckpt, **overrides):
    """05's diagnosis as it reads a sound, stopped checkpoint."""
    values = dict(active=False, activity=SimpleNamespace(reasons=[]), unconfirmed=False,
                  state_does_not_load=False, reader_limits=[], problems=[], load_test=[],
                  last_good_batch_id=ckpt.last_committed_batch_id,
                  verdict=lambda: "nothing is broken", inventory=ckpt.inventory())
    return SimpleNamespace(**{**values, **overrides})


def no_scan(ckpt, top_keys=0):
    raise RunbookError("no Spark here")


@pytest.fixture
def fleet():
    files = MemoryFiles(now_ms=int(time.time() * 1000) - 50 * HOUR_MS)
    write_checkpoint(files, "mem:/fleet/orders/agg")
    write_checkpoint(files, "mem:/fleet/payments/agg", partitions=3)
    fs = files.open("mem:/fleet")
    fs.write_bytes("fresh/metadata", b'{"id":"q"}')
    fs.write_bytes("data/part-0.parquet", b"x")
    files.now_ms = int(time.time() * 1000)
    return files


def test_roots_a_list_or_a_file_of_paths_and_one_line_when_there_is_none(fleet):
    assert [f.root for f in roots_of(fleet, "mem:/fleet/orders, mem:/fleet/payments")] == [
        "mem:/fleet/orders", "mem:/fleet/payments"]
    fleet.open("mem:/lists").write_bytes("paths.txt", b"# ours\nmem:/fleet/orders\n\n")
    assert [f.root for f in roots_of(fleet, "mem:/lists/paths.txt")] == ["mem:/fleet/orders"]
    with pytest.raises(RunbookError, match=r"^mem:/nowhere does not exist: give the folder"):
        roots_of(fleet, "mem:/nowhere")
    with pytest.raises(RunbookError, match=r"^no checkpoint under mem:/fleet/data \(down to 6 "):
        find_checkpoints(roots_of(fleet, "mem:/fleet/data"))
    found = find_checkpoints(roots_of(fleet, ["mem:/fleet", "mem:/fleet/orders"]))
    assert [(f.path, f.whole) for f in found] == [
        ("mem:/fleet/fresh", False), ("mem:/fleet/orders/agg", True),
        ("mem:/fleet/payments/agg", True)]  # found twice, listed once


def test_thresholds_default_and_a_mapping_over_them_refused_in_one_line():
    assert load_thresholds("") == Thresholds()
    t = load_thresholds('{"max_age_hours": 6, "max_files_per_partition": 20}')
    assert (t.max_age_hours, t.max_files_per_partition, t.max_skew) == (6.0, 20, 2.0)
    assert load_thresholds({"max_skew": 3}).max_skew == 3.0
    with pytest.raises(RunbookError, match=r"^thresholds: max_agee not known; known: max_age"):
        load_thresholds("max_agee: 3")
    with pytest.raises(RunbookError, match=r"^thresholds: max_skew='high' is not a number"):
        load_thresholds("max_skew: high")


def test_a_stopped_checkpoint_s_figures_and_its_stall_naming_the_runbook_to_open(fleet):
    exam = examine(fleet, Folder("mem:/fleet", "mem:/fleet/orders/agg"),
                      diagnose_fn=healthy, scan_fn=no_scan, state_rows="exact")
    f = exam.figures
    assert (f["last_committed_batch"], f["batches_in_flight"], f["metadata_file"]) == (3, [], True)
    assert (f["commit_log_format"], f["offset_log_format"], f["checkpoint_format"]) == ("v1", 1, 1)
    assert (f["provider"], f["partitions"], f["files"], f["max_files_per_partition"]) == (
        "hdfs", 2, 8, 4)
    assert f["max_snapshot_lag"] == 4  # four deltas, no snapshot yet
    assert 49 < f["age_hours"] < 51
    stalled = next(x for x in exam.findings if x.code == "stalled")
    assert stalled.details["open"]["runbook"] == "06_monitor_state"
    assert stalled.details["open"]["command"] == ("state-runbooks run 06_monitor_state "
                                                  "-p checkpoint_path mem:/fleet/orders/agg")
    # the row count could not run: unknown, not ok, whatever else was found
    assert exam.status == "unknown" and exam.not_judged == ["rows: no Spark here"]


def test_an_active_query_is_active_not_stalled_and_damage_is_critical_naming_05(fleet):
    folder = Folder("mem:/fleet", "mem:/fleet/orders/agg")
    active = examine(fleet, folder, state_rows="metadata", scan_fn=no_scan,
                        diagnose_fn=lambda c: healthy(c, active=True, activity=SimpleNamespace(
                            reasons=["commits/3 was written 2 s ago"])))
    assert active.status == "active" and not active.findings
    broken = examine(fleet, folder, state_rows="metadata", scan_fn=no_scan,
                        diagnose_fn=lambda c: healthy(c, state_does_not_load=True, verdict=lambda:
                                                      "the state of batch 3 does not load"))
    assert broken.status == "critical"
    assert [(x.code, x.details["open"]["runbook"]) for x in broken.findings] == [
        ("state_not_loaded", "05_recover_corrupted_state"), ("stalled", "06_monitor_state")]


def test_logs_that_cannot_be_listed_leave_the_checkpoint_unknown_not_critical(fleet,
                                                                             monkeypatch):
    """Nothing known of the metadata file is not its absence: no finding without evidence."""
    import importlib

    module = importlib.import_module("state_runbooks.runbooks.fleet_health.examine")

    def unlistable(ckpt, diag):
        raise RunbookError("listing refused")

    monkeypatch.setattr(module, "listed_logs", unlistable)
    exam = examine(fleet, Folder("mem:/fleet", "mem:/fleet/orders/agg"), state_rows="metadata",
                   diagnose_fn=healthy, scan_fn=no_scan)
    assert "metadata_file" not in exam.figures and "logs: listing refused" in exam.not_judged
    assert exam.status == "unknown" and not [x for x in exam.findings
                                             if x.severity == "critical"]


def test_broken_look_alikes_and_thresholds_on_the_files(fleet):
    lacks = examine(fleet, Folder("mem:/fleet", "mem:/fleet/x", "holds state/ but not offsets/"))
    assert lacks.status == "critical" and lacks.findings[0].code == "incomplete_checkpoint"
    fresh = examine(fleet, Folder("mem:/fleet", "mem:/fleet/fresh",
                                     "only its metadata file: never ran"))
    assert fresh.status == "ok" and fresh.findings[0].code == "never_ran"
    exam = examine(fleet, Folder("mem:/fleet", "mem:/fleet/payments/agg"),
                      Thresholds(max_files_per_partition=3, max_snapshot_lag=2,
                                 max_age_hours=100),
                      state_rows="metadata", diagnose_fn=healthy, scan_fn=no_scan)
    assert {x.code for x in exam.findings} == {"many_files", "snapshot_lag"}
    assert exam.status == "warning"


def test_growth_across_runs_from_the_history():
    day = 86_400_000
    before = [{"run_ms": 0, "rows": 100}, {"run_ms": day, "rows": 150}]
    g = growth_since(before, 2 * day, 200)
    assert (g["growth_per_day"], g["previous_rows"], g["runs"], g["only_grew"]) == (
        0.5, 150, 2, True)
    assert growth_since([], day, 10)["growth_per_day"] is None
    exam = Examination("p", "r", figures={"rows": 400})
    judge_growth(exam, before[-1:], 2 * day, 0.5)
    assert exam.findings[0].code == "state_growing"
    assert exam.findings[0].details["open"]["runbook"] == "02_estimate_state_size"
    assert growth_since(before, 2 * day, 120)["only_grew"] is False


def test_the_run_writes_nothing_under_the_root_and_refuses_a_history_there(fleet):
    files_before = below(fleet, "mem:/fleet")
    run = run_fleet(fleet, "mem:/fleet", state_rows="metadata", parallelism=3,
                    diagnose_fn=healthy, scan_fn=no_scan)
    assert below(fleet, "mem:/fleet") == files_before
    assert [e.checkpoint_path for e in run.worst_first] == [
        "mem:/fleet/orders/agg", "mem:/fleet/payments/agg", "mem:/fleet/fresh"]
    assert run.counts() == {"warning": 2, "ok": 1}
    with pytest.raises(RunbookError, match=r"^history_path=mem:/fleet/h is under the root"):
        run_fleet(fleet, "mem:/fleet", history_path="mem:/fleet/h")
