"""What ``key_where`` fixes: the key columns a conjunction sets with ``=`` (or an ``IN`` of one
value) to an expression of no column, from a parse of the condition as Spark SQL (sqlglot's Spark
dialect: quotes, backquotes, brackets, function calls and casts as Spark reads them). Anything else
(``OR``, a range, a column against a column) fixes nothing, and the trace then reads every
partition. Spark itself evaluates each value (:mod:`.locate`), checks that the key they make
satisfies the whole condition, and says why a condition it cannot analyse is wrong.

    key.user = 'u3'
    key.user IN ('u3')
    key.window.start = timestamp_millis(1767225604000) AND key.k = 2
"""
from __future__ import annotations

import datetime as dt

from state_runbooks.common.errors import RunbookError


def check_key_where(key_where: str) -> str:
    text = str(key_where or "").strip()
    if not text:
        raise RunbookError("key_where is empty: pass a SQL condition over the state's key columns "
                           "as Spark's reader names them, e.g. key.user = 'u3'")
    return text


def _key_path(node) -> str | None:
    """``key.window.start`` for a column of the key, else None."""
    from sqlglot import exp
    if not isinstance(node, (exp.Column, exp.Dot)):
        return None
    parts = [p.name for p in node.parts]
    if len(parts) < 2 or parts[0].lower() != "key":
        return None
    return ".".join(["key", *parts[1:]])


def _fixed_by(part) -> tuple[str, str] | None:
    """(path, value as Spark SQL) where one conjunct sets a key column to a column-free value."""
    from sqlglot import exp
    if isinstance(part, exp.EQ):
        pairs = [(part.left, part.right), (part.right, part.left)]
    elif isinstance(part, exp.In) and len(part.expressions) == 1 and not part.args.get("query"):
        pairs = [(part.this, part.expressions[0])]
    else:
        return None
    for column, value in pairs:
        path = _key_path(column)
        if path and value.find(exp.Column) is None:
            return path, value.sql(dialect="spark")
    return None


def fixed_columns(key_where: str) -> dict[str, str]:
    """Key column path (``key.window.start``) -> the SQL expression ``key_where`` sets it to."""
    import sqlglot
    from sqlglot import exp
    try:
        tree = sqlglot.parse_one(check_key_where(key_where), read="spark")
    except sqlglot.errors.SqlglotError:  # Spark's analysis of it says what is wrong
        return {}

    def conjuncts(node):
        node = node.unnest()  # brackets around a part
        if isinstance(node, exp.And):
            yield from conjuncts(node.left)
            yield from conjuncts(node.right)
        else:
            yield node
    return dict(found for part in conjuncts(tree) if (found := _fixed_by(part)))


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
