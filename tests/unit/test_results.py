"""Summaries, fail_on and recorded values."""
from __future__ import annotations

import json

import nbformat
import pytest

import state_runbooks
from state_runbooks.common.errors import RunbookError, RunbookFailed
from state_runbooks.running.results import (
    RECORD_MIMETYPE,
    Summary,
    check_fail_on,
    failing_step,
    finish,
    reaches,
    read_records,
    write_summary,
)


def _summary(*severities):
    summary = Summary("inspect_state", "file:/ckpt", "4.3.0")
    for i, severity in enumerate(severities):
        summary.add_finding(severity, f"code{i}", "message")
    return summary


def test_status_is_the_worst_finding():
    assert _summary().status == "ok"
    assert _summary("info").status == "ok"
    assert _summary("info", "warning").status == "warning"
    assert _summary("warning", "critical").status == "critical"


@pytest.mark.parametrize("status,fail_on,fails", [
    ("ok", "never", False), ("critical", "never", False), ("warning", "warning", True),
    ("critical", "warning", True), ("warning", "critical", False), ("critical", "critical", True),
    ("ok", "warning", False), ("error", "never", False), ("error", "warning", True),
    ("error", "critical", True)])
def test_reaches(status, fail_on, fails):
    assert reaches(status, fail_on) is fails


def test_bad_fail_on():
    with pytest.raises(RunbookError, match="use 'never', 'warning' or 'critical'"):
        check_fail_on("error")


def test_a_run_stopped_by_an_error_has_status_error_whatever_its_findings(tmp_path):
    summary = _summary("critical")
    summary.set_error("RunbookError", "checkpoint path does not exist: file:/x", "rb = start_runbook(")
    data = json.loads(open(write_summary(summary, str(tmp_path / "s.json"))).read())
    assert data["status"] == "error"
    assert list(data)[:7] == ["runbook", "status", "checkpoint_path", "spark_version",
                              "runbook_version", "findings", "error"]
    assert data["error"] == {"type": "RunbookError", "step": "rb = start_runbook(",
                             "message": "checkpoint path does not exist: file:/x"}
    assert "error" not in _summary("warning").to_dict()


def test_failing_step_is_the_statement_that_raised():
    cell = "from x import y\n\nreports = inspect(ckpt)\nshow(reports)\n"
    assert failing_step(cell, 4) == "show(reports)"
    assert failing_step(cell, None) == "reports = inspect(ckpt)"  # line unknown: first statement
    assert len(failing_step("x = " + "1" * 200, 1)) == 120


def test_summary_json_has_the_common_keys(tmp_path):
    summary = _summary("warning")
    summary.details["total_rows"] = 3
    path = write_summary(summary, str(tmp_path / "deep" / "summary.json"))
    data = json.loads(open(path).read())
    assert list(data)[:6] == ["runbook", "status", "checkpoint_path", "spark_version",
                              "runbook_version", "findings"]
    assert data["runbook_version"] == state_runbooks.__version__
    assert data["findings"] == [{"severity": "warning", "code": "code0", "message": "message"}]
    assert data["total_rows"] == 3


def test_finish_fails_the_run_when_status_reaches_fail_on(tmp_path):
    path = tmp_path / "s.json"
    with pytest.raises(RunbookFailed, match="status warning reaches fail_on=warning"):
        finish(_summary("warning"), str(path), "warning")
    assert json.loads(path.read_text())["status"] == "warning"  # written before failing
    assert finish(_summary("warning"), "", "critical")["status"] == "warning"


def test_read_records_from_a_notebook():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("record(...)")
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        RECORD_MIMETYPE: {"name": "total_rows", "value": 5}})]
    nb.cells.append(cell)
    assert read_records(nb) == {"total_rows": 5}


@pytest.mark.parametrize("value,current,start", [
    (100, 1000, "With late_rows_warning=100 instead of 1000,"),
    (100, 100, "With late_rows_warning=100, as this run has it,"),
    (1.1, 1.1, "With late_rows_warning=1.1, as this run has it,"),
    (2.0, 5.0, "With late_rows_warning=2 instead of 5,"),
])
def test_an_exercise_names_its_change_and_reads_right_when_the_run_already_has_it(
        value, current, start):
    from state_runbooks.running.exercise import with_change
    assert with_change("late_rows_warning", value, current) == start
