"""``make test-load``: the demos and the course book on a busy machine. ``state-runbooks demo`` and
``state-runbooks book`` run as ``make demo`` and ``make book`` do, each with two CPU-bound
processes beside it (started and stopped here) on a machine of two cores: a trainee's laptop with
a browser and an IDE open, a scheduler host shared with other jobs. Every runbook must end with
its usual status (the one its demo builds), and the book must build every lesson as a page. How
long each took is reported, not asserted: a busy machine is slower, never wrong."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from state_runbooks.cli.runbook_files import runbook_notebooks

# The status each demo ends with: a warning or a critical where the demo builds the problem its
# runbook teaches.
USUAL_STATUS = {
    "01_enable_rocksdb": "warning",  # the demo pins HDFS-backed state: a switch needs a plan
    "02_estimate_state_size": "ok",
    "03_inspect_state": "ok",
    "04_diagnose_join_mismatch": "warning",  # rows with no match, built in on purpose
    "05_recover_corrupted_state": "critical",  # a state file the demo damages
    "06_monitor_state": "warning",  # late rows dropped behind the watermark
    "07_repartition_state": "ok",
    "08_check_query_change": "critical",  # the change the demo proposes breaks the state
    "09_rewrite_state": "ok",
    "10_migrate_state": "ok",
    "11_trace_key": "ok",
    "12_move_checkpoint": "ok",
    "13_fleet_health": "critical",  # a demo checkpoint whose newest state version is damaged
}
BURNERS = 2
_BURN = "while True:\n    pass\n"
COMMAND = pathlib.Path(sys.executable).parent / "state-runbooks"


def _statuses(out: pathlib.Path) -> dict[str, str]:
    return {stem: json.loads((out / f"{stem}.summary.json").read_text())["status"]
            if (out / f"{stem}.summary.json").exists() else "no summary"
            for stem in USUAL_STATUS}


def _report(request, line: str) -> None:
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():  # on the terminal, not in captured output
            reporter.write_line(line)
    request.node.user_properties.append(("report", line))


@pytest.fixture
def busy_machine():
    """Two processes that keep two cores busy while the test runs, stopped after it."""
    burners = [subprocess.Popen([sys.executable, "-c", _BURN], stdin=subprocess.DEVNULL)
               for _ in range(BURNERS)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


@pytest.mark.load
@pytest.mark.parametrize("command", ["demo", "book"])
def test_every_demo_ends_with_its_usual_status_beside_two_busy_cores(command, busy_machine,
                                                                     tmp_path, request):
    assert sorted(USUAL_STATUS) == [p.stem for p in runbook_notebooks()]
    out = tmp_path / command
    started, load_before = time.monotonic(), os.getloadavg()[0]
    proc = subprocess.run([str(COMMAND), command, "--out", str(out)], capture_output=True,
                          text=True, timeout=3 * 3600, stdin=subprocess.DEVNULL)
    seconds, load_after = time.monotonic() - started, os.getloadavg()[0]
    _report(request, f"make {command} beside {BURNERS} busy processes: {seconds:.0f} s "
                     f"(load {load_before:.1f} at the start, {load_after:.1f} at the end)")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert _statuses(out) == USUAL_STATUS
    if command == "book":
        assert "not built" not in proc.stdout
        assert all((out / f"{stem}.html").exists() for stem in ["00_template", *USUAL_STATUS])
        assert "not built" not in (out / "index.html").read_text()
