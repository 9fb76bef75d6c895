"""Read a Structured Streaming checkpoint: its logs, its operators and stores, its state files.

Everything goes through :func:`~state_runbooks.core.fs.open_fs` (Hadoop's FileSystem API in
the Spark JVM, or DataFrame reads on Spark Connect) and Spark's own ``state-metadata`` data source,
so it works on any file system Spark can reach. Bad input raises :class:`~state_runbooks.common.errors.RunbookError` with one line saying what to do.

Layout (Spark 4.x)::

    <root>/metadata                      {"id": "<query id>"}
    <root>/offsets/<batch>               v1|v2 / {"batchWatermarkMs", "batchTimestampMs", "conf"} /
                                         a line per source (v2: <name>:<offset>; core/offset_log.py)
    <root>/commits/<batch>               v1 / {"nextBatchWatermarkMs"} (v2: and "stateUniqueIds")
    <root>/state/<op>/_metadata/metadata operator name, stores and their partition counts
    <root>/state/<op>/<partition>/[<store>/]<version>.delta|.snapshot|.zip|.changelog

State version = batch id + 1: the state written by batch 5 is version 6.
"""
from __future__ import annotations

import contextlib
import functools
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError, spark_errors
from state_runbooks.common.formatting import id_ranges
from state_runbooks.common.runtime import (
    DEFAULT_MIN_BATCHES_TO_RETAIN,
    OSS_HDFS_PROVIDER,
    provider_kind,
)
from state_runbooks.common.spark_settings import MIN_BATCHES_TO_RETAIN_CONF, PROVIDER_CONF

from . import offset_log
from .fs import open_fs, state_reader_root
from .fs.base import FileEntry, is_checksum_file
from .fs.memory import MemoryFiles
from .log_files import read_log as _read_log
from .state_file_stats import layout_partitions
from .state_files import (  # noqa: F401 - part of this API
    DEFAULT_STORE,
    STATE_FILE_PATTERN,
    StateFile,
    StateLayout,
    checkpoint_format_version,
    state_layout,
)

_LOG_SUBFOLDERS = ("offsets", "commits", "sources", "state", "metadata")


@dataclass(frozen=True)
class OffsetEntry:
    """One ``offsets/<batch>`` file: what the batch read and the configuration it pinned."""
    batch_id: int
    watermark_ms: int
    timestamp_ms: int
    conf: dict
    sources: list  # one entry per source: its offset as JSON (dict/str), or None
    # Names of the sources, in the same order, where the query named them (offsets log v2,
    # Spark's source evolution: a restart matches sources by name); None in a v1 log (by position).
    source_names: tuple | None = None
    format_version: int = 1  # the offsets log's format (core/offset_log.py)

    @property
    def by_source(self) -> dict:
        """Each source's offset by its name (format 2) or its position (format 1, as "0", ...)."""
        labels = self.source_names or tuple(str(i) for i in range(len(self.sources)))
        return dict(zip(labels, self.sources))


@dataclass(frozen=True)
class StoreInfo:
    """One state store of one operator: the unit the ``statestore`` reader reads."""
    operator_id: int
    operator_name: str
    store_name: str
    num_partitions: int
    min_batch_id: int | None
    max_batch_id: int | None

    @property
    def label(self) -> str:
        return f"{self.operator_id}/{self.store_name}"


@dataclass(frozen=True)
class OperatorInfo:
    operator_id: int
    operator_name: str
    stores: tuple[StoreInfo, ...]
    # Where the operator was found: "state-metadata" (Spark's source), "metadata-file" (its
    # _metadata file read directly, when Spark's source returned nothing for it) or "files" (no
    # operator metadata at all, e.g. written by Spark 3.x: inferred from the folder layout).
    source: str
    # Spark's operatorProperties (e.g. stateVariables of transformWithState, useVirtualColumnFamilies
    # of a join in state format 3); empty when Spark records none.
    properties: dict = field(default_factory=dict, compare=False)
    metadata_version: int | None = None  # 1: _metadata/metadata, 2: _metadata/v2/<batch>

    @property
    def num_partitions(self) -> int:
        return max((s.num_partitions for s in self.stores), default=0)


def _batch_ids(fs, folder: str) -> list[int]:
    return sorted(int(e.name) for e in fs.list(folder) if not e.is_dir and e.name.isdigit())


class Checkpoint:
    """A streaming checkpoint, validated on construction.

    >>> ckpt = Checkpoint(spark, "s3a://bucket/checkpoints/orders")      # doctest: +SKIP
    >>> ckpt.last_committed_batch_id, [s.label for s in ckpt.stores()]  # doctest: +SKIP
    """

    def __init__(self, spark, path: str, require_state: bool = True):
        if not path or not str(path).strip():
            raise RunbookError("checkpoint_path is empty: pass the root folder of a streaming "
                               "checkpoint (the checkpointLocation of the query)")
        self.spark = spark
        self.fs = open_fs(spark, str(path).strip())
        self.root = self.fs.root
        self.state_metadata_error: str | None = None
        self._validate_root(require_state)
        self.spark_root = state_reader_root(spark, self.fs)  # what Spark's state readers resolve

    # -- validation -----------------------------------------------------------------------------
    def _validate_root(self, require_state: bool) -> None:
        fs = self.fs
        if not fs.exists():
            raise RunbookError(f"checkpoint path does not exist: {self.root}")
        if not fs.is_dir():
            raise RunbookError(f"{self.root} is a file; pass the checkpoint root folder (it holds "
                               "metadata, offsets/, commits/ and state/)")
        fs.list()  # a folder this user may not read: permission denied, not "no checkpoint"
        looks_like_root = fs.exists("metadata") or fs.is_dir("offsets")
        if not looks_like_root:
            parent = self._checkpoint_above()
            if parent is not None:
                raise RunbookError(f"{self.root} is inside a checkpoint; pass the checkpoint root "
                                   f"instead: {parent}")
            raise RunbookError(f"{self.root} is not a streaming checkpoint: it has no metadata file "
                               "and no offsets/ folder (a checkpoint root holds metadata, offsets/, "
                               "commits/ and state/)")
        if require_state and not self.has_state_operators:
            ids = self.offset_batch_ids
            gaps = (f"; its offsets log has gaps (batches {id_ranges(ids)}): 05 recover corrupted "
                    "state checks the logs" if ids and len(ids) != ids[-1] - ids[0] + 1 else "")
            raise RunbookError(f"checkpoint {self.root} has no stateful operator: it has no state/ "
                               "folder with operators, so its query keeps no state to inspect"
                               + gaps)

    def _checkpoint_above(self) -> str | None:
        """If the path is below a checkpoint root (``.../state``, ``.../state/0``), that root."""
        parts = self.root.split("/")
        for depth in range(1, 4):
            if len(parts) - depth < 1 or parts[-depth] not in _LOG_SUBFOLDERS and not (
                    parts[-depth].isdigit() or parts[-depth].startswith("_")):
                continue
            candidate = "/".join(parts[:-depth])
            try:
                above = open_fs(self.spark, candidate)
            except RunbookError:
                return None
            if above.exists("metadata") and above.is_dir("offsets"):
                return above.root
        return None

    # -- logs -----------------------------------------------------------------------------------
    @functools.cached_property
    def query_id(self) -> str | None:
        if not self.fs.exists("metadata"):
            return None
        return _read_log(self, "metadata", 0)[1].get("id")

    @property
    def offset_batch_ids(self) -> list[int]:
        return _batch_ids(self.fs, "offsets")

    @property
    def commit_batch_ids(self) -> list[int]:
        return _batch_ids(self.fs, "commits")

    @property
    def last_committed_batch_id(self) -> int | None:
        commits = self.commit_batch_ids
        return commits[-1] if commits else None

    def offsets(self, batch_id: int) -> OffsetEntry:
        rel = f"offsets/{batch_id}"
        if not self.fs.exists(rel):
            raise RunbookError(f"batch {batch_id} has no offsets entry in {self.root}; batches with "
                               f"offsets: {id_ranges(self.offset_batch_ids)}")
        lines, meta = _read_log(self, rel, 1)
        try:
            parsed = offset_log.parse("\n".join(lines).encode("utf-8"))
        except offset_log.EntryProblem as exc:
            raise RunbookError(f"{rel} of checkpoint {self.root}: {exc.what}"
                               + ("" if exc.damage == "unknown" else
                                  ": 05 recover corrupted state says what Spark does with it "
                                  "and how to repair it")) from None
        return OffsetEntry(batch_id=batch_id,
                           watermark_ms=int(meta.get("batchWatermarkMs", 0)),
                           timestamp_ms=int(meta.get("batchTimestampMs", 0)),
                           conf=dict(meta.get("conf", {})),
                           sources=[s.value for s in parsed.sources],
                           source_names=tuple(s.name for s in parsed.sources) if parsed.named
                           else None,
                           format_version=parsed.version)

    def next_watermark_ms(self, batch_id: int) -> int | None:
        """The watermark the batch after ``batch_id`` applies (from ``commits/<batch_id>``)."""
        rel = f"commits/{batch_id}"
        if not self.fs.exists(rel):
            return None
        return int(_read_log(self, rel, 1)[1].get("nextBatchWatermarkMs", 0))

    def watermark(self, batch_id: int) -> tuple[int, str]:
        """The newest event-time watermark the logs record at ``batch_id`` and where: the one
        ``commits/<batch>`` sets for the next batch, else the one ``offsets/<batch>`` applied
        (batch 0 applies 0 while its commit already holds the first watermark). 0 when none."""
        committed = self.next_watermark_ms(batch_id)
        if committed:
            return committed, f"commits/{batch_id}"
        applied = self.offsets(batch_id).watermark_ms if self.fs.exists(f"offsets/{batch_id}") \
            else 0
        return applied, f"offsets/{batch_id}"

    @functools.cached_property
    def pinned_conf(self) -> dict:
        """The configuration pinned by the newest offsets entry. On restart Spark uses these values
        for the state store, whatever the session says."""
        for batch in reversed(self.offset_batch_ids):  # a damaged newest entry hides nothing:
            with contextlib.suppress(RunbookError):  # every entry pins the same values
                return self.offsets(batch).conf
        return {}

    @property
    def provider_class(self) -> str:
        return self.pinned_conf.get(PROVIDER_CONF, OSS_HDFS_PROVIDER)

    @property
    def provider_kind(self) -> str:
        return provider_kind(self.provider_class)

    @property
    def changelog_checkpointing(self) -> bool | None:
        """Whether RocksDB changelog checkpointing is on (None for other providers).

        Spark does not pin this conf in the offsets log, and a restart may switch it (seen on 4.3),
        so the files of the newest state version decide: on, that version is written as
        ``<version>.changelog`` (a ``.zip`` snapshot may come with it); off, as a ``.zip`` only.
        Older ``.changelog`` files stay behind after the flag is switched off and do not count.
        False while no state version is written.
        """
        if self.provider_kind != "rocksdb":
            return None
        files = self._layout.files
        newest = max((f.version for f in files), default=None)
        return any(f.kind == "changelog" and f.version == newest for f in files)

    @functools.cached_property
    def format_version(self) -> int:
        """Spark's state checkpoint format, 1 or 2 (see ``state_files.checkpoint_format_version``)."""
        commits = self.commit_batch_ids
        line = None
        if commits:
            with contextlib.suppress(Exception):  # a damaged commit: the file names decide
                line = self.fs.read_bytes(f"commits/{commits[-1]}")[:8].decode().split("\n")[0]
        # The newest commit's line decides; only without one do the state files (a walk).
        return checkpoint_format_version(line, [] if line else self._layout.files)

    @property
    def has_state_operators(self) -> bool:
        """Whether ``state/`` holds a folder per stateful operator (``state/<operator id>``)."""
        return any(e.is_dir and e.name.isdigit() for e in self.fs.list("state"))

    @property
    def writes_change_feed(self) -> bool:
        """Whether the provider writes a change per batch that Spark's ``readChangeFeed`` serves:
        the HDFS-backed provider (deltas) or RocksDB with changelog checkpointing."""
        return self.provider_kind == "hdfs" or bool(self.changelog_checkpointing)

    @property
    def min_batches_to_retain(self) -> int:
        return self.retention()[0]

    def retention(self, batch_ids: list[int] | None = None) -> tuple[int, str]:
        """``minBatchesToRetain`` and where it comes from. The offsets log does not record it;
        once Spark has purged old log entries (it keeps that many batches before the newest), the
        logs show the query's own value; before, only Spark's default can be said. ``batch_ids``:
        the offsets entries a listing just saw (sorted), else the log is listed."""
        if MIN_BATCHES_TO_RETAIN_CONF in self.pinned_conf:
            return int(self.pinned_conf[MIN_BATCHES_TO_RETAIN_CONF]), "pinned in the offsets log"
        ids = self.offset_batch_ids if batch_ids is None else batch_ids
        if ids and ids[0] > 0:
            return ids[-1] - ids[0], f"from the logs: Spark purged the entries before {ids[0]}"
        return DEFAULT_MIN_BATCHES_TO_RETAIN, ("Spark's default: the logs are not purged yet and "
                                               "the query's own setting is not recorded")

    # -- operators and stores -------------------------------------------------------------------
    @functools.cached_property
    def _layout(self) -> StateLayout:
        """The state folder from one listing of its tree (not a call per folder or file)."""
        return state_layout(self.fs.walk("state"))

    def inventory(self) -> dict[str, FileEntry]:
        """Every file of the checkpoint as stored, newly listed: by path relative to the root,
        ``.crc`` sidecars included (the raw view, which backups and repairs work from). The state
        layout is taken from the same walk rather than another one, and Spark's state-metadata
        is read meanwhile (forgetting what was cached before, as :meth:`refresh` does)."""
        self.refresh()
        with ThreadPoolExecutor(max_workers=1) as pool:
            metadata = pool.submit(lambda: self._state_metadata_rows)
            listing = self.fs.raw().walk()
            hidden = self.fs.has_checksum_layer  # the checked view hides the sidecars
            self.__dict__["_layout"] = state_layout(
                {rel: e for rel, e in listing.items()
                 if rel.startswith("state/") and not (hidden and is_checksum_file(rel))})
            metadata.result()
        return listing

    @functools.cached_property
    def _state_metadata_rows(self) -> list:
        """Spark's ``state-metadata`` rows; none when Spark cannot read them (the error is kept in
        ``state_metadata_error`` and the operators come from their files instead), nor
        without a session (files in memory)."""
        if isinstance(self.spark, MemoryFiles):
            return []
        try:
            with spark_errors(f"reading state-metadata of {self.root}"):
                return self.spark.read.format("state-metadata").load(self.spark_root).collect()
        except RunbookError as exc:
            self.state_metadata_error = str(exc)
            return []

    def _metadata_version(self, op: int) -> int | None:
        if self.fs.is_dir(f"state/{op}/_metadata/v2"):
            return 2
        return 1 if self.fs.exists(f"state/{op}/_metadata/metadata") else None

    def _metadata_file(self, op: int) -> dict | None:
        """The operator's own metadata file (v2: the newest ``_metadata/v2/<batch>``), parsed;
        None when it is missing or unreadable. Used only when ``state-metadata`` has no row for the
        operator (Spark's source returns no rows at all once one operator's file is missing)."""
        rel = f"state/{op}/_metadata/metadata"
        if self.fs.is_dir(f"state/{op}/_metadata/v2"):
            ids = _batch_ids(self.fs, f"state/{op}/_metadata/v2")
            rel = f"state/{op}/_metadata/v2/{ids[-1]}" if ids else rel
        try:
            lines = self.fs.read_text(rel).splitlines()
            meta = json.loads(lines[1]) if len(lines) > 1 else None
        except Exception:  # noqa: BLE001 - missing, unreadable or garbage: no metadata
            return None
        return meta if isinstance(meta, dict) and "operatorInfo" in meta else None

    @functools.cached_property
    def _operators(self) -> list[OperatorInfo]:
        # Spark's state-metadata job runs while state/ is walked: two independent reads, each
        # about 2 s on a 200-partition checkpoint (the first Spark job's start-up; the listing).
        with ThreadPoolExecutor(max_workers=1) as pool:
            metadata = pool.submit(lambda: self._state_metadata_rows)
            layout = self._layout
            by_op: dict[int, list] = {}
            for row in metadata.result():
                by_op.setdefault(int(row.operatorId), []).append(row)
        operators = []
        for op in sorted(set(by_op) | set(layout.partitions)):
            rows = by_op.get(op)
            version = self._metadata_version(op)
            if rows:
                stores = tuple(StoreInfo(op, r.operatorName, r.stateStoreName, int(r.numPartitions),
                                         _int_or_none(r.minBatchId), _int_or_none(r.maxBatchId))
                               for r in sorted(rows, key=lambda r: r.stateStoreName))
                props = _json_dict(rows[0].operatorProperties)
                operators.append(OperatorInfo(op, rows[0].operatorName, stores, "state-metadata",
                                              props, version))
                continue
            versions = [f.version for f in layout.files if f.operator_id == op]
            lo = min(versions) - 1 if versions else None
            hi = max(versions) - 1 if versions else None
            meta = self._metadata_file(op) if version else None
            if meta is not None:
                name = str(meta["operatorInfo"].get("operatorName", "unknown"))
                stores = tuple(StoreInfo(op, name, str(s.get("storeName", DEFAULT_STORE)),
                                         int(s.get("numPartitions", 0)), lo, hi)
                               for s in meta.get("stateStoreInfo", []))
                operators.append(OperatorInfo(op, name, stores, "metadata-file",
                                              _json_dict(meta.get("operatorPropertiesJson")),
                                              version))
                continue
            # No operator metadata (written before Spark 4.0, or lost): infer from the folders.
            parts = len(layout.partitions[op])
            names = sorted(layout.stores[op]) or [DEFAULT_STORE]
            stores = tuple(StoreInfo(op, "unknown", s, parts, lo, hi) for s in names)
            operators.append(OperatorInfo(op, "unknown", stores, "files"))
        return operators

    def operators(self) -> list[OperatorInfo]:
        return list(self._operators)

    def stores(self, operator_id: int = -1) -> list[StoreInfo]:
        """Every store, or those of one operator (-1: all operators)."""
        if operator_id == -1:
            return [s for op in self._operators for s in op.stores]
        return list(self.operator(operator_id).stores)

    def operator(self, operator_id: int) -> OperatorInfo:
        for op in self._operators:
            if op.operator_id == operator_id:
                return op
        valid = ", ".join(f"{op.operator_id} ({op.operator_name})" for op in self._operators)
        raise RunbookError(f"operator {operator_id} is not in checkpoint {self.root}; "
                           f"operators: {valid}")

    def store(self, operator_id: int, store_name: str = DEFAULT_STORE) -> StoreInfo:
        operator = self.operator(operator_id)
        for store in operator.stores:
            if store.store_name == store_name:
                return store
        valid = ", ".join(s.store_name for s in operator.stores)
        raise RunbookError(f"operator {operator_id} ({operator.operator_name}) has no store "
                           f"{store_name!r}; its stores: {valid}")

    # -- batches --------------------------------------------------------------------------------
    def retained_batch_range(self, operator_id: int = -1) -> tuple[int, int]:
        """Batches whose state can still be read: committed, and not yet cleaned up. Spark's
        reader needs a batch's commit entry too (it looks up the batch's state ids there), and a
        running query removes old entries at each batch: the commits are listed at each call."""
        stores = self.stores(operator_id)
        lows = [s.min_batch_id for s in stores if s.min_batch_id is not None]
        highs = [s.max_batch_id for s in stores if s.max_batch_id is not None]
        commits = self.commit_batch_ids
        if not lows or not commits:
            raise RunbookError(f"checkpoint {self.root} has no committed batch with state yet: "
                               "run the query for at least one batch")
        return max(max(lows), commits[0]), min(min(highs), commits[-1])

    def resolve_batch(self, batch_id: int = -1, operator_id: int = -1) -> int:
        """``-1`` -> the last committed batch; any other id is checked against the retained range."""
        lo, hi = self.retained_batch_range(operator_id)
        if batch_id == -1:
            return hi
        if not lo <= batch_id <= hi:
            raise RunbookError(f"batch {batch_id} is outside the retained range {lo}..{hi} of "
                               f"{self.root}; pass a batch in that range, or -1 for the last "
                               f"committed batch ({hi})")
        return batch_id

    # -- files ----------------------------------------------------------------------------------
    def state_files(self, operator_id: int = -1, store_name: str | None = None) -> list[StateFile]:
        files = self._layout.files
        if operator_id != -1:
            files = [f for f in files if f.operator_id == operator_id]
        if store_name is not None:
            files = [f for f in files if f.store_name == store_name]
        return sorted(files, key=lambda f: (f.operator_id, f.store_name, f.partition_id, f.version,
                                            f.kind))

    def partition_files(self) -> list[dict]:
        """Each state partition's bytes, files and versions (``state_file_stats``)."""
        return layout_partitions(self._layout)

    def disk_bytes(self, operator_id: int, store_name: str) -> dict:
        """Bytes on disk of one store: every retained state file, and the newest version alone."""
        files = self.state_files(operator_id, store_name)
        other = sum(v for (op, _part, store), v in self._layout.other_bytes.items()
                    if op == operator_id and store == store_name)
        newest: dict[int, int] = {}
        for f in files:
            newest[f.partition_id] = max(newest.get(f.partition_id, 0), f.version)
        latest = sum(f.size for f in files if f.version == newest[f.partition_id])
        return {"retained_bytes": sum(f.size for f in files) + other, "latest_version_bytes": latest,
                "files": len(files)}

    def refresh(self) -> "Checkpoint":
        """Forget cached listings (after the query ran more batches or a repair moved files)."""
        for name in ("_layout", "_state_metadata_rows", "_operators", "pinned_conf"):
            self.__dict__.pop(name, None)
        self.state_metadata_error = None
        return self

    def __repr__(self) -> str:
        return f"Checkpoint({self.root!r})"


def _json_dict(text) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _int_or_none(value) -> int | None:
    return None if value is None else int(value)
