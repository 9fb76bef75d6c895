"""The runbook notebooks and playbooks as files: find them, name a runbook's purpose, resolve a
notebook or schedule file by name, export them all. Executing a notebook is :mod:`.execution`.

An installed package carries the notebooks and playbooks in ``state_runbooks/bundle/`` (the build
copies ``notebooks/`` and ``runbooks/`` there, see ``setup.py``); an editable install reads them
from its clone.
"""
from __future__ import annotations

import json
import pathlib
import shutil

from state_runbooks import __version__

BUNDLE = pathlib.Path(__file__).resolve().parents[1] / "bundle"


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
        nb.metadata.setdefault("state_runbooks", {})["version"] = __version__
        nbformat.write(nb, str(notebooks / source.name))
        written.append(notebooks / source.name)
    playbooks = target / "runbooks"
    shutil.copytree(playbooks_folder(), playbooks, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    return written, playbooks
