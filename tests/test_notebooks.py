"""Notebooks: conventions checked statically, and papermill runs with parameters.

nbval (``--nbval-lax``, configured in pyproject.toml) executes every notebook on its demo and compares
the cells tagged ``nbval-check-output``; the runs here pass parameters as a scheduler would and check
the recorded results and the summary JSON.
"""
from __future__ import annotations

import ast
import json
import pathlib

import nbformat
import papermill
import pytest
import yaml

from state_runbooks.checkpoint import Checkpoint
from state_runbooks import inspection
from state_runbooks.notebooks import repo_notebooks_dir, resolve_notebook

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
def test_papermill_reads_the_parameters(path):
    parameters = papermill.inspect_notebook(str(path))
    assert parameters["fail_on"]["inferred_type_name"] == "str"
    assert all(p["help"] for p in parameters.values()), "papermill --help-notebook shows comments"


def test_schedule_files_name_real_parameters():
    for schedule in sorted((REPO / "runbooks" / "schedules").glob("*.yaml")):
        notebook = resolve_notebook(schedule.stem)
        known = papermill.inspect_notebook(str(notebook))
        assert set(yaml.safe_load(schedule.read_text())) <= set(known), schedule.name


# -- papermill runs with parameters (fixture run_notebook in conftest.py) -------------------------
@pytest.mark.slow
@pytest.mark.notebook
def test_inspect_on_a_given_checkpoint_with_schedule_parameters(spark, demo_factory, run_notebook,
                                                                tmp_path):
    checkpoint = demo_factory("join", "rocksdb_changelog").checkpoint_path
    schedule = yaml.safe_load((REPO / "runbooks/schedules/inspect_state.yaml").read_text())
    schedule.update(checkpoint_path=checkpoint, summary_path=str(tmp_path / "summary.json"),
                    fail_on="warning")
    result = run_notebook("03_inspect_state", **schedule)

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary == result.records["summary"]
    assert summary["runbook"] == "inspect_state" and summary["status"] == "ok"
    assert summary["checkpoint_path"] == Checkpoint(spark, checkpoint).root
    expected = inspection.inspect_stores(Checkpoint(spark, checkpoint))
    assert summary["batch_id"] == 3
    assert summary["total_rows"] == sum(r.rows for r in expected)
    assert [s["store_name"] for s in summary["stores"]] == [r.store_name for r in expected]
    assert [s["rows_per_partition"] for s in summary["stores"]] == [
        r.rows_per_partition for r in expected]


@pytest.mark.slow
@pytest.mark.notebook
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
@pytest.mark.parametrize("suffix,message", [("missing", "checkpoint path does not exist"),
                                            ("state", "pass the checkpoint root instead")])
def test_bad_checkpoint_path_fails_with_one_line(demo_factory, run_notebook, suffix, message):
    root = demo_factory("dedup").checkpoint_path
    with pytest.raises(papermill.PapermillExecutionError) as excinfo:
        run_notebook("00_template", checkpoint_path=f"{root}/{suffix}")
    assert excinfo.value.ename == "RunbookError"
    assert message in excinfo.value.evalue and "\n" not in excinfo.value.evalue


@pytest.mark.slow
@pytest.mark.notebook
def test_template_on_a_given_checkpoint(spark, demo_factory, run_notebook):
    checkpoint = demo_factory("two_operators", "rocksdb").checkpoint_path
    result = run_notebook("00_template", checkpoint_path=checkpoint, operator_id=1)
    summary = result.summary
    assert summary["status"] == "ok"
    assert summary["total_rows"] == inspection.inspect_stores(Checkpoint(spark, checkpoint),
                                                              operator_id=1)[0].rows
