"""Each source's own offset format, read and written byte for byte as Spark 4.3 writes it.

An offsets-log line (:mod:`.offset_log`) holds a source's offset as the source serializes it;
some sources keep a log of their own too, under :func:`.offset_log.source_log_folder`:

- Kafka: ``KafkaSourceOffset.json`` (``JsonUtils.partitionOffsets``), ``{"t":{"0":23}}``, the
  next offset to read per partition. Spark sorts the partitions, puts them in Scala
  ``mutable.HashMap``s and json4s writes those in their hash order (``{"t":{"17":2,"5":1}}``);
  it reads any order. ``KafkaSourceInitialOffsetWriter`` keeps the first offsets in
  ``sources/<n>/0``. In ``startingOffsets`` ``-1`` is latest, ``-2`` earliest
  (``KafkaOffsetRangeLimit``), resolved before anything is logged; ``startingOffsetsByTimestamp``
  (the same shape, epoch milliseconds) only the broker resolves, when a query first starts.
- File source: ``FileStreamSourceOffset``, ``{"logOffset":N}``: a batch id of the source's own
  ``FileStreamSourceLog`` (counted apart from the query's batches), whose files
  ``CompactibleFileStreamLog`` writes, every ``compactInterval``-th one (10,
  ``spark.sql.streaming.fileSource.log.compactInterval``) as ``<id>.compact`` with every entry
  since the last. A file is new unless the files read on restart hold its path as the same
  string (``SeenFilesMap``; only its name under ``fileNameOnly``); one older than ``maxFileAge``
  (7 days) before the newest logged file is skipped unseen (unless ``latestFirst`` with a
  per-trigger limit).
- Rate: ``LongOffset`` (``RateStreamMicroBatchStream``), seconds since the start time that it
  keeps in ``sources/<n>/0``. rate-micro-batch: ``RatePerMicroBatchStreamOffset``,
  ``{"offset":N,"timestamp":T}``, no log of its own.

Spark 4.2 and 4.3 write all of these alike.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from state_runbooks.common.errors import RunbookError

from .log_files import json_problem
from .offset_log import SourceOffset, source_log_folder

LATEST, EARLIEST = -1, -2  # in startingOffsets / endingOffsets only
COMPACT_SUFFIX = ".compact"
DEFAULT_COMPACT_INTERVAL = 10
_INTEGER = re.compile(r"-?\d+")
_ESCAPES = {c: json.dumps(c)[1:-1] for c in '"\\\b\f\n\r\t'}


def _json_string(text: str) -> str:
    """A JSON string as json4s (Jackson) writes it: only controls escaped, in upper-case hex."""
    return '"' + "".join(_ESCAPES.get(c) or (f"\\u{ord(c):04X}" if c < " " else c)
                         for c in text) + '"'


def _text(offset: str | SourceOffset, what: str) -> str:
    if isinstance(offset, SourceOffset) and offset.text is None:
        raise RunbookError(f"The {what} has no offset yet ('-' in the offsets log): there is "
                           "nothing to read before its query has run a batch")
    return offset.text if isinstance(offset, SourceOffset) else offset


def _json(text: str, what: str, expect: str):
    found = json_problem(text, what, scalars=True)
    if found:
        raise RunbookError(f"{found[1][:1].upper()}{found[1][1:]}; Spark writes {expect}")
    return json.loads(text)


def _integer(value, what: str, expect: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    raise RunbookError(f"Not a {what} ({str(value)[:60]!r}): Spark writes {expect}")


def _versioned(data: bytes, what: str, entries: bool = False) -> str:
    """What follows a ``v1`` line (``validateVersion``); a log of ``entries`` may hold none."""
    text = data.decode("utf-8", errors="replace")
    version, newline, rest = text.partition("\n")
    if version != "v1" or not (newline or entries):
        raise RunbookError(f"Not a {what}: its first line is {version[:20]!r} where Spark 4.3 "
                           "writes v1 and a newline (a later version is a newer Spark's)")
    return rest


# -- Kafka ------------------------------------------------------------------------------------
KAFKA_EXAMPLE = '{"topic":{"0":23,"1":42}}'


def _kafka_map(value) -> dict[str, dict[int, int]]:
    if not isinstance(value, dict) or not all(isinstance(p, dict) for p in value.values()):
        raise RunbookError("Not a Kafka offset: Spark writes an object of topics, each an object "
                           f"of partitions, e.g. {KAFKA_EXAMPLE}")
    return {str(topic): {_integer(p, "Kafka partition", KAFKA_EXAMPLE):
                         _integer(o, "Kafka offset number", KAFKA_EXAMPLE)
                         for p, o in parts.items()} for topic, parts in value.items()}


def parse_kafka_offsets(offset: str | SourceOffset) -> dict[str, dict[int, int]]:
    """topic -> partition -> offset, as ``JsonUtils.partitionOffsets`` reads them."""
    return _kafka_map(_json(_text(offset, "Kafka source"), "Kafka offset", KAFKA_EXAMPLE))


def _signed(h: int) -> int:
    h &= 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _java_hash(text: str) -> int:
    """``String.hashCode``, over UTF-16 code units."""
    units, h = text.encode("utf-16-be"), 0
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return _signed(h)


def _scala_order(puts: list, hash_of) -> list:
    """The keys of a Scala 2.13 ``mutable.HashMap`` after ``puts`` (repeats included), in its
    iteration order: ``put0`` doubles the 16-slot table when the size plus one reaches 3/4 of it,
    even on a repeat; a slot keeps its keys by ascending improved hash, then by arrival."""
    keys, slots = [], 16
    for key in puts:
        if len(keys) + 1 >= int(slots * 0.75):
            slots *= 2
        if key not in keys:
            keys.append(key)
    improved = {k: _signed(hash_of(k) ^ ((hash_of(k) & 0xFFFFFFFF) >> 16)) for k in keys}
    return sorted(keys, key=lambda k: (improved[k] & (slots - 1), improved[k]))


def format_kafka_offsets(offsets: dict[str, dict[int, int]]) -> str:
    """The JSON text ``KafkaSourceOffset.json`` writes for these offsets, byte for byte."""
    plain = _kafka_map(offsets)
    pairs = sorted((t, p) for t, parts in plain.items() for p in parts)
    body = []
    for topic in _scala_order([t for t, _ in pairs], _java_hash):
        parts = _scala_order([p for t, p in pairs if t == topic], lambda p: p)
        inner = ",".join(f'"{p}":{plain[topic][p]}' for p in parts)
        body.append(f"{_json_string(topic)}:{{{inner}}}")
    return "{" + ",".join(body) + "}"


def parse_kafka_initial_offsets(data: bytes) -> dict[str, dict[int, int]]:
    """``sources/<n>/0`` of a Kafka source (``KafkaSourceInitialOffsetWriter.deserialize``: the
    first byte skipped, then ``v1`` and the JSON, or the JSON alone as Spark 2.1.0 wrote it)."""
    rest = data[1:]
    text = _versioned(rest, "Kafka initial offsets file") if rest[:1] == b"v" \
        else rest.decode("utf-8", errors="replace")
    return parse_kafka_offsets(text)


def format_kafka_initial_offsets(offsets: dict[str, dict[int, int]]) -> bytes:
    return b"\x00v1\n" + format_kafka_offsets(offsets).encode("utf-8")


# -- the file source --------------------------------------------------------------------------
@dataclass(frozen=True)
class FileEntry:
    """One line of a file source's log: a file it read, in its log batch ``batch_id``."""
    path: str  # as Spark logged it: a URI, url-encoded (file:///data/in/part%201.json)
    timestamp: int  # the file's modification time, epoch milliseconds
    batch_id: int


def parse_file_offset(offset: str | SourceOffset) -> int:
    """The log batch id of a file source's offset (``FileStreamSourceOffset.apply``)."""
    text = _text(offset, "file source")
    if _INTEGER.fullmatch(text):  # Spark 2.0's LongOffset
        return int(text)
    value = _json(text, "file source offset", '{"logOffset":N}')
    value = value["logOffset"] if isinstance(value, dict) and set(value) == {"logOffset"} else text
    return _integer(value, "file source offset", '{"logOffset":N}')


def format_file_offset(log_offset: int) -> str:
    return f'{{"logOffset":{int(log_offset)}}}'


def parse_file_log(data: bytes, where: str = "file source log file") -> tuple[FileEntry, ...]:
    """The entries of one log file (``<id>`` or ``<id>.compact``), as ``deserialize`` reads them
    (a trailing newline, which Spark never writes, is read too)."""
    lines = _versioned(data, where, entries=True).split("\n")
    if lines[-1] == "":  # Scala's getLines drops one final newline
        lines.pop()
    entries, expect = [], '{"path":…,"timestamp":…,"batchId":…}'
    for n, line in enumerate(lines, start=2):
        value = _json(line, f"{where} entry (line {n})", expect)
        if not isinstance(value, dict) or not isinstance(value.get("path"), str):
            raise RunbookError(f"Not a {where} entry (line {n}): Spark writes {expect}")
        entries.append(FileEntry(value["path"], *(_integer(value.get(k), f"{where} {k}", expect)
                                                  for k in ("timestamp", "batchId"))))
    return tuple(entries)


def serialize_file_log(entries) -> bytes:
    """A log file's bytes as ``CompactibleFileStreamLog.serialize`` writes them."""
    lines = ["v1"] + [f'{{"path":{_json_string(e.path)},"timestamp":{e.timestamp},'
                      f'"batchId":{e.batch_id}}}' for e in entries]
    return "\n".join(lines).encode("utf-8")


def is_compact_batch(batch_id: int, interval: int = DEFAULT_COMPACT_INTERVAL) -> bool:
    return (batch_id + 1) % interval == 0


def log_file_name(batch_id: int, interval: int = DEFAULT_COMPACT_INTERVAL) -> str:
    """``batchIdToPath``: ``<id>.compact`` for a compaction batch, ``<id>`` otherwise."""
    return f"{batch_id}{COMPACT_SUFFIX}" if is_compact_batch(batch_id, interval) else str(batch_id)


def log_path(source: SourceOffset, position: int, batch_id: int,
             interval: int = DEFAULT_COMPACT_INTERVAL) -> str:
    """Where a file source's log batch lives in the checkpoint."""
    return f"{source_log_folder(source, position)}/{log_file_name(batch_id, interval)}"


def log_batch_id(name: str) -> int | None:
    """The batch id of a log file's name, None for anything else (``.0.crc``, temp files)."""
    number = name.removesuffix(COMPACT_SUFFIX)
    return int(number) if number.isdigit() else None


def compact_interval(names, default: int = DEFAULT_COMPACT_INTERVAL) -> int:
    """The interval Spark uses for a log holding files ``names`` (its ``compactInterval``): the
    gap between the two latest compact files, or one fitting a single compact file
    (``deriveCompactInterval``), so a changed setting never moves an existing log's files."""
    compact = sorted((log_batch_id(n) for n in names if n.endswith(COMPACT_SUFFIX)
                      and log_batch_id(n) is not None), reverse=True)
    if len(compact) >= 2:
        return compact[0] - compact[1]
    if not compact:
        return default
    size = compact[0] + 1
    if size <= default or default >= size // 2:
        return size
    return next((i for i in range(default, size // 2 + 1) if size % i == 0), size)


def files_read_on_restart(names, default: int = DEFAULT_COMPACT_INTERVAL) -> list[str]:
    """The log files ``FileStreamSourceLog.restore`` reads (``getAllValidBatches`` of the latest
    batch): together they hold every path the source has seen."""
    ids = [i for i in map(log_batch_id, names) if i is not None]
    if not ids:
        return []
    interval, latest = compact_interval(names, default), max(ids)
    start = max(0, (latest + 1) // interval * interval - 1)
    return [log_file_name(i, interval) for i in range(start, latest + 1)]


# -- rate and rate-micro-batch ----------------------------------------------------------------
@dataclass(frozen=True)
class RateMicroBatchOffset:
    offset: int  # rows generated so far
    timestamp: int  # epoch milliseconds of the next batch's rows


def parse_rate_offset(offset: str | SourceOffset) -> int:
    """Seconds since the rate source's start time (``LongOffset``)."""
    return _integer(_text(offset, "rate source"), "rate source offset", "a whole number")


def format_rate_offset(seconds: int) -> str:
    return str(int(seconds))


def parse_rate_start_time(data: bytes) -> int:
    """The start time in ``sources/<n>/0`` of a rate source, epoch milliseconds."""
    return _integer(_versioned(data, "rate source start time file"), "rate source start time",
                    "v1, a newline and epoch milliseconds")


def format_rate_start_time(millis: int) -> bytes:
    return f"v1\n{int(millis)}".encode()


def parse_rate_micro_batch_offset(offset: str | SourceOffset) -> RateMicroBatchOffset:
    expect = '{"offset":N,"timestamp":T}'
    value = _json(_text(offset, "rate-micro-batch source"), "rate-micro-batch offset", expect)
    if not isinstance(value, dict) or set(value) != {"offset", "timestamp"}:
        raise RunbookError(f"Not a rate-micro-batch offset: Spark writes {expect}")
    return RateMicroBatchOffset(*(_integer(value[k], "rate-micro-batch offset", expect)
                                  for k in ("offset", "timestamp")))


def format_rate_micro_batch_offset(offset: RateMicroBatchOffset) -> str:
    return f'{{"offset":{offset.offset},"timestamp":{offset.timestamp}}}'
