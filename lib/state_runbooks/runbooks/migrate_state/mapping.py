"""Where each field of the changed query's state comes from: decided on the two schemas alone,
before any row is read.

A field of the new key or value is, in this order of preference:

- ``fill``: the user's SQL expression over the old state's ``key`` and ``value`` (``fill`` names
  fields as Spark's state reader shows them: ``key.tenant``, ``value.max``);
- ``same``: the old field of that name (or, where names do not pair the fields up and both
  structs have as many fields, the field at that position: Spark compares types by position, so
  a name change alone keeps it: ``renamed``), with the same type;
- ``widened``: that field, cast to a wider type without loss (``int`` to ``bigint``, ``float``
  to ``double``, a decimal with more digits on both sides of the point);
- ``rebuilt``: a struct whose fields are each mapped by these rules.

Anything else is refused, naming the field and the choices: a field with no source, or a cast
that can lose values (``bigint`` to ``int``, ``string`` to ``int``). Old fields the new state
does not keep are listed as dropped.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError

# Types a value widens to with every value kept (Spark's cast is exact between them).
_WIDER = {
    "byte": ("short", "integer", "long", "float", "double"),
    "short": ("integer", "long", "float", "double"),
    "integer": ("long", "double"),
    "float": ("double",),
}
# Digits before the point that each integral type needs in a decimal.
_INTEGRAL_DIGITS = {"byte": 3, "short": 5, "integer": 10, "long": 20}
NEW_CHECKPOINT = ("or start the changed query on a new checkpoint, which rebuilds its state from "
                  "the input the source still holds (what is older is lost)")


@dataclass(frozen=True)
class FieldSource:
    """Where one field of the new state comes from."""
    field: str  # e.g. value.max
    kind: str  # fill, same, renamed, widened, rebuilt
    source: str  # e.g. "fill: NULL", "value.count (int -> bigint)"
    origin: int | None = None  # the old field's position in its struct (None: a fill)

    def line(self) -> str:
        return f"{self.field} <- {self.source}"


@dataclass
class Mapping:
    """The mapping of one part (``key`` or ``value``) of a store."""
    part: str
    changed: bool
    sources: list[FieldSource] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def parse_fill(fill) -> dict[str, str]:
    """``fill`` as a dict of field -> SQL expression: a dict, or a string holding its JSON (as
    papermill's ``-p`` passes it); empty: none."""
    if isinstance(fill, dict):
        parsed = fill
    elif not str(fill or "").strip():
        return {}
    else:
        try:
            parsed = json.loads(fill)
        except json.JSONDecodeError as exc:
            raise RunbookError(f"fill is not a JSON object ({exc.msg} at character {exc.pos}): "
                               "pass e.g. {\"value.max\": \"NULL\"}") from None
    if not isinstance(parsed, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                               and v.strip() for k, v in parsed.items()):
        raise RunbookError("fill must map each field (e.g. \"key.tenant\") to a SQL expression "
                           "(a non-empty string), e.g. {\"key.tenant\": \"'acme'\"}")
    bad = [k for k in parsed if k.split(".", 1)[0] not in ("key", "value") or "." not in k]
    if bad:
        raise RunbookError(f"fill names {bad[0]!r}: name a field as Spark's state reader shows "
                           "it, key.<field> or value.<field> (nested: value.a.b)")
    return {k.strip(): v.strip() for k, v in parsed.items()}


def type_text(dtype) -> str:
    return dtype.simpleString()


def _same_type(a, b) -> bool:
    """Equal as Spark's schema check compares them: names, nullability and metadata aside."""
    from pyspark.sql import types as T
    if isinstance(a, T.StructType) and isinstance(b, T.StructType):
        return len(a.fields) == len(b.fields) and all(
            _same_type(x.dataType, y.dataType) for x, y in zip(a.fields, b.fields))
    if isinstance(a, T.ArrayType) and isinstance(b, T.ArrayType):
        return _same_type(a.elementType, b.elementType)
    if isinstance(a, T.MapType) and isinstance(b, T.MapType):
        return _same_type(a.keyType, b.keyType) and _same_type(a.valueType, b.valueType)
    return a == b


def widens(old, new) -> bool:
    """Whether every value of type ``old`` casts to ``new`` unchanged."""
    from pyspark.sql import types as T
    if isinstance(new, T.DecimalType):
        if isinstance(old, T.DecimalType):
            return new.scale >= old.scale and new.precision - new.scale >= \
                old.precision - old.scale
        digits = _INTEGRAL_DIGITS.get(old.typeName())
        return digits is not None and new.precision - new.scale >= digits
    return new.typeName() in _WIDER.get(old.typeName(), ())


def _lines_up(old_fields, new_fields) -> bool:
    return all(_same_type(o.dataType, n.dataType) or widens(o.dataType, n.dataType)
               for o, n in zip(old_fields, new_fields))


def _by_name(old, new) -> bool:
    """Every new field's name names exactly one old field."""
    names = [f.name for f in old.fields]
    return all(names.count(f.name) == 1 for f in new.fields)


def _old_field(old, new, index: int, by_name: bool):
    """The old field the new field at ``index`` comes from: by name where every new name names
    one old field; else by position where both have as many fields (Spark compares by position,
    so a rename keeps a field, and a narrowed type is reported as such); else by name, and where
    the old names repeat (two aggregates of one kind), by position among the leading fields when
    the old ones line up with them (fields added at the end)."""
    name = new.fields[index].name
    named = [f for f in old.fields if f.name == name]
    if by_name or len(named) == 1:
        return named[0] if named else None
    if len(old.fields) == len(new.fields):
        return old.fields[index]
    if named and index < len(old.fields) < len(new.fields) and \
            _lines_up(old.fields, new.fields):
        return old.fields[index]
    return None


def map_struct(path: str, old, new, fill: dict[str, str], out: Mapping) -> None:
    """Record in ``out`` the source of every field of ``new`` (a struct at ``path``) from
    ``old`` (the struct there in the old state, or None)."""
    from pyspark.sql import types as T
    by_name = old is not None and _by_name(old, new)
    used = set()
    for i, nf in enumerate(new.fields):
        name = f"{path}.{nf.name}"
        if name in fill:
            out.sources.append(FieldSource(name, "fill", f"fill: {fill[name]}"))
            continue
        of = _old_field(old, new, i, by_name) if old is not None else None
        if of is None:
            out.problems.append(
                f"{name} ({type_text(nf.dataType)}) has no source in the old state: pass fill "
                f"{{\"{name}\": \"<SQL over key and value>\"}}, " + NEW_CHECKPOINT)
            continue
        used.add(id(of))
        was, origin = f"{path}.{of.name}", next(j for j, f in enumerate(old.fields) if f is of)
        if _same_type(of.dataType, nf.dataType):
            kind = "same" if of.name == nf.name else "renamed"
            out.sources.append(FieldSource(name, kind, was, origin))
        elif isinstance(of.dataType, T.StructType) and isinstance(nf.dataType, T.StructType):
            out.sources.append(FieldSource(name, "rebuilt", f"{was}, field by field", origin))
            map_struct(name, of.dataType, nf.dataType, fill, out)
        elif widens(of.dataType, nf.dataType):
            out.sources.append(FieldSource(
                name, "widened", f"{was} ({type_text(of.dataType)} -> {type_text(nf.dataType)})",
                origin))
        else:
            out.problems.append(
                f"{name}: {type_text(of.dataType)} -> {type_text(nf.dataType)} can lose values: "
                f"pass fill {{\"{name}\": \"<SQL that says how>\"}}, " + NEW_CHECKPOINT)
    if old is not None:
        out.dropped += [f"{path}.{f.name}" for f in old.fields if id(f) not in used]


def map_part(part: str, old, new, fill: dict[str, str]) -> Mapping:
    """The mapping of a store's ``key`` or ``value`` from ``old`` to ``new`` (StructTypes)."""
    changed = old is None or not _same_type(old, new) or any(k.startswith(part + ".")
                                                             for k in fill)
    out = Mapping(part, changed)
    if not changed:
        return out
    map_struct(part, old, new, fill, out)
    return out


def unknown_fills(fill: dict[str, str], fields: set[str]) -> list[str]:
    """The fill entries that name no field of the new state (``fields``: every field path)."""
    return [k for k in fill if k not in fields]


def field_paths(part: str, dtype) -> set[str]:
    """Every field path of a struct type, nested ones included (``value.a``, ``value.a.b``)."""
    from pyspark.sql import types as T
    out = set()
    for f in dtype.fields:
        name = f"{part}.{f.name}"
        out.add(name)
        if isinstance(f.dataType, T.StructType):
            out |= field_paths(name, f.dataType)
    return out
