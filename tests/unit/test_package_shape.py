"""Every runbook package has the template's shape, and every notebook calls its own package's face
only (no Spark needed: read from the source).

A package: ``__init__`` (the face, ``__all__``), ``demo.py`` (``DEMO`` and ``run_demo(rb, ...)``:
every step only the demo runs, one result), ``report.py`` (``summarize(summary, result)`` and
``what_this_showed(demo)``, one result each) and ``exercise.py`` (``try_it``). A notebook starts
with ``start_runbook`` after its parameters and imports only its package's face,
``state_runbooks.running`` and ``state_runbooks.common.formatting``.
"""
from __future__ import annotations

import ast
import pathlib

import nbformat
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
RUNBOOKS = REPO / "lib" / "state_runbooks" / "runbooks"
PACKAGES = sorted(p.name for p in RUNBOOKS.iterdir() if (p / "__init__.py").exists())
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
FACE = {"__init__.py": (), "demo.py": ("DEMO", "run_demo"),
        "report.py": ("summarize", "what_this_showed"), "exercise.py": ("try_it",)}
ALLOWED_IMPORTS = ("state_runbooks.running", "state_runbooks.common.formatting")


def _tree(path: pathlib.Path) -> ast.Module:
    return ast.parse(path.read_text())


def _top_level(tree: ast.Module) -> dict[str, ast.AST]:
    names = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            names.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
    return names


def _positional(function: ast.FunctionDef) -> list[str]:
    """The parameters a caller must pass: those without a default."""
    args = function.args.posonlyargs + function.args.args
    return [a.arg for a in args[: len(args) - len(function.args.defaults)]]


def face(package: str) -> set[str]:
    """The names in a package's ``__all__``."""
    node = _top_level(_tree(RUNBOOKS / package / "__init__.py")).get("__all__")
    assert node is not None, f"{package}/__init__.py has no __all__"
    return set(ast.literal_eval(node.value))


def shape_problems(package: str) -> list[str]:
    """What a package lacks of the template's shape, one line each."""
    problems = []
    for module, required in FACE.items():
        path = RUNBOOKS / package / module
        if not path.exists():
            problems.append(f"no {module}")
            continue
        defined = _top_level(_tree(path))
        problems += [f"{module} defines no {name}" for name in required if name not in defined]
    if problems:
        return problems
    report = _top_level(_tree(RUNBOOKS / package / "report.py"))
    demo = _top_level(_tree(RUNBOOKS / package / "demo.py"))
    if len(_positional(report["summarize"])) != 2:
        problems.append("report.summarize takes (summary, result)")
    if len(_positional(report["what_this_showed"])) != 1:
        problems.append("report.what_this_showed takes one result")
    run_demo = _positional(demo["run_demo"])
    if not run_demo or run_demo[0] != "rb" or len(run_demo) > 2:
        problems.append("demo.run_demo takes (rb) or (rb, the step's result)")
    missing = {"DEMO", "run_demo", "summarize", "what_this_showed", "try_it"} - face(package)
    problems += [f"__all__ lacks {name}" for name in sorted(missing)]
    return problems


def _code(nb) -> list[str]:
    """Each code cell's Python, without IPython's magics and shell lines."""
    return ["\n".join(line for line in cell.source.splitlines()
                      if not line.lstrip().startswith(("%", "!")))
            for cell in nb.cells if cell.cell_type == "code"]


def notebook_problems(nb, packages=PACKAGES, face_of=face) -> list[str]:
    """Where a notebook reaches past its package's face, one line each."""
    cells = _code(nb)
    parameters = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    first = sum(c.cell_type == "code" for c in nb.cells[: parameters + 1])
    problems, aliases = [], {}
    if first >= len(cells) or "start_runbook(" not in cells[first]:
        problems.append("the first cell after the parameters does not call start_runbook")
    trees = [ast.parse(source) for source in cells]
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                problems += [f"imports {a.name}" for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if module == "state_runbooks.runbooks":
                    for alias in node.names:
                        if alias.name not in packages:
                            problems.append(f"imports runbooks.{alias.name}")
                        aliases[alias.asname or alias.name] = alias.name
                elif not module.startswith(ALLOWED_IMPORTS):
                    problems.append(f"imports {module}")
    if len(set(aliases.values())) > 1:
        problems.append(f"imports more than one runbook package: {sorted(set(aliases.values()))}")
    for tree in trees:
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases):
                package = aliases[node.value.id]
                if node.attr not in face_of(package):
                    problems.append(f"{package}.{node.attr} is not in its __all__")
    return problems


@pytest.mark.parametrize("package", PACKAGES)
def test_every_runbook_package_has_the_templates_shape(package):
    assert shape_problems(package) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_calls_its_own_packages_face_only(path):
    assert notebook_problems(nbformat.read(str(path), as_version=4)) == []


def test_every_notebook_has_a_package_and_every_package_a_notebook():
    def package_of(path):
        source = "\n".join(_code(nbformat.read(str(path), as_version=4)))
        calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
                 and getattr(n.func, "id", "") == "start_runbook"]
        return calls[0].args[0].value if calls else f"{path.stem}: no start_runbook"
    assert sorted(package_of(p) for p in NOTEBOOKS) == PACKAGES


def _notebook(*cells: str):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('checkpoint_path: str = ""  # root')]
    nb.cells[0].metadata["tags"] = ["parameters"]
    nb.cells += [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


START = ("from state_runbooks.running.start import start_runbook\n"
         "from state_runbooks.runbooks import template as t\n"
         "rb = start_runbook('template', checkpoint_path)")


def test_the_rule_reports_each_way_past_the_face():
    face_of = {"template": {"count_rows", "DEMO"}}.get
    assert notebook_problems(_notebook(START, "t.count_rows(rb.checkpoint)"),
                             ["template"], face_of) == []
    assert notebook_problems(_notebook(
        START, "import tempfile\nfrom state_runbooks.core.fs import copy_tree\n"
               "from state_runbooks.runbooks import template, inspect_state\n"
               "t.count.count_rows(rb)"), ["template"], face_of) == [
        "imports tempfile", "imports state_runbooks.core.fs", "imports runbooks.inspect_state",
        "imports more than one runbook package: ['inspect_state', 'template']",
        "template.count is not in its __all__"]
    assert notebook_problems(_notebook("print(1)", START), ["template"], face_of) == [
        "the first cell after the parameters does not call start_runbook"]
