"""A runbook's parameters, checked against the types its parameters cell declares.

Papermill (``-p force false``), a schedule file, Databricks widgets and job parameters can all hand
a notebook a string where its parameters cell declares ``force: bool = False``; in Python the
string ``"false"`` is true. So the common start reads the declared types (the notebook's
``__annotations__``) and the values the run was given, turns each into its declared type where
that is unambiguous (``"3"`` -> ``3``, ``"[1, 2]"`` -> ``[1, 2]``) and refuses anything else in
one line that names the parameter. A bool takes one rule everywhere (the code here, each
parameter's comment, the README): ``true`` or ``false`` in any case, or a boolean (a YAML
schedule file's ``true``/``false``); anything else, ``no`` and ``0`` included, stops the run.
"""
from __future__ import annotations

import math
import os
import pathlib
import re
import typing

import yaml

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.locations import refuse_own_folder

BOOLEAN_WORDS = {"true": True, "false": False}  # the one spelling of a bool, in any case
_PLACEHOLDER = re.compile(r"^\s*<[^<>]*>\s*$")


def _kind(declared) -> type | None:
    """The plain type a declaration stands for (``list[str]`` -> ``list``); None: not checked."""
    declared = typing.get_origin(declared) or declared
    return declared if declared in (bool, int, float, str, list, dict) else None


def _parsed(text: str):
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def coerce(name: str, value, declared):
    """``value`` as the declared type of parameter ``name``, or a one-line RunbookError."""
    kind = _kind(declared)
    if value is None or kind is None or (isinstance(value, kind)
                                         and not (kind is int and isinstance(value, bool))):
        return value  # None: a parameter declared with the default None is left unset
    if kind is bool:
        if isinstance(value, str) and value.strip().lower() in BOOLEAN_WORDS:
            return BOOLEAN_WORDS[value.strip().lower()]
        raise RunbookError(f"{name}={value!r} is not true or false: pass -p {name} true or "
                           f"-p {name} false")
    if kind is str:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)  # -p checkpoint_path 2024 is a folder named 2024
        raise RunbookError(f"{name}={value!r} is not text: pass it as a string")
    if kind in (int, float):
        number = _parsed(value) if isinstance(value, str) else value
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise RunbookError(f"{name}={value!r} is not a number: pass e.g. -p {name} "
                               f"{1 if kind is int else 0.5}")
        if kind is int:
            if not float(number).is_integer():
                raise RunbookError(f"{name}={value!r} is not a whole number")
            return int(number)
        if not math.isfinite(number):
            raise RunbookError(f"{name}={value!r} is not a finite number")
        return float(number)
    parsed = _parsed(value) if isinstance(value, str) else value
    if isinstance(parsed, kind):
        return parsed
    example = "'[a, b]'" if kind is list else "'{key: value}'"
    raise RunbookError(f"{name}={value!r} is not a {kind.__name__}: pass e.g. -p {name} {example}")


# A parameter whose name ends so names a path (checkpoint_path, backup_dir, query_file, ...).
PATH_SUFFIXES = ("_path", "_dir", "_file")
# The paths a runbook writes to (the others it reads): never inside the runbooks' own files.
WRITTEN_PATHS = ("summary_path", "output_path", "backup_dir", "scratch_dir")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


def is_path_parameter(name: str) -> bool:
    return name.endswith(PATH_SUFFIXES)


def resolve_relative_paths(parameters: dict, base: str) -> dict:
    """Every path parameter given as a relative local path, made absolute against ``base`` (the
    folder a command was run from): the notebook runs elsewhere. URIs, absolute paths, empty
    values and ``<placeholders>`` stay as they are."""
    out = dict(parameters)
    for name, value in parameters.items():
        if not is_path_parameter(name) or not isinstance(value, str):
            continue
        text = value.strip()
        if not text or _SCHEME.match(text) or text.startswith("<") or \
                os.path.isabs(os.path.expanduser(text)):
            continue
        out[name] = os.path.normpath(os.path.join(base, text))
    return out


def check_not_placeholder(name: str, value) -> None:
    """Refuse a parameter still holding a schedule file's ``<placeholder>``."""
    if isinstance(value, str) and _PLACEHOLDER.match(value):
        raise RunbookError(f"{name} is still the placeholder {value.strip()}: set it in the "
                           f"schedule file or with -p {name} ...")


def check_written_paths(values: dict) -> None:
    """Refuse, in one line, a path a runbook would write to inside the runbooks' own files."""
    for name in WRITTEN_PATHS:
        if isinstance(values.get(name), str) and values[name].strip():
            refuse_own_folder(values[name].strip(), name)


def check_declared(namespace: dict) -> dict:
    """Every parameter the notebook declared with a type (its ``__annotations__``), coerced in
    ``namespace`` to that type; returns the values that were changed."""
    changed = {}
    for name, declared in dict(namespace.get("__annotations__", {})).items():
        if name not in namespace:
            continue
        value = coerce(name, namespace[name], declared)
        if value is not namespace[name]:
            namespace[name] = changed[name] = value
    return changed


def check_notebook_parameters() -> dict:
    """In a notebook kernel: :func:`check_declared` on the notebook's namespace. Elsewhere (a
    script calling the library), nothing: its arguments are its own."""
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    shell = get_ipython()
    if shell is None:
        return {}
    changed = check_declared(shell.user_ns)
    check_written_paths(shell.user_ns)
    return changed


def unknown_parameters(given: dict, declared: dict) -> list[str]:
    """The names in ``given`` that the notebook does not declare (papermill would add them
    silently, and the run would ignore them)."""
    return sorted(set(given) - set(declared))


_TYPE_NAMES = {"bool": bool, "int": int, "float": float, "str": str, "list": list, "dict": dict}


def declared_parameters(notebook) -> dict[str, type | None]:
    """The parameters a notebook's parameters cell declares, with their types (papermill reads
    the cell's type hints)."""
    import papermill
    found = papermill.inspect_notebook(str(notebook))
    return {name: _TYPE_NAMES.get(str(p.get("inferred_type_name", "")).split("[")[0])
            for name, p in found.items()}


def check_run_parameters(notebook, parameters: dict) -> dict:
    """Before a run starts: every name is one the notebook declares, and every value takes its
    declared type. Returns the parameters with those types."""
    declared = declared_parameters(notebook)
    unknown = unknown_parameters(parameters, declared)
    if unknown:
        raise RunbookError(f"{pathlib.Path(notebook).stem} has no parameter "
                           f"{', '.join(unknown)}: its parameters are {', '.join(declared)}")
    return {name: coerce(name, value, declared[name]) for name, value in parameters.items()}


def read_parameters_file(path: str) -> dict:
    """The ``name: value`` lines of a YAML parameters file (a schedule file), or a one-line
    RunbookError saying what is wrong with it."""
    if not path:
        return {}
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunbookError(f"parameters file {path} does not exist: pass the path of a YAML "
                           "file, or a schedule's name (state-runbooks list shows them)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RunbookError(f"cannot read parameters file {path}: "
                           f"{getattr(exc, 'strerror', None) or exc}") from None
    try:
        values = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise RunbookError(f"parameters file {path} is not valid YAML{where}: write one "
                           "'name: value' per line") from None
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise RunbookError(f"parameters file {path} holds a {type(values).__name__}, not "
                           "'name: value' lines")
    return values
