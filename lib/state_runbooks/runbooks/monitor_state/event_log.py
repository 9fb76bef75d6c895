"""Streaming progress from Spark event logs: a file, a rolling ``eventlog_v2_*`` folder, or a
``spark.eventLog.dir`` folder with many applications, on any file system the session reads.

Every micro-batch posts a ``QueryProgressEvent`` to the listener bus; with ``spark.eventLog.enabled``
Spark writes it to the event log as one JSON line holding the query's full progress, the same object
``query.lastProgress`` returns. Only the lines this runbook needs are kept: progress, query starts
(names and ids, to say what a log holds), the application's start, its Spark properties (executor
memory) and its executors.

Reading: on a classic session a local log is streamed in this process (every codec, and logs still
being written). Elsewhere Spark reads it on the cluster (``spark.read.text``, which decodes Spark's
zstd files and plain text, also on Spark Connect) and returns only the kept lines; lz4 and snappy
logs, and single-file logs still in progress, whose framing Hadoop's reader cannot decode, are read
whole through the session's file access and decoded here.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError, spark_errors
from state_runbooks.common.spark_settings import (
    DRIVER_MEMORY_CONF,
    EVENT_LOG_DIR_CONF,
    EXECUTOR_INSTANCES_CONF,
    EXECUTOR_MEMORY_CONF,
    MASTER_CONF,
    MEMORY_FRACTION_CONF,
    PROVIDER_CONF,
)
from state_runbooks.core.fs import open_fs
from state_runbooks.session.spark_session import is_connect

from .codecs import IN_PROGRESS, codec_of, lines, lines_of_bytes

PROGRESS_EVENT = "org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent"
STARTED_EVENT = "org.apache.spark.sql.streaming.StreamingQueryListener$QueryStartedEvent"
_KEPT = ('"Event":"SparkListenerApplicationStart"', '"Event":"SparkListenerEnvironmentUpdate"',
         '"Event":"SparkListenerExecutorAdded"', '"Event":"org.apache.spark.sql.streaming.')
# Spark properties kept for the verdicts (the environment event also lists the class path).
KEPT_PROPERTIES = (MASTER_CONF, EXECUTOR_MEMORY_CONF, DRIVER_MEMORY_CONF,
                   EXECUTOR_INSTANCES_CONF, MEMORY_FRACTION_CONF,
                   PROVIDER_CONF)
ROLLING_PREFIX = "eventlog_v2_"
_EVENTS_FILE = re.compile(r"^events_(\d+)_(.+?)(\.[a-z0-9]+)?$")


@dataclass(frozen=True)
class LogFile:
    uri: str
    name: str
    size: int
    modified_ms: int

    @property
    def codec(self) -> str:
        return codec_of(self.name)


@dataclass
class Application:
    """One application's event log: one file, or the files of a rolling folder in order."""
    app_id: str
    files: list[LogFile]

    @property
    def modified_ms(self) -> int:
        return max(f.modified_ms for f in self.files)


@dataclass
class EventLog:
    """What one application's log says about its streaming queries."""
    app_id: str
    app_name: str = ""
    properties: dict = field(default_factory=dict)
    executors: int = 0
    queries: dict = field(default_factory=dict)  # query id -> name (None when unnamed)
    progress: list = field(default_factory=list)  # progress dicts, in log order

    def query_ids_with_progress(self) -> list[str]:
        return list(dict.fromkeys(p["id"] for p in self.progress))

    def describe_queries(self) -> str:
        counts = {}
        for p in self.progress:
            counts[p["id"]] = counts.get(p["id"], 0) + 1
        names = [f"{self.queries.get(q) or '(unnamed)'} ({q}, {counts.get(q, 0)} progress events)"
                 for q in dict.fromkeys([*self.queries, *counts])]
        return "; ".join(names) or "no streaming query"


# -- finding the applications ------------------------------------------------------------------------
def _strip_app_id(name: str) -> str:
    base = name[: -len(IN_PROGRESS)] if name.endswith(IN_PROGRESS) else name
    return re.sub(r"\.(zstd|zst|lz4|snappy|lzf)$", "", base)


def _is_local(spark, path: str) -> bool:
    """A path this process can open itself: the driver's own disk on a classic session."""
    if is_connect(spark):
        return False
    if path.startswith("file:"):
        return True
    return "://" not in path and ":" not in path.split("/", 1)[0]


def _local_path(path: str) -> str:
    return re.sub(r"^file:(//)?", "", path) if path.startswith("file:") else path


class _Listing:
    """Directory listing and file metadata, locally or through the session's file access."""

    def __init__(self, spark, path: str):
        self.spark, self.local = spark, _is_local(spark, path)
        self.path = os.path.abspath(_local_path(path)) if self.local else path.rstrip("/")

    def entry(self, path: str) -> tuple[bool, bool]:
        """(exists, is_dir)."""
        if self.local:
            return os.path.exists(path), os.path.isdir(path)
        fs = open_fs(self.spark, path)  # the path itself: listing its parent could mean all of /tmp
        return fs.exists(), fs.is_dir()

    def children(self, folder: str) -> list[tuple[LogFile, bool]]:
        if self.local:
            out = []
            for name in sorted(os.listdir(folder)):
                full = os.path.join(folder, name)
                st = os.stat(full)
                out.append((LogFile(full, name, st.st_size, int(st.st_mtime * 1000)),
                            os.path.isdir(full)))
            return out
        fs = open_fs(self.spark, folder)
        return [(LogFile(fs.uri(e.name), e.name, e.size, e.modified_ms), e.is_dir)
                for e in fs.list()]


def _looks_like_single_log(listing: _Listing, entry: LogFile) -> bool:
    """A single-file log is named after its application (``local-1700000000000``,
    ``app-20231114221320-0000``, ``application_1700000000000_0001``) plus the codec; locally its
    first line is also checked."""
    if entry.name.startswith((".", "appstatus_", "events_")) or "." in _strip_app_id(entry.name):
        return False
    if not listing.local:
        return True
    with open(entry.uri, "rb") as stream:
        first = next(lines(stream, entry.codec), "")
    return first.startswith('{"Event":"SparkListenerLogStart"')


def _rolling_app(listing: _Listing, folder: str, name: str) -> Application | None:
    files = []
    for entry, is_dir in listing.children(folder):
        match = None if is_dir else _EVENTS_FILE.match(_strip_app_id(entry.name))
        if match:
            files.append((int(match.group(1)), entry))
    if not files:
        return None
    return Application(name[len(ROLLING_PREFIX):], [f for _, f in sorted(files, key=lambda t: t[0])])


def find_applications(spark, path: str) -> list[Application]:
    """The applications whose event logs are at ``path``, newest first."""
    if not path:
        raise RunbookError("event_log_path is empty: give an event log file, an eventlog_v2_* "
                           f"folder or a {EVENT_LOG_DIR_CONF} folder")
    listing = _Listing(spark, path)
    exists, is_dir = listing.entry(listing.path)
    if not exists:
        raise RunbookError(f"event log path {path} does not exist")
    name = listing.path.rstrip("/").rsplit("/", 1)[-1]
    if not is_dir:
        parent = listing.path.rsplit("/", 1)[0]
        entry = next(e for e, _ in listing.children(parent) if e.name == name)
        match = _EVENTS_FILE.match(_strip_app_id(name))
        app_id = match.group(2) if match else _strip_app_id(name)
        return [Application(app_id, [entry])]
    if name.startswith(ROLLING_PREFIX):
        app = _rolling_app(listing, listing.path, name)
        if app is None:
            raise RunbookError(f"{path} is a rolling event log folder without events_* files")
        return [app]
    apps, seen = [], []
    for entry, child_is_dir in listing.children(listing.path):
        if not entry.name.startswith("."):  # checksum sidecars: not worth naming
            seen.append(entry.name)
        if child_is_dir and entry.name.startswith(ROLLING_PREFIX):
            app = _rolling_app(listing, entry.uri, entry.name)
            if app:
                apps.append(app)
        elif not child_is_dir and _looks_like_single_log(listing, entry):
            apps.append(Application(_strip_app_id(entry.name), [entry]))
    if not apps:
        shown = ", ".join(seen[:8]) + (" ..." if len(seen) > 8 else "") if seen else "nothing"
        raise RunbookError(f"no Spark event log at {path}: it holds {shown} (expected "
                           f"eventlog_v2_<app id> folders or <app id>[.zstd] files)")
    return sorted(apps, key=lambda a: a.modified_ms, reverse=True)


# -- reading one application -------------------------------------------------------------------------
def _kept(line: str) -> bool:
    return line.startswith("{") and any(marker in line[:120] for marker in _KEPT)


def _lines_through_spark(spark, files: list[LogFile]) -> list[str]:
    from pyspark.sql import functions as F
    value = F.col("value")
    condition = None
    for marker in _KEPT:
        test = value.contains(marker)
        condition = test if condition is None else condition | test
    with spark_errors(f"reading event log {files[0].uri}"):
        rows = spark.read.text([f.uri for f in files]).where(condition).collect()
    return [r.value for r in rows]


def _app_lines(spark, app: Application, local: bool):
    if local:
        for f in app.files:
            with open(f.uri, "rb") as stream:
                yield from (line for line in lines(stream, f.codec) if _kept(line))
        return
    through_spark = [f for f in app.files
                     if f.codec in ("none", "zstd") and not f.name.endswith(IN_PROGRESS)]
    if len(through_spark) == len(app.files):
        yield from _lines_through_spark(spark, app.files)
        return
    for f in app.files:  # lz4, snappy or in progress: whole files through the file access
        parent, name = f.uri.rsplit("/", 1)
        data = open_fs(spark, parent).read_bytes(name)
        yield from (line for line in lines_of_bytes(data, f.codec) if _kept(line))


def read_application(spark, app: Application, local: bool | None = None) -> EventLog:
    """Parse the kept events of one application's log."""
    if local is None:
        local = _is_local(spark, app.files[0].uri)
    log = EventLog(app.app_id)
    for line in _app_lines(spark, app, local):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short where a running application is still writing
        kind = event.get("Event", "")
        if kind == PROGRESS_EVENT:
            log.progress.append(event["progress"])
        elif kind == STARTED_EVENT:
            log.queries[event["id"]] = event.get("name")
        elif kind == "SparkListenerApplicationStart":
            log.app_name = event.get("App Name", "")
            log.app_id = event.get("App ID", log.app_id)
        elif kind == "SparkListenerEnvironmentUpdate":
            props = dict(event.get("Spark Properties", {}))
            log.properties = {k: props[k] for k in KEPT_PROPERTIES if k in props}
        elif kind == "SparkListenerExecutorAdded":
            log.executors += 1
    for p in log.progress:
        log.queries.setdefault(p["id"], p.get("name"))
    return log


def _matches(progress: dict, query_name: str, query_id: str) -> bool:
    return (not query_name or progress.get("name") == query_name) and \
        (not query_id or progress.get("id") == query_id)


def load(spark, path: str, app_id: str = "", query_name: str = "", query_id: str = ""
         ) -> tuple[EventLog, str, list[Application]]:
    """The log of the application to monitor and the chosen query's id.

    ``app_id`` names the application; otherwise the newest application that holds progress of the
    query (``query_name``/``query_id``; any streaming query when neither is given) is taken.
    A log whose progress belongs to several queries needs ``query_name`` or ``query_id``.
    """
    apps = find_applications(spark, path)
    if app_id:
        chosen = [a for a in apps if a.app_id == app_id]
        if not chosen:
            raise RunbookError(f"application {app_id} is not in {path}; applications: "
                               f"{', '.join(a.app_id for a in apps)}")
        apps_to_read = chosen
    else:
        apps_to_read = apps
    looked = []
    for app in apps_to_read:
        log = read_application(spark, app)
        looked.append(log)
        ids = [q for q in log.query_ids_with_progress()
               if any(_matches(p, query_name, query_id) for p in log.progress if p["id"] == q)]
        if len(ids) == 1:
            log.progress = [p for p in log.progress if p["id"] == ids[0]]
            return log, ids[0], apps
        if len(ids) > 1:
            raise RunbookError(f"application {log.app_id} has progress of {len(ids)} queries: "
                               f"{log.describe_queries()}; set query_name or query_id")
    wanted = " ".join(filter(None, [f"query_name={query_name!r}" if query_name else "",
                                     f"query_id={query_id}" if query_id else ""]))
    found = "; ".join(f"{log.app_id}: {log.describe_queries()}" for log in looked)
    if wanted:
        raise RunbookError(f"no streaming progress of {wanted} in {path}; found {found}")
    raise RunbookError(f"no streaming progress in {path} (is it a streaming application's log?); "
                       f"found {found}")
