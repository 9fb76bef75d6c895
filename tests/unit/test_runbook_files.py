"""Finding, listing and exporting the runbooks: from a clone (editable install) or from what an
installed package carries (``state_runbooks/bundle/``). No Spark needed."""
from __future__ import annotations

import json
import re
import shutil

import nbformat
import pytest

import state_runbooks
from state_runbooks.cli import execution, runbook_files
from state_runbooks.cli import main as cli
from state_runbooks.cli.runbook_files import (
    export_runbooks,
    purpose,
    repo_notebooks_dir,
    resolve_notebook,
    resolve_schedule,
    runbook_notebooks,
)

REPO = repo_notebooks_dir().parent
RUNBOOKS = sorted(p.stem for p in REPO.glob("notebooks/[0-9][0-9]_*.ipynb")
                  if not p.name.startswith("00_"))


def test_list_names_every_runbook_of_notebooks_with_its_title():
    listed = cli.list_runbooks().splitlines()
    named = {line.split()[0]: line.split(None, 1)[1] for line in listed[:len(RUNBOOKS)]}
    assert list(named) == RUNBOOKS  # discovered: a runbook added to notebooks/ is listed, in order
    for stem, title in named.items():
        cell = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"][0]
        assert "# " + title == "".join(cell["source"]).splitlines()[0]  # one source: the notebook
    assert "inspect_state" in listed[-2] and state_runbooks.__version__ in listed[-1]


def test_purpose_is_the_first_markdown_title(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_markdown_cell("\n# Do one thing, well\n\nMore text.")]
    nbformat.write(nb, str(tmp_path / "01_x.ipynb"))
    assert purpose(tmp_path / "01_x.ipynb") == "Do one thing, well"
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    nbformat.write(nb, str(tmp_path / "02_y.ipynb"))
    assert purpose(tmp_path / "02_y.ipynb") == ""


def test_export_writes_importable_notebooks_next_to_the_playbooks(tmp_path):
    written, playbooks = export_runbooks(tmp_path / "exp")
    assert [p.stem for p in written] == RUNBOOKS
    for path in written:
        nb = nbformat.read(str(path), as_version=4)
        nbformat.validate(nb)
        assert nb.metadata["state_runbooks"]["version"] == state_runbooks.__version__
        source = nbformat.read(str(REPO / "notebooks" / path.name), as_version=4)
        assert [c.source for c in nb.cells] == [c.source for c in source.cells]
        # Links to the playbooks still land: the folders sit side by side as in the repository.
        for link in re.findall(r"\]\((\.\./runbooks/[^)#]+)", "".join(c.source for c in nb.cells)):
            assert (path.parent / link).resolve().is_file(), f"{path.name}: {link}"
    assert {p.name for p in (playbooks / "schedules").glob("*.yaml")} == \
        {p.name for p in (REPO / "runbooks" / "schedules").glob("*.yaml")}
    export_runbooks(tmp_path / "exp")  # again over the same folder: replaced, not refused


def test_a_schedule_is_named_by_its_stem(tmp_path):
    assert resolve_schedule("inspect_state") == str(REPO / "runbooks/schedules/inspect_state.yaml")
    assert resolve_schedule("recover_corrupted_state.diagnose.yaml").endswith(".diagnose.yaml")
    own = tmp_path / "inspect_state"
    own.write_text("top_keys: 3\n")
    assert resolve_schedule(str(own)) == str(own)  # an existing file is taken as given
    assert resolve_schedule("no_such_schedule") == "no_such_schedule"  # refused where it is read
    assert resolve_schedule("") == ""


@pytest.fixture
def packaged(tmp_path, monkeypatch):
    """As in an installed wheel: a bundle of notebooks and playbooks beside the library."""
    bundle = tmp_path / "bundle"
    (bundle / "notebooks").mkdir(parents=True)
    shutil.copy(REPO / "notebooks" / "03_inspect_state.ipynb", bundle / "notebooks")
    shutil.copytree(REPO / "runbooks", bundle / "runbooks")
    monkeypatch.setattr(runbook_files, "BUNDLE", bundle)
    return bundle


def test_what_the_package_carries_wins_over_a_clone(packaged, tmp_path):
    assert [p.parent for p in runbook_notebooks()] == [packaged / "notebooks"]
    notebook = resolve_notebook("inspect_state")
    assert notebook == packaged / "notebooks" / "03_inspect_state.ipynb"
    assert resolve_schedule("inspect_state").startswith(str(packaged))
    # Every notebook runs in its output folder, a packaged one and a clone's alike: nothing is
    # left beside the runbooks' own files.
    assert execution._working_dir(notebook, tmp_path / "out") == (tmp_path / "out").resolve()
    clone_notebook = REPO / "notebooks" / "03_inspect_state.ipynb"
    assert execution._working_dir(clone_notebook, tmp_path / "out") == \
        (tmp_path / "out").resolve()


def test_without_notebooks_the_error_says_what_to_do(tmp_path, monkeypatch):
    def no_clone():
        raise FileNotFoundError("notebooks/ not found")

    monkeypatch.setattr(runbook_files, "BUNDLE", tmp_path / "nothing")
    monkeypatch.setattr(runbook_files, "repo_notebooks_dir", no_clone)
    with pytest.raises(SystemExit, match=r"^error: this installation .* has no notebooks/: "
                                         r"reinstall it from its wheel") as exc:
        runbook_notebooks()
    assert "\n" not in str(exc.value)


def test_golden_refuses_outside_a_clone(monkeypatch):
    def no_clone():
        raise FileNotFoundError("notebooks/ not found: run from a clone installed with pip install -e .")

    monkeypatch.setattr(cli, "repo_notebooks_dir", no_clone)
    with pytest.raises(SystemExit, match="^error: notebooks/ not found: run from a clone"):
        cli.main(["golden"])


def test_the_version_has_one_source():
    """pyproject.toml takes the package's version from ``state_runbooks.__version__``."""
    pyproject = (REPO / "pyproject.toml").read_text()
    project = pyproject.split("[project]")[1].split("\n[")[0]
    assert 'dynamic = ["version"]' in project and "\nversion =" not in project
    assert 'version = {attr = "state_runbooks.__version__"}' in pyproject


def test_export_to_a_file_is_refused_in_one_line(tmp_path):
    (tmp_path / "a-file").write_text("")
    with pytest.raises(SystemExit, match=r"^error: cannot export to .*a-file: .*: name a folder"):
        cli.main(["export", str(tmp_path / "a-file")])
