"""A notebook run compared with its committed (classic) outputs, and its "Try it yourself"
exercise done both ways its text says: a wrong prediction passed with ``-p my_prediction``, then
the run's own answer set in a cell and the exercise cell run again. Shared by the notebook tests
that run a demo over Spark Connect, on the standalone cluster, or with an exercise's parameter.

The comparison applies the sanitize rules nbval applies (tests/nbval_sanitize.cfg), which blank
paths and ids, never figures.
"""
from __future__ import annotations

import configparser
import re

import nbformat

from state_runbooks.cli.execution import execute
from state_runbooks.cli.runbook_files import repo_notebooks_dir, resolve_notebook
from state_runbooks.running.exercise import NO_PREDICTION

REPO = repo_notebooks_dir().parent
CHECK_TAG = "nbval-check-output"


def _sanitizers() -> list[tuple[re.Pattern, str]]:
    config = configparser.ConfigParser()
    config.read(REPO / "tests" / "nbval_sanitize.cfg")
    return [(re.compile(config[s]["regex"]), config[s]["replace"]) for s in config.sections()]


def compared_text(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        elif "text/plain" in output.get("data", {}) and output.get("output_type") != "display_data":
            parts.append(output["data"]["text/plain"])
    text = "".join(parts)
    for pattern, replacement in _sanitizers():
        text = pattern.sub(replacement, text)
    return text


def differences_from_golden(executed_path, name: str, skip: tuple = ()) -> list[str]:
    """The compared cells whose output differs from the committed notebook's, with both texts
    (``skip``: cell ids not compared)."""
    golden = nbformat.read(str(resolve_notebook(name)), as_version=4)
    ran = {c.get("id"): c for c in nbformat.read(str(executed_path), as_version=4).cells}
    out = []
    for cell in golden.cells:
        if cell.get("id") in skip:
            continue
        if cell.cell_type == "code" and CHECK_TAG in cell.metadata.get("tags", []):
            want, got = compared_text(cell), compared_text(ran[cell.get("id")])
            if want != got:
                out.append(f"cell {cell.get('id')}:\n--- classic\n{want}\n--- here\n{got}")
    return out


# -- each exercise done both ways its text says, in the runs here --------------------------------
WRONG_GUESS = "a wrong guess"


def run_exercised(name: str, folder, **parameters):
    """The notebook run with ``-p my_prediction`` wrong, from a copy that then does its exercise
    the other way its text says: ``my_prediction`` set in a cell to the run's own answer, and the
    exercise cell run again (cell ``try-it-right``)."""
    notebook = nbformat.read(str(resolve_notebook(name)), as_version=4)
    at = next(i for i, c in enumerate(notebook.cells) if c.get("id") == "try-it")
    notebook.cells[at + 1:at + 1] = [
        nbformat.v4.new_code_cell('my_prediction = str(exercise.answer) if exercise else ""'),
        nbformat.v4.new_code_cell(notebook.cells[at].source)]
    notebook.cells[at + 2]["id"] = "try-it-right"
    (folder / "exercised").mkdir(exist_ok=True)
    copy = folder / "exercised" / f"{name}.ipynb"
    nbformat.write(notebook, str(copy))
    return execute(copy, folder, {**parameters, "my_prediction": WRONG_GUESS}, html=False)


def exercise_differences(executed_path, name: str, question: str = "") -> list[str]:
    """What the exercise said, both ways, that is not its question (``question``, else the
    committed notebook's) with the verdict each prediction deserves."""
    golden = {c.get("id"): c for c in nbformat.read(str(resolve_notebook(name)), 4).cells}
    ran = {c.get("id"): c for c in nbformat.read(str(executed_path), 4).cells}
    asked = (compared_text(golden["try-it"]).split(NO_PREDICTION)[0] if not question else
             compared_text(ran["try-it"]).split(f"not quite: you said {WRONG_GUESS}")[0])
    if question and question not in asked:
        return [f"cell try-it asks:\n{asked}\nnot: {question}..."]
    out = []
    for cell, verdict in (("try-it", f"not quite: you said {WRONG_GUESS}; the run says "),
                          ("try-it-right", "right: ")):
        said = compared_text(ran[cell])
        if not said.startswith(asked + verdict):
            out.append(f"cell {cell}:\n--- expected\n{asked}{verdict}...\n--- here\n{said}")
    return out


def says_what_classic_says(result, name: str) -> None:
    """The run's compared cells as classic, its exercise done both ways."""
    assert differences_from_golden(result.notebook, name, skip=("try-it",)) == []
    assert exercise_differences(result.notebook, name) == []


