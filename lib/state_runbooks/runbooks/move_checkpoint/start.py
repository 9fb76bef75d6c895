"""Where the moved source starts: ``start_at`` turned into the line the offsets log holds for it
and the log the source keeps of its own, in that source's format (:mod:`state_runbooks.core.source_offsets`).

The line goes into the last two offsets entries, ``N-1`` and ``N``: a restart after the committed
batch ``N`` takes its start offsets from ``N-1`` and its end offsets from ``N``, hands a file
source that range again (``MicroBatchExecution.populateStartOffsets`` calls ``getBatch``), and
plans batch ``N+1`` from ``N``'s offsets. With the same line in both, that range is empty.

- A file source: a fresh seen-files log whose batch 0 lists the files that count as already
  read, and the offset ``{"logOffset":0}``; the next batch reads every other file. Which count as
  read: ``read_before`` (a folder moved: the files whose path below the new folder is one the old
  source read below the old one), ``latest`` (all present now), a time (modified before it),
  ``earliest`` (none: the line is ``-`` and the next batch reads them all). The files and their
  paths are Spark's own listing (``DataFrame.inputFiles``), written as the source writes them.
- rate, rate-micro-batch, Kafka: ``earliest`` and ``latest`` leave the line ``-`` (no offset yet),
  so the source starts from its own starting options, which must say the same; an offset in the
  source's own JSON is written as the source writes it.
"""
from __future__ import annotations

import datetime as dt
import json
import re
import urllib.parse
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError
from state_runbooks.core import source_offsets as so
from state_runbooks.core.fs import open_fs

READ_BEFORE, LATEST, EARLIEST = "read_before", "latest", "earliest"
_HIDDEN = re.compile(r"(^|/)[_.]")  # names Spark's file listing skips (_SUCCESS, .crc, ...)


@dataclass(frozen=True)
class NewStart:
    """The moved source's start, as the checkpoint will hold it."""
    kind: str
    start_at: str  # as asked, resolved ("read_before" where the default applied)
    line: str | None  # the offset text for offsets N-1 and N; None: "-", no offset yet
    log: dict = field(default_factory=dict)  # its own log: file name -> bytes (sources/<i>/)
    counted_as_read: int = 0  # a file source: files the next batch skips
    to_read: tuple = ()  # a file source: the files the next batch reads (as Spark logs paths)
    says: str = ""  # one line

    @property
    def offset_text(self) -> str:
        return self.line if self.line is not None else "-"


def default_start(old_kind: str, new_kind: str) -> str:
    """``read_before`` for a file folder that moved, else ``earliest``."""
    return READ_BEFORE if old_kind == new_kind == "file" else EARLIEST


def parse_time_ms(text: str) -> int | None:
    """Epoch milliseconds of a time given as an ISO date-time (UTC unless it says) or as epoch
    milliseconds; None when it is neither."""
    text = text.strip()
    if re.fullmatch(r"\d{12,}", text):
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1000)


def _option(new, name: str) -> str | None:
    options = {k.lower(): v for k, v in new.detail.get("options", {}).items()}
    return options.get(name.lower())


def plan_start(spark, old, new, start_at: str = "") -> NewStart:
    """The start of the moved source ``new`` (its old self ``old``), for ``start_at``; a one-line
    error for a start this kind cannot take."""
    start_at = (start_at or "").strip() or default_start(old.kind, new.kind)
    if new.kind == "file":
        return _file_start(spark, old, new, start_at)
    if start_at in (EARLIEST, LATEST):
        return _starting_option(new, start_at)
    if start_at == READ_BEFORE:
        raise RunbookError("start_at=read_before is for a file source whose folder moved; "
                           f"{new.describe()} takes earliest, latest or its own offset JSON")
    if new.kind == "kafka":
        offsets = so.parse_kafka_offsets(start_at)
        return NewStart("kafka", start_at, so.format_kafka_offsets(offsets),
                        {"0": so.format_kafka_initial_offsets(offsets)},
                        says=f"Kafka from the offsets given ({_partitions(offsets)})")
    if new.kind == "rate-micro-batch":
        offset = so.parse_rate_micro_batch_offset(start_at)
        return NewStart(new.kind, start_at, so.format_rate_micro_batch_offset(offset),
                        says=f"rate-micro-batch from row {offset.offset}, event time "
                             f"{offset.timestamp} ms")
    if new.kind == "rate":
        seconds = so.parse_rate_offset(start_at)
        return NewStart("rate", start_at, so.format_rate_offset(seconds),
                        says=f"rate from {seconds} s after its start time")
    raise RunbookError(f"start_at={start_at!r}: these runbooks write no offset for "
                       f"{new.describe()}; give earliest or latest (its own starting options "
                       "then decide)")


def _partitions(offsets: dict) -> str:
    return ", ".join(f"{t}: {len(p)} partition(s)" for t, p in sorted(offsets.items()))


def _starting_option(new, start_at: str) -> NewStart:
    """No offset yet: the source starts from its own starting options, which must agree."""
    if new.kind == "kafka":
        given = (_option(new, "startingOffsets") or LATEST).strip().lower()
        if given not in (EARLIEST, LATEST):
            given = "offsets given in startingOffsets"
        if given != start_at:
            raise RunbookError(f"start_at={start_at} but the job's Kafka source starts at "
                               f"{given} (startingOffsets): make them agree (set "
                               f"startingOffsets={start_at} in the job, or start_at)")
        if _option(new, "startingOffsetsByTimestamp"):
            raise RunbookError("the job's Kafka source sets startingOffsetsByTimestamp: give "
                               "start_at as that offset JSON instead (one place decides)")
        return NewStart("kafka", start_at, None, says=f"Kafka from its {start_at} offsets "
                                                      "(startingOffsets)")
    if new.kind in ("rate", "rate-micro-batch"):
        if start_at == LATEST:
            raise RunbookError(f"start_at=latest: {new.describe()} has no backlog, so only "
                               "earliest (its first row) or its own offset JSON apply")
        return NewStart(new.kind, start_at, None, says=f"{new.describe()} from its first row "
                                                       "(its own starting options)")
    raise RunbookError(f"{new.describe()}: these runbooks do not know how it starts; only file, "
                       "rate, rate-micro-batch and Kafka sources can be moved onto")


# -- a file source --------------------------------------------------------------------------
def listed_files(spark, new) -> list[tuple[str, int]]:
    """(path as Spark logs it, modified epoch ms) of every file the new file source reads now:
    Spark's own listing of its path (a schema given, so that nothing is read), with each file's
    modification time from the file system."""
    fmt = new.detail.get("format") or "text"
    paths = new.detail.get("paths") or []
    options = {k: v for k, v in new.detail.get("options", {}).items() if k.lower() != "path"}
    uris = (spark.read.format(fmt).options(**options).schema("_ignored string").load(paths)
            .inputFiles())
    modified: dict[str, int] = {}
    for path in paths:
        fs = open_fs(spark, path).raw()
        for rel, entry in fs.walk().items():
            if not _HIDDEN.search(rel):
                modified[_plain(fs.uri(rel))] = entry.modified_ms
    return sorted((uri, modified.get(_plain(uri), 0)) for uri in uris)


def _plain(uri: str) -> str:
    """A path as one place: decoded, ``file:///`` spelled ``file:/``."""
    return re.sub(r"^file:///", "file:/", urllib.parse.unquote(uri))


def _relative_names(paths: list[str]) -> dict[str, str]:
    """Each path by its part below the folder all of them share."""
    plain = [_plain(p) for p in paths]
    if not plain:
        return {}
    common = plain[0].rsplit("/", 1)[0]
    for p in plain[1:]:
        while not p.startswith(common + "/"):
            common = common.rsplit("/", 1)[0]
    return {p[len(common) + 1:]: original for p, original in zip(plain, paths)}


def _file_start(spark, old, new, start_at: str) -> NewStart:
    files = listed_files(spark, new)
    folder = ", ".join(new.detail.get("paths") or [])
    if start_at == READ_BEFORE:
        if old.kind != "file":
            raise RunbookError(f"start_at=read_before: the old source was {old.describe()}, not "
                               "files, so no file counts as read; give latest, earliest or a "
                               "time")
        read = set(_relative_names(old.detail.get("seen", old.detail.get("files", []))))
        new_names = _relative_names([uri for uri, _ in files])
        counted = {uri for name, uri in new_names.items() if name in read}
        rule = "the files the old source read, by their path below its folder"
    elif start_at == LATEST:
        counted, rule = {uri for uri, _ in files}, "every file present now"
    elif start_at == EARLIEST:
        counted, rule = set(), "none: every file is read"
    else:
        before = parse_time_ms(start_at)
        if before is None:
            raise RunbookError(f"start_at={start_at!r} is not one a file source takes: "
                               "read_before, latest, earliest, or a time (2026-12-01T00:00:00Z "
                               "or epoch milliseconds): files modified before it count as read")
        counted = {uri for uri, modified in files if modified < before}
        rule = f"the files modified before {start_at}"
    to_read = tuple(uri for uri, _ in files if uri not in counted)
    says = (f"{folder}: {len(counted)} of {len(files)} file(s) count as read ({rule}); the "
            f"next batch reads {len(to_read)}")
    if not counted:
        return NewStart("file", start_at, None, {}, 0, to_read, says)
    entries = [so.FileEntry(uri, modified, 0) for uri, modified in files if uri in counted]
    return NewStart("file", start_at, so.format_file_offset(0),
                    {so.log_file_name(0): so.serialize_file_log(entries)}, len(counted),
                    to_read, says)


def expected_rows(spark, new, start: NewStart) -> int | None:
    """The rows the first batch after the move reads from the moved source, where known before
    it runs: a file source's unread files counted by Spark, rate-micro-batch's rows per batch;
    None where only the source knows (rate by the clock, Kafka by the broker)."""
    if new.kind == "file":
        if not start.to_read:
            return 0
        fmt = new.detail.get("format") or "text"
        options = {k: v for k, v in new.detail.get("options", {}).items()
                   if k.lower() not in ("path", "maxfilespertrigger", "maxbytespertrigger")}
        limit = _option(new, "maxFilesPerTrigger")
        files = list(start.to_read)[:int(limit)] if limit else list(start.to_read)
        files = [urllib.parse.unquote(uri) for uri in files]  # a path, not a URI, to load
        return spark.read.format(fmt).options(**options).load(files).count()
    if new.kind == "rate-micro-batch":
        rows = _option(new, "rowsPerBatch")
        return int(rows) if rows else None
    return None


def describe_offset(text: str | None) -> str:
    """An offset line, short."""
    if text is None:
        return "- (no offset yet)"
    try:
        return json.dumps(json.loads(text), separators=(",", ":"))[:80]
    except json.JSONDecodeError:
        return text[:80]
