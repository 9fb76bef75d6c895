"""The sources: what the checkpoint's query read, and what the changed query reads.

The offsets log records one offset per source, by position (by name where the query named its
sources, Spark's source evolution), and nothing else about it: no format, no path, no topic. So
the checkpoint's side is read from the offsets themselves (each source kind writes its own shape:
``{"logOffset": n}`` a file source, ``{"topic": {"0": n}}`` Kafka, ``{"reservoirId": ...}`` Delta,
``{"offset": n, "timestamp": t}`` rate-micro-batch, a number the rate source) and from the
``sources/<i>/`` folder (a file source logs every file it read there). The changed query's side
comes from its plan: its format, options and paths.

What a restart does with each difference is :mod:`.source_changes`'s.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from state_runbooks.core import offset_log
from state_runbooks.core.fs import open_fs
from state_runbooks.core.spark_internals import analyzed_plan, as_java
from state_runbooks.session.spark_session import is_connect

FILE_FORMATS = {"json", "csv", "parquet", "orc", "text", "avro", "xml", "binaryfile"}
# A V1 source's provider class, by its simple name, where the plan names a class, not a format.
_CLASS_KINDS = {"RateStreamProvider": "rate", "RatePerMicroBatchProvider": "rate-micro-batch",
                "KafkaSourceProvider": "kafka", "TextSocketSourceProvider": "socket",
                "DeltaDataSource": "delta"}
KIND_NAMES = {"file": "a file source", "rate": "the rate source",
              "rate-micro-batch": "the rate-micro-batch source", "kafka": "a Kafka source",
              "delta": "a Delta table", "socket": "a socket source", "memory": "a memory source"}


@dataclass(frozen=True)
class Source:
    """One source, on either side."""
    label: str  # "source 0", or the name the query gave it (.name(...))
    kind: str  # file, rate, rate-micro-batch, kafka, delta, socket, memory, or unknown
    reads: str = ""  # what it reads (a folder, topics, a table id): "" where the kind says it all
    detail: dict = field(default_factory=dict, compare=False)

    def describe(self) -> str:
        return f"{self.kind}" + (f" {self.reads}" if self.reads else "")


# -- the checkpoint's side --------------------------------------------------------------------
def kind_of_offset(offset, logged: str | None) -> str:
    """The source kind that writes an offset of this shape (``logged``: the first entry of its
    ``sources/<i>/`` log, where it has one)."""
    if isinstance(offset, dict):
        if "logOffset" in offset:
            return "file"
        if "reservoirId" in offset:
            return "delta"
        if set(offset) == {"offset", "timestamp"}:
            return "rate-micro-batch"
        if offset and all(isinstance(v, dict) and all(str(k).isdigit() for k in v)
                          for v in offset.values()):
            return "kafka"
        return "unknown"
    if isinstance(offset, int) or (isinstance(offset, str) and offset.strip().isdigit()):
        # A LongOffset: the rate source keeps its start time in sources/<i>/0; a socket or
        # memory source writes no log.
        if logged is not None and logged.strip().splitlines()[-1:] and \
                logged.strip().splitlines()[-1].strip().isdigit():
            return "rate"
        return "unknown"
    return "unknown"


def _first_log_text(fs, folder: str) -> str | None:
    if not fs.is_dir(folder):
        return None
    names = sorted((e.name for e in fs.list(folder) if not e.is_dir),
                   key=lambda n: int(re.sub(r"\D", "", n) or 0))
    return fs.read_text(f"{folder}/{names[0]}") if names else None


def logged_files(fs, folder: str, log_offset: int) -> list[str]:
    """The files a file source logged for its batch ``log_offset``: from ``<n>`` or the first
    ``<m>.compact`` at or after it (a compact file repeats every entry before it)."""
    if not fs.is_dir(folder):
        return []
    candidates = []
    for entry in fs.list(folder):
        number = entry.name.split(".")[0]
        if number.isdigit() and int(number) >= log_offset and not entry.is_dir:
            candidates.append((int(number), entry.name))
    if not candidates:
        return []
    _, name = min(candidates)
    files = []
    for line in fs.read_text(f"{folder}/{name}").splitlines()[1:]:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict) and entry.get("batchId") == log_offset and entry.get("path"):
            files.append(str(entry["path"]))
    return files


def checkpoint_sources(ckpt, batch_id: int) -> list[Source]:
    """The sources of the checkpoint's query, as its offsets entry ``batch_id`` and its
    ``sources/`` logs show them."""
    entry = ckpt.offsets(batch_id)
    out = []
    for i, offset in enumerate(entry.sources):
        name = entry.source_names[i] if entry.source_names else None
        folder = offset_log.source_log_folder(offset_log.SourceOffset(name, None), i)
        logged = _first_log_text(ckpt.fs, folder)
        kind = kind_of_offset(offset, logged)
        label = name or f"source {i}"
        detail = {"offset": offset}
        reads = ""
        if kind == "file" and isinstance(offset, dict):
            files = logged_files(ckpt.fs, folder, int(offset["logOffset"]))
            detail["files"] = files
            folders = sorted({f.rsplit("/", 1)[0] for f in files})
            reads = ", ".join(folders) if folders else ""
        elif kind == "kafka":
            reads = "topics " + ", ".join(sorted(offset))
            detail["topics"] = sorted(offset)
        elif kind == "delta":
            reads = f"table id {offset.get('reservoirId')}"
            detail["table_id"] = offset.get("reservoirId")
        out.append(Source(label, kind, reads, detail))
    return out


# -- the changed query's side -----------------------------------------------------------------
def _kind_of_format(fmt: str) -> str:
    fmt = (fmt or "").strip()
    low = fmt.lower()
    if low in FILE_FORMATS or low.endswith("fileformat"):
        return "file"
    if low in ("rate", "rate-micro-batch", "kafka", "delta", "socket", "memory"):
        return low
    return _CLASS_KINDS.get(fmt.rsplit(".", 1)[-1], "unknown")


def _new_source(label: str, fmt: str, options: dict, paths: list[str], table: str = "") -> Source:
    options = {str(k): str(v) for k, v in options.items()}
    low = {k.lower(): v for k, v in options.items()}
    path_list = list(paths) or ([low["path"]] if "path" in low else [])
    kind = _kind_of_format(fmt)
    detail = {"format": fmt, "options": options, "paths": path_list, "table": table}
    reads = ""
    if kind == "file" or (kind == "delta" and path_list):
        reads = ", ".join(path_list)
    elif kind == "kafka":
        for option in ("subscribe", "subscribepattern", "assign"):
            if option in low:
                reads = f"{option} {low[option]}"
                detail["kafka"] = (option, low[option])
                break
    if table:
        reads = f"table {table}" + (f" at {reads}" if reads else "")
    return Source(label, kind, reads, detail)


def query_sources(df) -> list[Source]:
    """The changed query's sources in the order Spark numbers them (its plan's leaves, left to
    right): from the client's plan over Spark Connect, from the analyzed plan in the JVM
    otherwise."""
    found = _connect_sources(df) if is_connect(df.sparkSession) else _classic_sources(df)
    return [Source(name or f"source {i}", s.kind, s.reads, {**s.detail, "name": name})
            for i, (name, s) in enumerate(found)]


def _connect_sources(df) -> list[tuple[str | None, Source]]:
    plan = df._plan.to_proto(df.sparkSession.client)  # noqa: SLF001 - the client's own plan
    out: list = []

    def walk(message) -> None:
        for descriptor, value in message.ListFields():
            if descriptor.message_type is None:
                continue
            repeated = getattr(descriptor, "is_repeated", None)
            if repeated is None:  # protobuf before 5: the label says it
                repeated = descriptor.label == descriptor.LABEL_REPEATED
            values = value if repeated else [value]
            for item in values:
                if descriptor.message_type.name == "Read" and item.is_streaming:
                    out.append(_read_message(df.sparkSession, item))
                elif hasattr(item, "ListFields"):
                    walk(item)

    walk(plan.root)
    return out


def _read_message(spark, read) -> tuple[str | None, Source]:
    if read.HasField("named_table"):
        table = read.named_table.unparsed_identifier
        fmt, location = describe_table(spark, table)
        return None, _new_source("", fmt, dict(read.named_table.options),
                                 [location] if location else [], table)
    source = read.data_source
    name = getattr(source, "source_name", "") or None
    return name, _new_source("", source.format, dict(source.options), list(source.paths))


def describe_table(spark, table: str) -> tuple[str, str]:
    """A catalog table's provider and location (``DESCRIBE TABLE EXTENDED``), "" where not
    shown."""
    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    except Exception:  # noqa: BLE001 - not a table this session can describe
        return "", ""
    info = {str(r[0]).strip(): str(r[1] or "").strip() for r in rows}
    return info.get("Provider", ""), info.get("Location", "")


def _classic_sources(df) -> list[tuple[str | None, Source]]:
    spark, out = df.sparkSession, []
    for leaf in as_java(spark, analyzed_plan(df).collectLeaves()):
        kind = str(leaf.getClass().getSimpleName())
        if kind not in ("StreamingRelation", "StreamingRelationV2"):
            continue
        name = _source_name(leaf)
        if kind == "StreamingRelation":
            source = leaf.dataSource()
            options = dict(as_java(spark, source.options()))
            paths = [_qualified(spark, p) for p in as_java(spark, source.paths())]
            table = ""
            catalog_table = source.catalogTable()
            if catalog_table.isDefined():
                table = str(catalog_table.get().identifier().unquotedString())
            out.append((name, _new_source("", str(source.className()), options, paths, table)))
        else:
            options = dict(leaf.extraOptions().asCaseSensitiveMap())
            identifier = leaf.identifier()
            table = str(identifier.get().toString()) if identifier.isDefined() else ""
            fmt = str(leaf.sourceName())
            provider = leaf.source()
            if provider.isDefined():
                fmt = _format_of_provider(provider.get(), fmt)
            out.append((name, _new_source("", fmt, options, [], table)))
    return out


def _qualified(spark, path: str) -> str:
    """A path as Spark resolves it (relative to the driver's folder, on the default file
    system)."""
    try:
        return open_fs(spark, path).root
    except Exception:  # noqa: BLE001 - a scheme without a client here: as written
        return path


def _source_name(leaf) -> str | None:
    """The name given with ``DataStreamReader.name`` (Spark 4.1+), else None."""
    try:
        text = str(leaf.sourceIdentifyingName().toString())
    except Exception:  # noqa: BLE001 - an older Spark: sources have no names
        return None
    match = re.fullmatch(r'name="(\w+)"', text)
    return match.group(1) if match else None


def _format_of_provider(provider, fallback: str) -> str:
    try:
        return str(provider.shortName())
    except Exception:  # noqa: BLE001 - a provider without a short name: its class
        return str(provider.getClass().getName()) or fallback
