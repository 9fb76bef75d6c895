"""What a restart does with each source as the changed query defines it, against the source the
checkpoint logged at its position (or name): Spark's rules, each citing the Spark code that
decides it.

On restart Spark hands each source the offset logged for its position (or name); a source of
another kind cannot read it and the restart fails. A source of the same kind that reads something
else either fails (a file source reads the last batch's files again below its new folder; Kafka
reports topics no longer subscribed as data loss; Delta refuses another table's offset) or
restarts and reads from the old position in the new data.
"""
from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass

from .sources import KIND_NAMES, Source

SOURCES_ASSERTION = ("There are [{old}] sources in the checkpoint offsets and now there are "
                     "[{new}] sources requested by the query. Cannot continue.")


# -- what a restart does ----------------------------------------------------------------------
@dataclass(frozen=True)
class SourceVerdict:
    """One source's comparison: ``same``, ``accepted`` (restarts as intended), ``changes``
    (restarts, but reads otherwise than before), ``fails``, or ``unknown``."""
    label: str
    old: str
    new: str
    verdict: str
    why: str  # what Spark does, and where it is decided
    error: str = ""  # what Spark raises, where it fails


def _norm(path: str) -> str:
    """A path without its scheme's local spelling (``file:///a``, ``file:/a`` and ``/a`` alike)
    and trailing slash."""
    path = path.strip()
    path = re.sub(r"^file:(//)?(?=/)", "", path)
    return path.rstrip("/") or "/"


def _is_glob(path: str) -> bool:
    return any(c in path for c in "*?[{")


def compare_file(old: Source, new: Source) -> SourceVerdict:
    """A file source: on restart Spark asks the source again for the last batch's files
    (``MicroBatchExecution.populateStartOffsets`` calls ``getBatch`` on a V1 source), and
    ``FileStreamSource.getBatch`` reads them with ``basePath`` = the new path (unless it is a
    glob): a logged file outside it raises ``Wrong basePath``. Files below the new path that it
    has not logged are new input."""
    files = [_norm(f) for f in old.detail.get("files", [])]
    paths = [_norm(p) for p in new.detail.get("paths", [])]
    old_folders = sorted({f.rsplit("/", 1)[0] for f in files})
    if not paths:
        return SourceVerdict(old.label, old.describe(), new.describe(), "unknown",
                             "the changed query's file source names no path here")
    if not files:
        return SourceVerdict(old.label, old.describe(), new.describe(), "unknown",
                             "the checkpoint's source log names no file for its last batch: "
                             "the folder it read is not recorded")
    base = paths[0]
    if _is_glob(base):
        inside = all(fnmatch.fnmatch(f, base) or fnmatch.fnmatch(f.rsplit("/", 1)[0], base)
                     for f in files)
        if inside:
            return SourceVerdict(old.label, old.describe(), new.describe(), "accepted",
                                 "the pattern matches every file the last batch read; files it "
                                 "matches that were never read are new input")
        return SourceVerdict(old.label, old.describe(), new.describe(), "changes",
                             "a pattern takes no base path, so the restart does not fail; the "
                             "files read before are outside it, and every file it matches that "
                             "was never read is new input (FileStreamSource)")
    # Spark's own test is a plain prefix of the qualified path (PartitioningAwareFileIndex).
    outside = [f for f in files if not f.startswith(base)]
    if outside:
        return SourceVerdict(
            old.label, old.describe(), new.describe(), "fails",
            "on restart Spark reads the last batch's files again with basePath = the new path "
            "(FileStreamSource.getBatch via MicroBatchExecution.populateStartOffsets)",
            f"Wrong basePath {base} for the root path: {outside[0]}")
    if old_folders == [base]:
        return SourceVerdict(old.label, old.describe(), new.describe(), "same",
                             "the same folder")
    return SourceVerdict(old.label, old.describe(), new.describe(), "changes",
                         "the new path contains the folder read before "
                         f"({', '.join(old_folders)}): "
                         "every file below it that was never read is new input, at the first "
                         "batch after the restart")


def compare_kafka(old: Source, new: Source) -> SourceVerdict:
    """Kafka: the logged offsets name every topic-partition read, not how they were subscribed.
    After a restart Spark plans the next batch from the logged offsets to the latest offsets of
    the partitions subscribed now (``KafkaOffsetReaderAdmin.getOffsetRangesFromResolvedOffsets``):
    a logged partition no longer subscribed is data loss, a new one starts at its earliest
    offset, and with ``failOnDataLoss`` (true by default) a new partition whose earliest offset
    is not 0 is data loss too. ``startingOffsets`` applies only to a query's first batch."""
    topics = set(old.detail.get("topics", []))
    option, value = new.detail.get("kafka", ("", ""))
    options = {k.lower(): v for k, v in new.detail.get("options", {}).items()}
    strict = options.get("failondataloss", "true").strip().lower() != "false"
    new_line = new.describe()
    if option == "subscribepattern":
        try:
            pattern = re.compile(value)
        except re.error:
            pattern = None
        kept = {t for t in topics if pattern is not None and pattern.fullmatch(t)}
        removed, added = sorted(topics - kept), None  # what else matches is Kafka's to say
    else:
        if option == "subscribe":
            wanted = {t.strip() for t in value.split(",") if t.strip()}
        elif option == "assign":
            try:
                wanted = set(json.loads(value))
            except (json.JSONDecodeError, TypeError):
                wanted = None
        else:
            wanted = None
        if wanted is None:
            return SourceVerdict(old.label, old.describe(), new_line, "unknown",
                                 "the changed query's Kafka source names no topics here")
        removed, added = sorted(topics - wanted), sorted(wanted - topics)
    if removed:
        if strict:
            return SourceVerdict(old.label, old.describe(), new_line, "fails",
                                 KAFKA_RULES["removed"].format(topics=", ".join(removed)),
                                 KAFKA_RULES["removed_error"])
        return SourceVerdict(old.label, old.describe(), new_line, "changes",
                             KAFKA_RULES["removed_lenient"].format(topics=", ".join(removed)))
    if added is None or added:
        rule = (KAFKA_RULES["pattern"] if added is None else
                KAFKA_RULES["added"].format(topics=", ".join(added)))
        if strict:
            return SourceVerdict(old.label, old.describe(), new_line, "unknown",
                                 rule + KAFKA_RULES["added_strict"])
        return SourceVerdict(old.label, old.describe(), new_line, "changes", rule)
    return SourceVerdict(old.label, old.describe(), new_line, "same", "the same topics")


KAFKA_RULES = {  # Spark's Kafka connector, connector/kafka-0-10-sql: see compare_kafka
    "removed": "topics {topics} are in the logged offsets but no longer subscribed: the first "
               "batch after the restart reports their partitions as deleted, and with "
               "failOnDataLoss (the default) that fails it",
    "removed_error": "[KAFKA_DATA_LOSS.PARTITIONS_DELETED] ... are gone. Some data may have "
                     "been missed.",
    "removed_lenient": "topics {topics} are no longer read: with failOnDataLoss=false Spark "
                       "drops them with a warning",
    "added": "topics {topics} have no logged offset: Spark reads them from their earliest "
             "offsets (not startingOffsets, which only a new query uses)",
    "pattern": "a pattern reads whatever topics match it at each batch: a topic that matches "
               "and has no logged offset is read from its earliest offsets",
    "added_strict": "; with failOnDataLoss (the default) a new partition whose earliest offset "
                    "is not 0 (retention has removed its start) fails the batch with "
                    "KAFKA_DATA_LOSS.ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO: that "
                    "depends on the topics, which the rehearsal reads",
}


def compare_delta(old: Source, new: Source, table_id: str | None) -> SourceVerdict:
    """Delta: its offset names the table's id (``reservoirId``); the Delta source refuses an
    offset of another table."""
    if table_id is None:
        return SourceVerdict(old.label, old.describe(), new.describe(), "unknown",
                             "the new table's id could not be read here (its _delta_log)")
    if table_id == old.detail.get("table_id"):
        return SourceVerdict(old.label, old.describe(), new.describe(), "same", "the same table")
    return SourceVerdict(old.label, old.describe(), f"{new.describe()} (table id {table_id})",
                         "fails", "the logged offset names another table (its reservoirId): "
                         "the Delta source refuses it (DeltaSourceOffset)",
                         "[DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE] The streaming query "
                         "was reading from an unexpected Delta table")


def delta_table_id(spark, path: str) -> str | None:
    """The id of the Delta table at ``path`` (its ``_delta_log`` metaData), None if unreadable."""
    try:
        rows = (spark.read.format("json").load(f"{path.rstrip('/')}/_delta_log/*.json")
                .where("metaData is not null").select("metaData.id").limit(1).collect())
        return str(rows[0][0]) if rows else None
    except Exception:  # noqa: BLE001 - not a Delta table readable from here
        return None


def compare_one(old: Source, new: Source, spark=None) -> SourceVerdict:
    """One source against the one at its position (or name)."""
    if old.kind == "unknown":
        return SourceVerdict(old.label, f"an offset this runbook does not read "
                             f"({json.dumps(old.detail.get('offset'))[:60]})", new.describe(),
                             "unknown", "whether the changed source reads this offset is "
                             "Spark's to say: the rehearsal restarts it on the logged offsets")
    if new.kind != "unknown" and old.kind != new.kind:
        return SourceVerdict(old.label, old.describe(), new.describe(), "fails",
                             f"{KIND_NAMES.get(new.kind, new.kind)} cannot read the offset "
                             f"{KIND_NAMES.get(old.kind, old.kind)} logged: a restart hands it "
                             "that offset first", "the new source cannot parse the logged offset")
    if new.kind == "unknown":
        return SourceVerdict(old.label, old.describe(), new.describe(), "unknown",
                             "the changed query's source kind is not one this runbook reads")
    if old.kind == "file":
        return compare_file(old, new)
    if old.kind == "kafka":
        return compare_kafka(old, new)
    if old.kind == "delta":
        path = (new.detail.get("paths") or [""])[0]
        return compare_delta(old, new, delta_table_id(spark, path) if spark and path else None)
    return SourceVerdict(old.label, old.describe(), new.describe(), "same",
                         f"{KIND_NAMES.get(old.kind, old.kind)}: the kind is what identifies it")


def compare_sources(old: list[Source], new: list[Source], named: bool,
                    spark=None) -> list[SourceVerdict]:
    """Every source: by position in a v1 offsets log (their number must match: a restart checks
    it first, ``OffsetSeq.toStreamProgress``); by name in a v2 log (source evolution, where a
    source without a name is its position): a name the log does not hold starts from its own
    starting offsets, one the query no longer has is dropped."""
    if not named:
        if len(old) != len(new):
            return [SourceVerdict(
                "sources", f"{len(old)}: " + ", ".join(s.describe() for s in old),
                f"{len(new)}: " + ", ".join(s.describe() for s in new), "fails",
                "the offsets log holds one offset per source, by position: their number must "
                "match (OffsetSeq.toStreamProgress)",
                SOURCES_ASSERTION.format(old=len(old), new=len(new)))]
        return [compare_one(o, n, spark) for o, n in zip(old, new)]
    by_name = {s.detail.get("name") or str(i): s for i, s in enumerate(new)}
    out = []
    for o in old:
        n = by_name.pop(o.label, None)
        if n is None:
            out.append(SourceVerdict(o.label, o.describe(), "removed", "changes",
                                     "source evolution: a source no longer in the query is "
                                     "dropped from the next offsets entry"))
        else:
            out.append(compare_one(o, n, spark))
    for key, n in by_name.items():
        out.append(SourceVerdict(key, "not in the checkpoint", n.describe(), "changes",
                                 "source evolution: a source the log does not name starts "
                                 "from its own starting offsets"))
    return out

