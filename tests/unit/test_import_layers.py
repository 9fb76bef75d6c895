"""The library's house rules, read from its imports (no Spark needed).

Layers, from the bottom up; a module imports only its own layer and those below it:

    common   errors, formatting, redaction, Spark's names for things, the Java check
    session  the Spark session and the local servers
    core     reading a checkpoint: file systems, logs, operators, stores, state reader, loads, growth
    safety   changing a checkpoint without losing anything: activity guard, backup, journal, undo
    demos    demo checkpoints and event logs, and the faults the tests and demos inject
    running  what notebook cells and runbooks import: a runbook's start, parameters, summary, plots
    runbooks one package per notebook; none imports another
    cli      the command line and notebooks run as whole processes (papermill, kernel, goldens)

No module imports itself back in a circle, and none is over 500 lines.
"""
from __future__ import annotations

import ast
import pathlib

import pytest

LIB = pathlib.Path(__file__).resolve().parents[2] / "lib" / "state_runbooks"
LAYERS = ("common", "session", "core", "safety", "demos", "running", "runbooks", "cli")
MAX_LINES = 500


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(LIB.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: pathlib.Path) -> set[str]:
    """Every state_runbooks module this file imports, at any depth (function bodies too)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("state_runbooks")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").startswith("state_runbooks"):
                module = node.module
            else:
                continue
            found.add(module)
            found |= {f"{module}.{a.name}" for a in node.names
                      if (LIB.parent / f"{module}.{a.name}".replace(".", "/")).exists()
                      or (LIB.parent / (f"{module}.{a.name}".replace(".", "/") + ".py")).exists()}
    return found


MODULES = {_module_name(p): p for p in LIB.rglob("*.py")}
GRAPH = {name: {m for m in _imports(path) if m in MODULES} for name, path in MODULES.items()}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def _runbook(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "runbooks" else None


def test_every_module_sits_in_a_layer():
    outside = [m for m in MODULES if _layer(m) is None
               and m not in ("state_runbooks", "state_runbooks.__main__")
               and not m.startswith("state_runbooks.resources")]
    assert outside == []


def test_no_layer_imports_one_above_it():
    upward = [f"{a} -> {b}" for a, targets in GRAPH.items() for b in targets
              if _layer(a) and _layer(b) and LAYERS.index(_layer(b)) > LAYERS.index(_layer(a))]
    assert upward == []


def test_no_runbook_imports_another():
    across = [f"{a} -> {b}" for a, targets in GRAPH.items() for b in targets
              if _runbook(a) and _runbook(b) and _runbook(a) != _runbook(b)]
    assert across == []


def test_no_import_cycle():
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = "open"
        for target in sorted(GRAPH[module]):
            if target == module or target == module.rpartition(".")[0]:
                continue  # a module importing its own package face is not a cycle of code
            if state.get(target) == "open":
                return path + [target]
            if target not in state:
                cycle = visit(target, path + [target])
                if cycle:
                    return cycle
        state[module] = "done"
        return None

    for module in sorted(GRAPH):
        if module not in state:
            cycle = visit(module, [module])
            assert cycle is None, " -> ".join(cycle)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_is_readable_in_one_sitting(module):
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines"


def test_the_checks_see_a_violation():
    """The rules above would catch a runbook importing another (they are not vacuous)."""
    assert _runbook("state_runbooks.runbooks.inspect_state.stores") == "inspect_state"
    assert _layer("state_runbooks.core.checkpoint") == "core"
    assert len(GRAPH) > 40 and any(GRAPH.values())
