"""The guides say what the repository holds: every runbook in the README's table and its safety
section (as reading or changing a checkpoint, by its parameters), every schedule file in the
playbooks' README, every library package in the layers, and every relative link resolves."""
from __future__ import annotations

import ast
import importlib.util
import pathlib
import re

import pytest

from state_runbooks.cli.runbook_files import runbook_notebooks
from state_runbooks.running.parameters import declared_parameters

REPO = pathlib.Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
PLAYBOOKS_README = (REPO / "runbooks" / "README.md").read_text()
NOTEBOOKS = runbook_notebooks(REPO / "notebooks")
LIBRARY = REPO / "lib" / "state_runbooks"


def _section(text: str, title: str) -> str:
    """The text under the ``## title`` heading, up to the next heading of that level."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no section '## {title}'"
    return match.group(1)


def _bullet(section: str, phrase: str) -> str:
    bullets = [b for b in re.split(r"^- ", section, flags=re.M) if phrase in b]
    assert len(bullets) == 1, f"one bullet saying '{phrase}' expected, found {len(bullets)}"
    return bullets[0]


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"\b(\d\d)\b", text))


def _changes_a_checkpoint(notebook: pathlib.Path) -> bool:
    """A runbook that changes a checkpoint is a dry run by default: it declares ``dry_run``."""
    return "dry_run" in declared_parameters(notebook)


def test_the_readme_is_a_guide_of_at_most_200_lines():
    assert len(README.splitlines()) <= 200


def test_the_readme_runbook_table_fits_a_screen():
    """A row reads in one glance (the detail is in the playbooks): at most 150 characters as shown,
    link targets left out."""
    rows = [line for line in _section(README, "The runbooks").splitlines() if line.startswith("| [")]
    shown = {re.sub(r"\]\([^)]*\)", "]", row): row for row in rows}
    assert [row for row in shown if len(row) > 150] == []


def test_measured_times_and_test_counts_live_beside_the_benches_and_in_ci_only():
    """They change with every run; the README would go stale."""
    assert not re.search(r"\b\d[\d,]* tests\b|about \d+(\.\d+)? minutes", README)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_runbook_has_a_row_in_the_readme_table(notebook):
    rows = [line for line in _section(README, "The runbooks").splitlines()
            if line.startswith(f"| [{notebook.stem}](notebooks/{notebook.name})")]
    assert len(rows) == 1


def test_the_safety_section_names_each_runbook_as_reading_or_changing():
    safety = _section(README, "Safety")
    reading = {nb.name[:2] for nb in NOTEBOOKS if not _changes_a_checkpoint(nb)}
    changing = {nb.name[:2] for nb in NOTEBOOKS if _changes_a_checkpoint(nb)}
    assert _numbers(_bullet(safety, "only read the checkpoint").split(";")[0]) == reading
    assert _numbers(_bullet(safety, "change a checkpoint only when asked").split(":")[0]) == changing


@pytest.mark.parametrize("schedule", sorted((REPO / "runbooks" / "schedules").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_every_schedule_file_is_in_the_playbooks_readme(schedule):
    table = _section(PLAYBOOKS_README, "Scheduled runs")
    assert f"| `{schedule.name}` |" in table
    assert f"(schedules/{schedule.name})" in PLAYBOOKS_README  # and a symptom leads to it
    assert f"`{schedule.name}`" in _section(README, "Run a runbook on your checkpoint")


def _layers() -> tuple[str, ...]:
    """The one list of layers, bottom up: the layer test's."""
    path = REPO / "tests" / "unit" / "test_import_layers.py"
    spec = importlib.util.spec_from_file_location("import_layers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LAYERS


def test_every_library_package_is_a_layer_and_the_readme_names_them_in_order():
    layers = re.search(r"each imports only the layers below it:\n\n```\n(.*?)```", README, re.S)
    assert layers, "the README's layers block"
    assert tuple(re.findall(r"^(\w+)/", layers.group(1), re.M)) == _layers()
    assert {p.parent.name for p in LIBRARY.glob("*/__init__.py")} == set(_layers())


def test_the_package_docstring_names_the_layers_in_order_and_each_layer_says_what_it_holds():
    import state_runbooks
    assert tuple(re.findall(r"^- ``(\w+)``:", state_runbooks.__doc__, re.M)) == _layers()
    for layer in _layers():
        tree = ast.parse((LIBRARY / layer / "__init__.py").read_text())
        assert ast.get_docstring(tree), f"{layer}/__init__.py says what the layer holds"


def _links(path: pathlib.Path) -> list[str]:
    return [target for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text())
            if not re.match(r"[a-z]+:", target) and not target.startswith("#")]


@pytest.mark.parametrize("document", [REPO / "README.md", *sorted((REPO / "runbooks").glob("*.md")),
                                      REPO / "tests" / "benchmarks" / "README.md"],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(document):
    broken = [t for t in _links(document)
              if not (document.parent / t.split("#")[0]).exists()]
    assert not broken


def test_the_playbooks_learning_path_is_the_courses():
    """runbooks/README.md tells the path in prose; runbooks/course.yaml holds it for the book:
    the same notebooks in the same order, each after the same notebooks."""
    from state_runbooks.book.course import is_notebook_name, read_course
    course = read_course(REPO / "runbooks" / "course.yaml")
    items = re.findall(r"^\d+\. \[(\d\d_\w+)\]\([^)]*\) \(([^)]*)\)",
                       _section(PLAYBOOKS_README, "Learning path"), re.M)
    assert [name for name, _ in items] == [lesson.notebook for lesson in course.path]
    for (name, after), lesson in zip(items, course.path):
        wanted = {p[:2] for p in lesson.prerequisites if is_notebook_name(p)}
        assert set(re.findall(r"\b(\d\d)\b", after.split(":")[0])) == wanted, name
