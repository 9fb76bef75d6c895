"""Executing one runbook notebook with papermill into an output folder, with its summary JSON and
an HTML report (nbconvert): what ``state-runbooks run`` does in its child process, what the golden
refresh does, and what the tests and benchmarks call.
"""
from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass

from state_runbooks.running.results import read_records

KERNEL_NAME = "python3"


def summary_target(out_dir: pathlib.Path, stem: str, parameters: dict) -> str:
    """Where a run's summary goes: ``summary_path`` if given, else ``<out>/<stem>.summary.json``."""
    return parameters.get("summary_path") or str((out_dir / f"{stem}.summary.json").resolve())


@dataclass
class ExecutedNotebook:
    notebook: pathlib.Path
    summary_path: pathlib.Path | None
    html_path: pathlib.Path | None

    @property
    def records(self) -> dict:
        return read_records(self.notebook)

    @property
    def summary(self) -> dict | None:
        if self.summary_path and self.summary_path.exists():
            return json.loads(self.summary_path.read_text())
        return self.records.get("summary")


def execute(notebook: pathlib.Path, out_dir: pathlib.Path, parameters: dict | None = None,
            html: bool = True, write_summary: bool = True, name: str | None = None
            ) -> ExecutedNotebook:
    """Execute one notebook with papermill into ``out_dir``; write its summary JSON and HTML.

    The executed notebook is written even when a cell fails, so a failed run can be read.
    """
    import papermill

    out_dir.mkdir(parents=True, exist_ok=True)
    stem = name or notebook.stem
    output = out_dir / f"{stem}.ipynb"
    parameters = dict(parameters or {})
    summary_path = None
    if write_summary and "summary_path" not in parameters:
        parameters["summary_path"] = summary_target(out_dir, stem, parameters)
    if parameters.get("summary_path"):
        summary_path = pathlib.Path(parameters["summary_path"])
    try:
        papermill.execute_notebook(str(notebook), str(output), parameters=parameters,
                                   kernel_name=KERNEL_NAME, progress_bar=False,
                                   cwd=str(_working_dir(notebook, out_dir)), log_output=False)
    finally:
        html_path = export_html(output) if html and output.exists() else None
    return ExecutedNotebook(output, summary_path, html_path)


def _working_dir(notebook: pathlib.Path, out_dir: pathlib.Path) -> pathlib.Path:
    """A notebook runs in its output folder: the installation may be read-only, nothing is
    written beside the runbooks' own files, and what Spark leaves in its working directory
    (``spark-warehouse/``) belongs with the run's outputs. Paths given to the run are made
    absolute before (``state-runbooks run``)."""
    return out_dir.resolve()


def export_html(notebook: pathlib.Path) -> pathlib.Path:
    """An HTML report of an executed notebook, next to it (nbconvert)."""
    import nbformat
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(nbformat.read(str(notebook), as_version=4))
    target = notebook.with_suffix(".html")
    target.write_text(body, encoding="utf-8")
    return target
