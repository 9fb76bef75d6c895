"""The library's house rules, read from its imports (no Spark needed).

The layers are ``LAYERS`` below, from the bottom up: the runtime (``RUNTIME``), where a module
imports only its own layer and those below it, then the tooling above it (``TOOLING``: no runtime
module imports it; its areas may import one another). What each layer holds is said in its own
docstring, the package's and the README's Layout, which ``test_docs.py`` checks against this list.

No module imports itself back in a circle, and none is over 500 lines; no module but
``core.spark_internals`` reaches into Spark's JVM (``_jvm``, ``_jsc``, ``_jsparkSession``). Each
rule is a function of an import graph (or of the modules' text): the library's, and small ones
with violations that the rules must report.
"""
from __future__ import annotations

import ast
import pathlib
import re

import pytest

LIB = pathlib.Path(__file__).resolve().parents[2] / "lib" / "state_runbooks"
RUNTIME = ("common", "session", "core", "query", "safety", "demos", "running", "runbooks")
TOOLING = ("dev", "book", "cli")  # one floor above the runtime
LAYERS = RUNTIME + TOOLING
SPARK_INTERNALS = "state_runbooks.core.spark_internals"  # the one module that reaches the JVM
_JVM_HANDLE = re.compile(r"\._(jvm|jsc|jsparkSession)\b")
MAX_LINES = 500


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(LIB.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    path = LIB.parent / name.replace(".", "/")
    return path.is_dir() or path.with_suffix(".py").exists()


def imports_in(source: str, name: str, is_package: bool = False) -> set[str]:
    """Every state_runbooks module the code of module ``name`` imports, at any depth (function
    bodies too)."""
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
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
            found |= {f"{module}.{a.name}" for a in node.names if _is_module(f"{module}.{a.name}")}
    return found


def _imports(path: pathlib.Path) -> set[str]:
    return imports_in(path.read_text(), _module_name(path), path.name == "__init__.py")


MODULES = {_module_name(p): p for p in LIB.rglob("*.py")}
GRAPH = {name: {m for m in _imports(path) if m in MODULES} for name, path in MODULES.items()}
ENTRY_POINT = "state_runbooks.__main__"  # python -m state_runbooks: it runs the command line


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def _floor(layer: str) -> int:
    """A runtime layer's place; the tooling areas share the floor above the runtime."""
    return RUNTIME.index(layer) if layer in RUNTIME else len(RUNTIME)


def _runbook(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "runbooks" else None


# -- the rules, each a function of an import graph (module -> the modules it imports) -------------
def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``a -> b`` for every module importing one of a layer above its own."""
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if _layer(a) and _layer(b) and _floor(_layer(b)) > _floor(_layer(a)))


def runtime_imports_of_tooling(graph: dict[str, set[str]]) -> list[str]:
    """``a -> b`` for every runtime module (or the package itself, or its resources) importing
    a tooling module: the runbooks run without the tooling."""
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if _layer(b) in TOOLING and _layer(a) not in TOOLING and a != ENTRY_POINT)


def imports_across_runbooks(graph: dict[str, set[str]]) -> list[str]:
    """``a -> b`` for every runbook package importing another."""
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if _runbook(a) and _runbook(b) and _runbook(a) != _runbook(b))


def imports_of_the_command_line(graph: dict[str, set[str]]) -> list[str]:
    """``a -> b`` for every module outside the tooling importing ``cli``, in a layer or not (the
    package itself, ``resources``), but the entry point of ``python -m state_runbooks``."""
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if _layer(b) == "cli" and _layer(a) not in TOOLING and a != ENTRY_POINT)


def jvm_handles_outside_spark_internals(sources: dict[str, str]) -> list[str]:
    """``module: line`` for every line outside ``core.spark_internals`` that takes one of
    PySpark's handles on the JVM (``._jvm``, ``._jsc``, ``._jsparkSession``); ``sources``: each
    module's text."""
    return [f"{name}: {line.strip()}" for name, text in sorted(sources.items())
            if name != SPARK_INTERNALS and not name.startswith(f"{SPARK_INTERNALS}.")
            for line in text.splitlines() if _JVM_HANDLE.search(line)]


def import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A circle of imports (its modules, the first one repeated at the end), or None."""
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = "open"
        for target in sorted(graph.get(module, ())):
            if target == module or target == module.rpartition(".")[0]:
                continue  # a module importing its own package face is not a cycle of code
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                cycle = visit(target, path + [target])
                if cycle:
                    return cycle
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module, [module])
            if cycle:
                return cycle
    return None


# -- the library as it is ------------------------------------------------------------------------
def test_every_module_sits_in_a_layer():
    outside = [m for m in MODULES if _layer(m) is None
               and m not in ("state_runbooks", ENTRY_POINT)
               and not m.startswith("state_runbooks.resources")]
    assert outside == []


def test_no_layer_imports_one_above_it():
    assert upward_imports(GRAPH) == []


def test_no_runbook_imports_another():
    assert imports_across_runbooks(GRAPH) == []


def test_no_runtime_module_imports_the_tooling():
    assert runtime_imports_of_tooling(GRAPH) == []
    assert {_layer(m) for m in MODULES} >= set(TOOLING)  # each area is there, and so checked


def test_nothing_but_the_entry_point_and_the_tooling_imports_the_command_line():
    assert LAYERS[-1] == "cli"  # the top floor
    assert imports_of_the_command_line(GRAPH) == []
    assert GRAPH[ENTRY_POINT] & {m for m in MODULES if _layer(m) == "cli"}


def test_only_spark_internals_reaches_into_the_jvm():
    assert jvm_handles_outside_spark_internals(
        {name: path.read_text() for name, path in MODULES.items()}) == []
    assert SPARK_INTERNALS in MODULES


def test_no_import_cycle():
    cycle = import_cycle(GRAPH)
    assert cycle is None, " -> ".join(cycle)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_is_readable_in_one_sitting(module):
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines"


# -- the rules catch what they are for (they are not vacuous) ------------------------------------
def test_the_rules_report_violations_in_a_small_graph():
    """A core module importing the command line (which imports it back), one runbook importing
    another, and a module outside the layers importing the command line: each rule names its
    violation, and a graph without them passes."""
    core, cli, common = "state_runbooks.core.x", "state_runbooks.cli.y", "state_runbooks.common.z"
    one, other = "state_runbooks.runbooks.one.steps", "state_runbooks.runbooks.other.steps"
    start = "state_runbooks.running.start"
    clean = {core: {common}, cli: {core, start}, common: set(), start: {core},
             one: {start, "state_runbooks.runbooks.one"}, "state_runbooks.runbooks.one": {one},
             other: {start}, ENTRY_POINT: {cli}}
    assert upward_imports(clean) == imports_across_runbooks(clean) == []
    assert imports_of_the_command_line(clean) == [] and import_cycle(clean) is None

    broken = {**clean, core: {common, cli}, one: {start, other},
              "state_runbooks.resources.config": {cli}}
    assert upward_imports(broken) == [f"{core} -> {cli}"]
    assert imports_across_runbooks(broken) == [f"{one} -> {other}"]
    assert imports_of_the_command_line(broken) == [f"{core} -> {cli}",
                                                   f"state_runbooks.resources.config -> {cli}"]
    assert import_cycle(broken) == [cli, core, cli]


def test_the_tooling_rule_reports_a_runtime_module_importing_the_tooling():
    """The command line importing the course book and the book the command line's runner, both
    tooling, pass; a runtime module importing the class archive, and a runbook importing the
    book, are each named."""
    start, archive = "state_runbooks.running.start", "state_runbooks.dev.class_archive"
    pages, headless = "state_runbooks.book.pages", "state_runbooks.cli.headless"
    runbook, main = "state_runbooks.runbooks.one.steps", "state_runbooks.cli.main"
    clean = {start: set(), archive: set(), pages: {headless}, headless: {archive, start},
             main: {pages, headless}, runbook: {start}, ENTRY_POINT: {main}}
    assert runtime_imports_of_tooling(clean) == upward_imports(clean) == []
    assert imports_of_the_command_line(clean) == [] and import_cycle(clean) is None

    broken = {**clean, start: {archive}, runbook: {start, pages}}
    assert runtime_imports_of_tooling(broken) == [f"{runbook} -> {pages}", f"{start} -> {archive}"]
    assert upward_imports(broken) == runtime_imports_of_tooling(broken)


def test_the_jvm_rule_reports_a_handle_taken_outside_spark_internals():
    """``spark._jvm`` in a runbook and ``_jsc`` in the reader are named; the same in
    ``core.spark_internals`` (or a module of it), and a name that only contains the words, are
    not."""
    sources = {SPARK_INTERNALS: "jvm = spark._jvm\n",
               f"{SPARK_INTERNALS}.rewriter": "session = spark._jsparkSession\n",
               "state_runbooks.runbooks.one.steps": "x = 1\nbean = spark._jvm.java.lang.X()\n",
               "state_runbooks.core.reader": "conf = spark.sparkContext._jsc.hadoopConfiguration()",
               "state_runbooks.core.names": "jvm_pid = heap._jvm_pid_field_is_not_a_handle\n"}
    assert jvm_handles_outside_spark_internals(sources) == [
        "state_runbooks.core.reader: conf = spark.sparkContext._jsc.hadoopConfiguration()",
        "state_runbooks.runbooks.one.steps: bean = spark._jvm.java.lang.X()"]


def test_the_rules_report_a_violation_added_to_the_library():
    """The graph read from the library, with one upward import and one runbook importing another
    added as the import statements would be read from a module's code."""
    added = imports_in("from state_runbooks.cli.main import main\n"
                       "def later():\n    from ..cli import runbook_files\n",
                       "state_runbooks.core.checkpoint")
    assert added == {"state_runbooks.cli.main", "state_runbooks.cli",
                     "state_runbooks.cli.runbook_files"}
    across = imports_in("from state_runbooks.runbooks.inspect_state import report\n",
                        "state_runbooks.runbooks.monitor_state.monitor")
    graph = {**GRAPH,
             "state_runbooks.core.checkpoint": GRAPH["state_runbooks.core.checkpoint"] | added,
             "state_runbooks.runbooks.monitor_state.monitor":
                 GRAPH["state_runbooks.runbooks.monitor_state.monitor"] | across}
    assert upward_imports(graph) == [f"state_runbooks.core.checkpoint -> {m}" for m in sorted(added)]
    assert imports_of_the_command_line(graph) == upward_imports(graph)
    assert imports_across_runbooks(graph) == [
        "state_runbooks.runbooks.monitor_state.monitor -> state_runbooks.runbooks.inspect_state",
        "state_runbooks.runbooks.monitor_state.monitor -> "
        "state_runbooks.runbooks.inspect_state.report"]
    assert import_cycle(graph) is not None  # the command line imports the checkpoint reader
