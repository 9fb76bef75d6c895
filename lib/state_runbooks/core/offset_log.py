"""Entries of the offsets log (``offsets/<batch>``) in every format Spark writes: read, checked and
written in one place.

Spark's ``OffsetSeqLog`` (4.2 and 4.3) writes two formats, each a version line, the batch's
metadata as one JSON line, then one line per source:

- format 1 (``v1``): the sources in the order of the query's plan, each line the source's offset
  as JSON, or ``-`` when the source had none yet;
- format 2 (``v2``: named sources, under ``spark.sql.streaming.queryEvolution.enableSourceEvolution``
  or ``spark.sql.streaming.offsetLog.formatVersion=2``): a ``<name>:<offset>`` line per source
  (``-`` again for none). Spark splits each line at its first ``:`` and refuses a line without
  one (``Invalid OffsetMap format``); a restart matches sources by name, not by position, and a
  file source logs its files under ``sources/<name>/`` instead of ``sources/<position>/``.

A later format is one these runbooks do not know: :class:`EntryProblem` says ``unknown`` with
what the entry holds, never that it is damaged (a newer Spark wrote it; moving it would lose a
healthy query's progress).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .log_files import json_problem

KNOWN_FORMATS = (1, 2)
NO_OFFSET = "-"  # a source with no offset yet (Spark's SERIALIZED_VOID_OFFSET)
_VERSION_LINE = re.compile(r"^v(\d+)$")


@dataclass(frozen=True)
class SourceOffset:
    """One source's line: its name (format 2) and its offset as Spark wrote it."""
    name: str | None  # None in format 1: the source is its position
    text: str | None  # the offset's JSON text; None for "-"

    @property
    def value(self):
        """The offset parsed from JSON (a dict, a number, a string), None for no offset."""
        if self.text is None:
            return None
        try:
            return json.loads(self.text)
        except json.JSONDecodeError:
            return self.text


@dataclass(frozen=True)
class OffsetsText:
    """An offsets entry as its lines say: its format, its metadata and its sources, in order."""
    version: int
    metadata: dict
    sources: tuple[SourceOffset, ...]

    @property
    def named(self) -> bool:
        return self.version == 2


class EntryProblem(ValueError):
    """Why an entry does not read as Spark reads it: ``damage`` is ``empty``, ``truncated``,
    ``garbage`` or ``unknown`` (a format these runbooks do not know), ``what`` one line."""

    def __init__(self, damage: str, what: str):
        super().__init__(what)
        self.damage, self.what = damage, what


def what_it_holds(text: str, lines: int = 3) -> str:
    """The first lines of an entry, shortened, for an "unknown: here is what I see" message."""
    shown = [line if len(line) <= 80 else line[:77] + "..." for line in text.split("\n")[:lines]]
    return " | ".join(shown)


def parse(data: bytes) -> OffsetsText:
    """An offsets entry's bytes as Spark reads them; :class:`EntryProblem` when they do not read."""
    if not data:
        raise EntryProblem("empty", "empty (0 bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise EntryProblem("garbage", "garbage: not text (not UTF-8)") from None
    lines = text.split("\n")
    version = _VERSION_LINE.match(lines[0])
    if version is None:
        if "v1".startswith(lines[0]) and len(lines) == 1:
            raise EntryProblem("truncated", "cut short: it ends in its version line")
        raise EntryProblem("garbage", "garbage: the first line is not a version line (v1 or "
                                      f"v2): {lines[0][:30]!r}")
    number = int(version.group(1))
    if number not in KNOWN_FORMATS:
        raise EntryProblem("unknown", f"unknown: offsets log format v{number}, which these "
                           "runbooks do not read (Spark 4.3 writes v1 and v2); here is what I "
                           f"see: {what_it_holds(text)}")
    if len(lines) < 2 or not lines[1]:
        raise EntryProblem("truncated", "cut short: it ends after its version line")
    found = json_problem(lines[1], "line 2")
    if found:
        raise EntryProblem(*found)
    sources = []
    for n, line in enumerate(lines[2:], start=3):
        name = None
        if number == 2:
            name, colon, line = line.partition(":")
            if not colon:
                raise EntryProblem("garbage", f"garbage: line {n} is not <name>:<offset> (offsets "
                                              "log format v2)")
        if line == NO_OFFSET or (not line and number == 1):
            sources.append(SourceOffset(name, None))
            continue
        found = json_problem(line, f"line {n}", scalars=True)
        if found:
            raise EntryProblem(*found)
        sources.append(SourceOffset(name, line))
    return OffsetsText(number, json.loads(lines[1]), tuple(sources))


def problem(data: bytes) -> tuple[str, str] | None:
    """(damage, what) of an entry's bytes, None when Spark reads them."""
    try:
        parse(data)
    except EntryProblem as exc:
        return exc.damage, exc.what
    return None


def serialize(entry: OffsetsText) -> bytes:
    """The entry's bytes as Spark writes them: no newline after the last line."""
    lines = [f"v{entry.version}", json.dumps(entry.metadata, separators=(",", ":"))]
    for source in entry.sources:
        offset = NO_OFFSET if source.text is None else source.text
        lines.append(offset if entry.version == 1 else f"{source.name}:{offset}")
    return "\n".join(lines).encode("utf-8")


def with_metadata(data: bytes, change) -> bytes:
    """The entry with its metadata changed by ``change(metadata) -> metadata``, its format and
    its sources' lines kept as Spark wrote them."""
    entry = parse(data)
    return serialize(OffsetsText(entry.version, change(dict(entry.metadata)), entry.sources))


def source_log_folder(source: SourceOffset, position: int) -> str:
    """Where a source keeps its own log (a file source's files, the rate source's start):
    ``sources/<name>`` for a named source, ``sources/<position>`` otherwise."""
    return f"sources/{source.name if source.name is not None else position}"
