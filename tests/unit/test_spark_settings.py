"""Spark's setting names are spelled in one module (common/spark_settings.py): every other module
of the library names them through its constants, in code and in what it tells the reader."""
from __future__ import annotations

import ast
import pathlib
import re

LIB = pathlib.Path(__file__).resolve().parents[2] / "lib" / "state_runbooks"
SETTINGS = LIB / "common" / "spark_settings.py"
NAMES = re.findall(r'^[A-Z_]+ = "(spark\.[^"]+)"', SETTINGS.read_text(), re.M)
SETTING_LIKE = re.compile(r"^spark\.(sql|streaming|driver|executor|eventLog|ui|memory|master)"
                          r"[\w.]*$")


def _docstrings(tree) -> set[int]:
    """The ids of the docstring nodes (prose for the next developer, not what runs)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def spelled_out(path: pathlib.Path) -> list[str]:
    """Where a module spells a setting name in a string that runs (a literal, or a part of an
    f-string: what it tells the reader included); docstrings aside."""
    tree = ast.parse(path.read_text())
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                id(node) not in docstrings:
            text = node.value
            hits = [n for n in NAMES if re.search(re.escape(n) + r"(?![\w.])", text)]
            if hits or SETTING_LIKE.match(text):
                found.append(f"{path.relative_to(LIB)}:{node.lineno}: {hits or [text]}")
    return found


def test_setting_names_are_spelled_in_one_module():
    assert len(NAMES) > 30
    spelled = [hit for path in sorted(LIB.rglob("*.py")) if path != SETTINGS
               for hit in spelled_out(path)]
    assert spelled == []


def test_the_check_sees_a_name_spelled_out(tmp_path):
    module = tmp_path / "module.py"
    module.write_text('X = "spark.sql.shuffle.partitions"\n'
                      'Y = f"set {X} or spark.sql.streaming.stateStore.providerClass"\n')
    old_lib = LIB
    try:
        globals()["LIB"] = tmp_path
        assert len(spelled_out(module)) == 2
    finally:
        globals()["LIB"] = old_lib
