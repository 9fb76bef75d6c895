"""State schemas as Spark stores them, and Spark's rule for comparing them.

Each store keeps the key and value schema it was written with: ``state/<op>/0/[<store>/]
_metadata/schema`` (format v1 or v2: a version string, then the key and value schemas as JSON),
or, for transformWithState, ``state/<op>/_stateSchema/<store>/<batch>_<id>`` (v3: one entry per
column family). v1 and v2 are read here; v3 is read with Spark's own reader in a classic
session.

Spark's rule (``StateSchemaCompatibilityChecker``): a key or value schema is accepted when it is
the same, or the same fields in the same order with the same types, names aside, where a field
may become non-nullable but not nullable. A changed key raises
``STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE``, a changed value ``STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE``.
:func:`compatible` mirrors it for reading and for Spark Connect; in a classic session the verdict
comes from Spark's own check (:mod:`state_runbooks.query.planning`).
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass

from state_runbooks.session.spark_session import is_connect

KEY_NOT_COMPATIBLE = "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"
VALUE_NOT_COMPATIBLE = "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE"


@dataclass(frozen=True)
class ColumnFamilySchema:
    """The schemas of one store (or of one column family of transformWithState's store)."""
    name: str  # "default", or the column family (a state variable, its timers)
    key: dict  # a StructType as Spark's JSON
    value: dict


def _read_utf(data: bytes, at: int) -> tuple[str, int]:
    (length,) = struct.unpack_from(">H", data, at)
    start = at + 2
    # Java's modified UTF-8 differs from UTF-8 only for NUL and supplementary characters.
    return data[start:start + length].decode("utf-8", errors="replace"), start + length


def _read_chunks(data: bytes, at: int) -> tuple[str, int]:
    (count,) = struct.unpack_from(">i", data, at)
    at += 4
    parts = []
    for _ in range(count):
        part, at = _read_utf(data, at)
        parts.append(part)
    return "".join(parts), at


def parse_schema_file(data: bytes) -> list[ColumnFamilySchema] | None:
    """A v1 or v2 schema file's key and value schema; None for other versions (v3)."""
    version, at = _read_utf(data, 0)
    if version == "v1":
        key, at = _read_utf(data, at)
        value, _ = _read_utf(data, at)
    elif version == "v2":
        key, at = _read_chunks(data, at)
        value, _ = _read_chunks(data, at)
    else:
        return None
    return [ColumnFamilySchema("default", json.loads(key), json.loads(value))]


def read_schema_file(spark, fs, rel: str) -> list[ColumnFamilySchema] | None:
    """The schemas a schema file holds: v1 and v2 here, v3 with Spark's reader (classic
    sessions); None when it cannot be read from here."""
    data = fs.read_bytes(rel)
    parsed = parse_schema_file(data)
    if parsed is not None or is_connect(spark):
        return parsed
    return _read_with_spark(spark, data)


def _read_with_spark(spark, data: bytes) -> list[ColumnFamilySchema] | None:
    """A v3 schema file's column families, read by Spark's own reader from its bytes (read
    through the file seam). The reader takes Hadoop's seekable stream, so the bytes are read
    back from a local copy."""
    import os
    import tempfile

    from .spark_internals import read_v3_schema_file
    handle, local = tempfile.mkstemp(prefix="state-runbooks-schema-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        return [ColumnFamilySchema(name, json.loads(key), json.loads(value))
                for name, key, value in read_v3_schema_file(spark, local)]
    except Exception:  # noqa: BLE001 - another Spark version's reader: not readable from here
        return None
    finally:
        os.remove(local)


def _compatible_type(new, stored) -> bool:
    if isinstance(new, dict) and isinstance(stored, dict):
        if new.get("type") != stored.get("type"):
            return False
        kind = new.get("type")
        if kind == "struct":
            a, b = new.get("fields", []), stored.get("fields", [])
            return len(a) == len(b) and all(
                _compatible_type(x["type"], y["type"]) and (y["nullable"] or not x["nullable"])
                for x, y in zip(a, b))
        if kind == "array":
            return (_compatible_type(new["elementType"], stored["elementType"]) and
                    (stored["containsNull"] or not new["containsNull"]))
        if kind == "map":
            return (_compatible_type(new["keyType"], stored["keyType"]) and
                    _compatible_type(new["valueType"], stored["valueType"]) and
                    (stored["valueContainsNull"] or not new["valueContainsNull"]))
        return new == stored
    return new == stored


def compatible(new: dict, stored: dict) -> bool:
    """Spark's rule for one schema (``DataType.equalsIgnoreNameAndCompatibleNullability``)."""
    return new == stored or _compatible_type(new, stored)


def show(schema: dict | None) -> str:
    """A schema in one short line: ``name type, ...`` (nested structs in angle brackets)."""
    if schema is None:
        return "not readable from here"

    def kind(t) -> str:
        if isinstance(t, str):
            return {"void": "null"}.get(t, t)
        if t.get("type") == "struct":
            return "<" + ", ".join(f"{f['name']} {kind(f['type'])}" for f in t["fields"]) + ">"
        if t.get("type") == "array":
            return f"array<{kind(t['elementType'])}>"
        if t.get("type") == "map":
            return f"map<{kind(t['keyType'])}, {kind(t['valueType'])}>"
        return str(t.get("type"))

    return kind(schema)[1:-1] if schema.get("type") == "struct" else kind(schema)


def _without_metadata(t):
    """A type without its fields' metadata (Spark keeps e.g. the watermark delay there; its
    schema check ignores it)."""
    if isinstance(t, dict):
        return {k: _without_metadata(v) for k, v in t.items() if k != "metadata"}
    if isinstance(t, list):
        return [_without_metadata(v) for v in t]
    return t


def same(new: dict | None, stored: dict | None) -> bool:
    """Equal as Spark's check sees them: field metadata aside."""
    return new is not None and stored is not None and \
        _without_metadata(new) == _without_metadata(stored)


def changed_fields(new: dict, stored: dict) -> tuple[str, str]:
    """Both schemas shown from their first differing field on (the fields before it counted),
    so that a long key's change is visible in a short column."""
    a, b = new.get("fields", []), stored.get("fields", [])
    first = 0
    while first < min(len(a), len(b)) and _without_metadata(a[first]) == \
            _without_metadata(b[first]):
        first += 1
    lead = f"{first} same field{'s' if first != 1 else ''}, " if first else ""

    def part(fields):
        rest = show({"type": "struct", "fields": fields[first:]}) or "nothing after them"
        return lead + rest

    return part(b), part(a)


def difference(new: dict | None, stored: dict | None) -> str:
    """What changed between two schemas, in a few words."""
    if new is None or stored is None:
        return "not comparable from here"
    if same(new, stored):
        return "same"
    a, b = new.get("fields", []), stored.get("fields", [])
    if len(a) != len(b):
        names_a, names_b = [f["name"] for f in a], [f["name"] for f in b]
        added = [n for n in names_a if n not in names_b]
        removed = [n for n in names_b if n not in names_a]
        parts = ([f"added {', '.join(added)}"] if added else []) + \
                ([f"removed {', '.join(removed)}"] if removed else [])
        return f"{len(b)} -> {len(a)} fields" + (f" ({'; '.join(parts)})" if parts else "")
    for x, y in zip(a, b):
        if not _compatible_type(x["type"], y["type"]):
            return f"{y['name']}: {show({'type': 'struct', 'fields': [y]})} -> " \
                   f"{show({'type': 'struct', 'fields': [x]})}"
        if x["nullable"] and not y["nullable"]:
            return f"{x['name']} becomes nullable"
    if compatible(new, stored):
        renamed = [f"{y['name']} -> {x['name']}" for x, y in zip(a, b) if x["name"] != y["name"]]
        return ("names only: " + ", ".join(renamed) + " (Spark compares types, not names)"
                if renamed else "nullability only")
    return "changed"
