"""What ``key_where`` fixes: the key columns it sets with ``=`` in a conjunction, read from the
text alone (no Spark), conservatively: anything else (``OR``, a range, a function of a column)
fixes nothing, and the trace then reads every partition.

    key.user = 'u3'
    key.user IN ('u3')
    key.window.start = TIMESTAMP '2026-01-01 00:00:10' AND key.k = 2
"""
from __future__ import annotations

import datetime as dt
import re

from state_runbooks.common.errors import RunbookError

_PATH = r"key(?:\.(?:[A-Za-z_]\w*|`[^`]+`))+"
_EQUALITY = re.compile(rf"^\s*(?:({_PATH})\s*=\s*(.+?)|(.+?)\s*=\s*({_PATH}))\s*$", re.S)
_IN_ONE = re.compile(rf"^\s*({_PATH})\s+in\s*\(\s*([^,()]+?)\s*\)\s*$", re.I | re.S)
_AND = re.compile(r"\s+and\s+", re.I)


def check_key_where(key_where: str) -> str:
    text = str(key_where or "").strip()
    if not text:
        raise RunbookError("key_where is empty: pass a SQL condition over the state's key columns "
                           "as Spark's reader names them, e.g. key.user = 'u3'")
    return text


def _conjuncts(text: str) -> list[str] | None:
    """``text`` split on its top-level ``AND``s; None when it holds an ``OR`` or brackets a
    part (then it is not a plain conjunction)."""
    outside, quoted, depth, parts, start = [], None, 0, [], 0
    for i, ch in enumerate(text):
        if quoted:
            quoted = None if ch == quoted else quoted
        elif ch in "'\"`":
            quoted = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        # Quoted and bracketed text masked (not with blanks: an AND must stand between words).
        outside.append(ch if not quoted and depth == 0 and ch not in "'\"`()" else "_")
    flat = "".join(outside)
    if re.search(r"\bor\b", flat, re.I):
        return None
    for m in _AND.finditer(flat):
        parts.append(text[start:m.start()])
        start = m.end()
    parts.append(text[start:])
    return parts


def _path(raw: str) -> str:
    return ".".join(p.strip("`") for p in raw.split("."))


def fixed_columns(key_where: str) -> dict[str, str]:
    """Key column path (``key.window.start``) -> the SQL expression ``key_where`` sets it to."""
    parts = _conjuncts(check_key_where(key_where))
    fixed = {}
    for part in parts or []:
        one = _IN_ONE.match(part)  # IN with one value: an equality papermill's parser can show
        if one and "key." not in one.group(2):
            fixed[_path(one.group(1))] = one.group(2).strip()
            continue
        m = _EQUALITY.match(part.strip().strip("()") if part.count("(") == part.count(")")
                            else part)
        if not m:
            continue
        path, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        if "key." in value:  # a column compared with a column fixes nothing
            continue
        fixed[_path(path)] = value.strip()
    return fixed


def leaf_paths(dtype, prefix: str = "key") -> list[str]:
    """Every leaf column of a struct type, by path."""
    from pyspark.sql import types as T
    out = []
    for f in dtype.fields:
        name = f"{prefix}.{f.name}"
        out += leaf_paths(f.dataType, name) if isinstance(f.dataType, T.StructType) else [name]
    return out


def fixes(fixed: dict[str, str], partition_key_type) -> bool:
    """Whether every leaf of the partitioning key is set (or a whole struct field of it)."""
    from pyspark.sql import types as T
    for f in partition_key_type.fields:
        name = f"key.{f.name}"
        if name in fixed:
            continue
        if not isinstance(f.dataType, T.StructType) or \
                not all(p in fixed for p in leaf_paths(f.dataType, name)):
            return False
    return True


def _literal(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dt.datetime):
        # PySpark returns a timestamp as a naive datetime in this machine's zone: said in UTC,
        # the literal means the same instant in any session's zone.
        utc = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return f"TIMESTAMP '{utc.isoformat(sep=' ')} UTC'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def key_where_for(key, prefix: str = "key") -> str:
    """The ``key_where`` that fixes every column of a key row as Spark's reader returns it (a
    row 03 shows, say)."""
    parts = []
    for name, value in key.asDict().items():
        path = f"{prefix}.{name}"
        if hasattr(value, "asDict"):
            parts.append(key_where_for(value, path))
        elif value is None:
            parts.append(f"{path} IS NULL")
        else:
            parts.append(f"{path} = {_literal(value)}")
    return " AND ".join(parts)
