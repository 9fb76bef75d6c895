"""The runbook notebooks: find them, list and export them, execute one with papermill, export it to
HTML (nbconvert), refresh the outputs nbval compares, install the kernel configuration. The command
line is :mod:`state_runbooks.running.cli`.

An installed package carries the notebooks and playbooks in ``state_runbooks/bundle/`` (the build
copies ``notebooks/`` and ``runbooks/`` there, see ``setup.py``); an editable install reads them
from its clone.
"""
from __future__ import annotations

import json
import pathlib
import shutil
import sys
from dataclasses import dataclass
from importlib import resources

from state_runbooks import __version__

from .results import read_records

KERNEL_NAME = "python3"
BUNDLE = pathlib.Path(__file__).resolve().parents[1] / "bundle"


def skip_unused_iri_grammar() -> None:
    """Spare a command-line process the 2-3 s of CPU that importing jsonschema (through nbformat)
    spends building rfc3987-syntax's parser for the "iri" string format, where that package is
    installed: jsonschema then leaves that one format unchecked, and notebook schemas do not use
    it. Call before nbformat is imported; a process that already imported jsonschema is left as
    it is."""
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)  # None: Python's own "not importable"


def repo_notebooks_dir() -> pathlib.Path:
    """``notebooks/`` of the source tree this package is installed from (``pip install -e .``)."""
    here = pathlib.Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "notebooks"
        if candidate.is_dir() and (parent / "pyproject.toml").exists():
            return candidate
    raise FileNotFoundError("notebooks/ not found: run from a clone installed with pip install -e .")


def _source(folder: str) -> pathlib.Path:
    # What the package carries wins: a wheel installed into a virtualenv inside some clone still
    # runs its own runbooks. An editable install carries none and reads its clone's.
    if (BUNDLE / folder).is_dir():
        return BUNDLE / folder
    try:
        return repo_notebooks_dir().parent / folder
    except FileNotFoundError:
        raise SystemExit(f"error: this installation of spark-state-runbooks has no {folder}/: "
                         "reinstall it from its wheel, or from a clone with pip install -e .") from None


def notebooks_folder() -> pathlib.Path:
    """The runbook notebooks: those the installed package carries, or the clone's ``notebooks/``."""
    return _source("notebooks")


def playbooks_folder() -> pathlib.Path:
    """The playbooks and ``schedules/``: those the package carries, or the clone's ``runbooks/``."""
    return _source("runbooks")


def runbook_notebooks(notebooks_dir: pathlib.Path | None = None) -> list[pathlib.Path]:
    """The runbooks, in order: ``NN_name.ipynb`` with NN >= 01 (00 is the template)."""
    notebooks_dir = notebooks_dir or notebooks_folder()
    return sorted(p for p in notebooks_dir.glob("[0-9][0-9]_*.ipynb") if not p.name.startswith("00_"))


def resolve_notebook(name: str, notebooks_dir: pathlib.Path | None = None) -> pathlib.Path:
    path = pathlib.Path(name)
    if path.suffix == ".ipynb" and path.exists():
        return path
    notebooks_dir = notebooks_dir or notebooks_folder()
    matches = sorted(notebooks_dir.glob(f"{path.stem}*.ipynb")) or sorted(
        notebooks_dir.glob(f"*{path.stem}*.ipynb"))
    if len(matches) != 1:
        names = ", ".join(p.stem for p in sorted(notebooks_dir.glob("*.ipynb")))
        raise SystemExit(f"error: notebook {name!r} matches {len(matches)} notebooks; "
                         f"notebooks: {names}")
    return matches[0]


def purpose(notebook: pathlib.Path) -> str:
    """A runbook's one-line purpose: the title of its first markdown cell, without the ``#``."""
    cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            lines = [line.strip() for line in "".join(cell.get("source", "")).splitlines()]
            return next((line.lstrip("#").strip() for line in lines if line), "")
    return ""


def resolve_schedule(name: str) -> str:
    """A parameters file: an existing path as given, else a schedule file of ``schedules/`` named
    by its stem (``inspect_state``) or file name; unknown names stay as given (and are refused
    where the file is read)."""
    if not name or pathlib.Path(name).exists():
        return name
    schedules = playbooks_folder() / "schedules"
    for candidate in (schedules / name, schedules / f"{name}.yaml"):
        if candidate.is_file():
            return str(candidate)
    return name


def export_runbooks(target: pathlib.Path) -> tuple[list[pathlib.Path], pathlib.Path]:
    """Write the runbook notebooks to ``target/notebooks/`` and the playbooks with their schedule
    files to ``target/runbooks/``, side by side as in the repository so the notebooks' links to
    ``../runbooks/`` hold; ready for Jupyter or a workspace import. Each notebook's metadata names
    the version it came with. Returns the notebooks written and the playbooks' folder."""
    import nbformat

    notebooks = target / "notebooks"
    notebooks.mkdir(parents=True, exist_ok=True)
    written = []
    for source in runbook_notebooks():
        nb = nbformat.read(str(source), as_version=4)
        nb.metadata["state_runbooks"] = {"version": __version__}
        nbformat.write(nb, str(notebooks / source.name))
        written.append(notebooks / source.name)
    playbooks = target / "runbooks"
    shutil.copytree(playbooks_folder(), playbooks, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    return written, playbooks


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


def install_kernel_config(prefix: str | None = None) -> pathlib.Path:
    """Copy ``ipython_kernel_config.py`` to ``<prefix>/etc/ipython/`` (prefix: this environment)."""
    target_dir = pathlib.Path(prefix or sys.prefix) / "etc" / "ipython"
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / "ipython_kernel_config.py"
    source = resources.files("state_runbooks") / "resources" / "ipython_kernel_config.py"
    with resources.as_file(source) as src:
        shutil.copyfile(src, target)
    return target


CHECK_TAG = "nbval-check-output"


def refresh_golden(notebook: pathlib.Path) -> int:
    """Re-execute a notebook on its demo and keep only the outputs nbval compares.

    Cells tagged ``nbval-check-output`` get the new output and an execution count (nbval skips
    cells without one); every other cell is stripped. Returns the number of compared cells.
    """
    import tempfile

    import nbformat

    with tempfile.TemporaryDirectory() as tmp:
        executed = execute(notebook, pathlib.Path(tmp), html=False, write_summary=False)
        ran = nbformat.read(str(executed.notebook), as_version=4)
    source = nbformat.read(str(notebook), as_version=4)
    ran_by_id = {c.get("id"): c for c in ran.cells}
    checked = 0
    for cell in source.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if CHECK_TAG in cell.metadata.get("tags", []):
            checked += 1
            fresh = ran_by_id[cell.get("id")]
            cell.outputs = [o for o in fresh.outputs if o.get("output_type") != "display_data"]
            cell.execution_count = checked
        else:
            cell.outputs, cell.execution_count = [], None
    source.metadata.pop("papermill", None)
    nbformat.write(source, str(notebook))
    return checked
