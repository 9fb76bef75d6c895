"""Notebooks: conventions checked statically, and papermill runs with parameters.

nbval (``--nbval-lax``, configured in pyproject.toml) executes every notebook on its demo and compares
the cells tagged ``nbval-check-output``; the runs here pass parameters as a scheduler would and check
the recorded results and the summary JSON.
"""
from __future__ import annotations

import ast
import json
import pathlib
import subprocess
import sys

import nbformat
import papermill
import pytest
import tiers
import yaml
from notebook_runs import exercise_differences, run_exercised

from state_runbooks.cli.main import main
from state_runbooks.cli.runbook_files import repo_notebooks_dir, resolve_notebook
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.runbooks import inspect_state
from state_runbooks.running.start import DEMO_ENV

NOTEBOOKS = sorted(repo_notebooks_dir().glob("*.ipynb"))
REPO = repo_notebooks_dir().parent
COMMON_PARAMETERS = ["checkpoint_path", "spark_master", "summary_path", "fail_on"]
CHECK_TAG = "nbval-check-output"


# -- conventions (no kernel) ----------------------------------------------------------------------
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_conventions(path):
    nb = nbformat.read(str(path), as_version=4)
    assert nb.metadata.kernelspec.name == "python3"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged parameters"
    body = ast.parse(tagged[0].source).body
    assert all(isinstance(node, ast.AnnAssign) for node in body), "a type hint per parameter"
    for node in body:
        ast.literal_eval(node.value)  # literals only: papermill does not re-run derived values
    names = [node.target.id for node in body]
    assert names[:4] == COMMON_PARAMETERS
    assert all("  # " in line for line in tagged[0].source.splitlines()), "a comment per parameter"
    headings = [c.source.splitlines()[0] for c in nb.cells if c.cell_type == "markdown"]
    assert "## Checks" in headings and "## Related" in headings and "## Summary" in headings
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.outputs:
            assert CHECK_TAG in cell.metadata.get("tags", []), "only compared cells keep outputs"
            assert cell.execution_count is not None, "nbval skips cells without a count"
    assert sum(CHECK_TAG in c.metadata.get("tags", []) for c in nb.cells) >= 2


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_help_notebook_lists_every_parameter_with_type_and_help(path):
    """What ``papermill --help-notebook`` prints: papermill drops a line it cannot parse (one
    with a second '=', e.g. in its comment) with a warning, so compare with the cell itself."""
    cell = next(c for c in nbformat.read(str(path), as_version=4).cells
                if "parameters" in c.metadata.get("tags", []))
    declared = {node.target.id: ast.unparse(node.annotation) for node in ast.parse(cell.source).body}
    shown = papermill.inspect_notebook(str(path))
    assert list(shown) == list(declared)
    assert {name: p["inferred_type_name"] for name, p in shown.items()} == declared
    assert [name for name, p in shown.items() if not p["help"]] == []


def _sanitize(text: str) -> str:
    import configparser
    import re
    config = configparser.ConfigParser()
    config.read(REPO / "tests" / "nbval_sanitize.cfg")
    for section in config.sections():
        text = re.sub(config[section]["regex"], config[section]["replace"], text)
    return text


@pytest.mark.parametrize("temp_root", ["/tmp", "/var/folders/x1/abc_123/T", "/private/var/folders/x1/T",
                                       "/home/runner/work/_temp", "/Users/me/Library/Caches/tmp.x"])
def test_sanitize_patterns_match_any_temp_root(temp_root):
    printed = (f"on demo checkpoint file:{temp_root}/state-runbooks-demo-k3_x9z/dedup: query "
               f"5011c96c-ef93-4081-b81d-62bdc86c5010; log {temp_root}/state-runbooks-demo-r0tba12s: "
               f"copy in {temp_root}/pytest-of-me/pytest-12/test_x0/ckpt, Spark 4.3.0")
    assert _sanitize(printed) == ("on demo checkpoint <DEMO_DIR>/dedup: query <QUERY_ID>; log "
                                  "<DEMO_DIR>: copy in <TMP_DIR>/test_x0/ckpt, Spark <VERSION>")


SCHEDULES = sorted((REPO / "runbooks" / "schedules").glob("*.yaml"))
PLACEHOLDER_PARAMETERS = {"checkpoint_path", "event_log_path"}  # what a schedule must be given


@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda p: p.stem)
def test_schedule_files_name_real_parameters_and_never_change_a_checkpoint(schedule):
    notebook = resolve_notebook(schedule.stem)  # recover_corrupted_state.diagnose: 05
    parameters = yaml.safe_load(schedule.read_text())
    assert set(parameters) <= set(papermill.inspect_notebook(str(notebook)))
    assert parameters.get("mode", "diagnose") == "diagnose" and parameters.get("dry_run", True)
    assert [n for n in PLACEHOLDER_PARAMETERS & set(parameters)
            if parameters[n].startswith("<")], "ships with a placeholder for the checkpoint or log"


@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda p: p.stem)
def test_a_schedule_not_yet_set_refuses_in_one_line(schedule, tmp_path, capsys):
    notebook = resolve_notebook(schedule.stem)
    assert main(["run", schedule.stem, "-f", str(schedule), "--out", str(tmp_path)]) == 1
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith(f"FAILED {notebook.stem}: RunbookError: ") and "is still the placeholder" in last
    summary = json.loads((tmp_path / f"{notebook.stem}.summary.json").read_text())
    assert summary["status"] == "error" and summary["error"]["step"] == "parameters"
    assert not (tmp_path / f"{notebook.stem}.ipynb").exists()  # refused before any kernel started


# -- papermill runs with parameters (fixture run_notebook in conftest.py) -------------------------
# A schedule file's parameters on a given checkpoint: 03 on the standalone cluster
# (tests/notebooks/test_notebooks_on_servers.py), as a platform team schedules it.
@pytest.mark.slow
@pytest.mark.notebook
@tiers.EXTENDED  # make test: 01's notebook fails on warning; 03's findings in its library tests
def test_fail_on_warning_fails_a_scheduled_run(spark, run_notebook, tmp_path):
    path = str(tmp_path / "no-watermark")
    df = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 8).load()
          .dropDuplicates(["value"]))
    for _ in range(3):
        df.writeStream.format("noop").option("checkpointLocation", path) \
            .trigger(availableNow=True).start().awaitTermination()
    with pytest.raises(papermill.PapermillExecutionError) as excinfo:
        run_notebook("03_inspect_state", checkpoint_path=path, fail_on="warning")
    assert excinfo.value.ename == "RunbookFailed"
    summary = json.loads((tmp_path / "03_inspect_state.summary.json").read_text())
    assert summary["status"] == "warning"
    assert {f["code"] for f in summary["findings"]} == {"no_watermark", "state_growth"}


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.parametrize("suffix,message", [  # make test: a path that is not there, and none
    ("missing", "checkpoint path does not exist"),
    tiers.case("state", "pass the checkpoint root instead", core=False),
    (None, "builds no demo: set -p checkpoint_path")])
def test_bad_checkpoint_path_fails_with_one_line_and_an_error_summary(
        demo_factory, run_notebook, tmp_path, monkeypatch, suffix, message):
    root = demo_factory("dedup").checkpoint_path
    # None: no checkpoint in a run that refuses the demo (as state-runbooks run without --demo)
    monkeypatch.setenv(DEMO_ENV, "refuse")
    with pytest.raises(papermill.PapermillExecutionError) as excinfo:
        run_notebook("00_template", checkpoint_path=f"{root}/{suffix}" if suffix else "")
    assert excinfo.value.ename == "RunbookError"
    assert message in excinfo.value.evalue and "\n" not in excinfo.value.evalue
    summary = json.loads((tmp_path / "00_template.summary.json").read_text())
    assert summary["status"] == "error" and summary["findings"] == []
    assert summary["error"] == {"type": "RunbookError", "message": excinfo.value.evalue,
                                "step": 'rb = start_runbook("template", checkpoint_path, '
                                        'spark_master, summary_path, fail_on,'}


@pytest.mark.slow
@pytest.mark.notebook
def test_parameters_take_their_declared_types_in_the_kernel(demo_factory, run_notebook, tmp_path):
    """A scheduler's strings become the declared types at the common start; anything else stops
    the run in one line naming the parameter, with an error summary."""
    # (A numeric string is taken as the int: test_template_on_a_given_checkpoint.)
    root = demo_factory("dedup").checkpoint_path
    with pytest.raises(papermill.PapermillExecutionError) as excinfo:
        run_notebook("00_template", checkpoint_path=root, operator_id="first")
    assert excinfo.value.evalue == ("operator_id='first' is not a number: pass e.g. "
                                    "-p operator_id 1")
    summary = json.loads((tmp_path / "00_template.summary.json").read_text())
    assert summary["status"] == "error" and summary["error"]["message"] == excinfo.value.evalue


@pytest.mark.slow
@pytest.mark.notebook
def test_cli_run_that_fails_says_why_in_its_last_line_and_leaves_the_rest_in_its_log(tmp_path):
    # 05 checks its mode before its common start: the runner itself writes the error summary.
    out = tmp_path / "out"
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "state-runbooks"), "run",
                           "05_recover_corrupted_state", "-p", "mode", "repair", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and proc.stderr == ""
    lines = proc.stdout.strip().splitlines()
    log = out / "logs" / "05_recover_corrupted_state.log"
    assert lines[0].split()[:2] == ["05_recover_corrupted_state", "error"]
    assert lines[-1] == ("FAILED 05_recover_corrupted_state: RunbookError: mode='repair' is not "
                         "valid: use 'diagnose', 'rollback' or 'undo' (step: recovery.ROLLBACK.check_mode(mode)) "
                         f"(log: {log})")
    assert "Traceback" not in proc.stdout and "Traceback" in log.read_text()
    summary = json.loads((out / "05_recover_corrupted_state.summary.json").read_text())
    assert summary["runbook"] == "recover_corrupted_state" and summary["status"] == "error"
    assert summary["error"]["step"] == "recovery.ROLLBACK.check_mode(mode)"


@pytest.mark.slow
@pytest.mark.notebook
def test_template_on_a_given_checkpoint(spark, demo_factory, run_notebook):
    checkpoint = demo_factory("two_operators", "rocksdb").checkpoint_path
    # As a scheduler passes it, a string: the common start makes it the declared int.
    result = run_notebook("00_template", checkpoint_path=checkpoint, operator_id="1")
    summary = result.summary
    assert summary["status"] == "ok"
    assert summary["total_rows"] == inspect_state.inspect_stores(Checkpoint(spark, checkpoint),
                                                              operator_id=1)[0].rows


def _printed(notebook: pathlib.Path) -> str:
    nb = nbformat.read(str(notebook), as_version=4)
    return "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                     for o in c.outputs)


@pytest.mark.slow
@pytest.mark.notebook
def test_00s_exercise_done_as_its_text_says_with_a_right_and_a_wrong_prediction(run_notebook,
                                                                                tmp_path):
    """The run the exercise asks for, from the command line: the parameter it names changes the
    run (step 1 counts at batch 1, the checks hold there), and a prediction passed with -p
    reaches the check: right, then wrong."""
    out = tmp_path / "right"
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "state-runbooks"), "run",
                           "00_template", "--demo", "-p", "batch_id", "1", "-p", "my_prediction",
                           "20", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    printed = _printed(out / "00_template.ipynb")
    assert "0/default (dedupe): 20 rows at batch 1" in printed
    assert ("With batch_id=1, as this run has it, how many rows does the store hold at batch 1, "
            "the second batch?\nright: 20 (") in printed
    wrong = _printed(run_notebook("00_template", my_prediction="40").notebook)
    assert "0/default (dedupe): 40 rows at batch 3" in wrong
    assert ("With batch_id=1 instead of -1 (the last committed, 3), how many rows does the store "
            "hold at batch 1, the second batch?\nnot quite: you said 40; the run says 20,") in wrong


@tiers.EXTENDED  # make test: 00's exercise, above; these demos take minutes each
@pytest.mark.parametrize("name,parameter,value,question", [
    ("02_estimate_state_size", "watermark_seconds", 2.0,
     "With watermark_seconds=2, as this run has it, how many rows"),
    ("06_monitor_state", "late_rows_warning", 100,
     "With late_rows_warning=100, as this run has it, which severity"),
    ("03_inspect_state", "skew_warning_ratio", 1.1,
     "With skew_warning_ratio=1.1, as this run has it, which status"),
    ("05_recover_corrupted_state", "target_batch_id", 1,
     "With target_batch_id=1, as this run has it, one batch before the last good batch"),
    ("07_repartition_state", "num_partitions", 1, "With num_partitions=1, what largest/mean"),
    ("08_check_query_change", "query_function", "build_deduplicated",
     "With query_function=build_deduplicated (the demo job with dropDuplicates added"),
    ("09_rewrite_state", "drop_keys_where", "key.user_id = 'user-1'",
     """With drop_keys_where="key.user_id = 'user-1'", as this run has it, how many rows"""),
])
def test_a_rerun_with_an_exercises_parameter_does_the_exercise_both_ways(name, parameter, value,
                                                                          question, tmp_path):
    """The rerun the exercise suggests passes the demo's checks (they hold for the changed
    parameter) and reaches the exercise, which asks for this run's parameter and takes a wrong
    prediction passed with the run, then the right one set in a cell."""
    result = run_exercised(name, tmp_path, **{parameter: value})
    assert exercise_differences(result.notebook, name, question) == []