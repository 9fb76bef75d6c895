"""A store's state files as Spark names them, and what a RocksDB snapshot says inside.

    state/<op>/<partition>/[<store>/]<version>[_<unique id>].delta|.snapshot|.zip|.changelog

The HDFS-backed provider writes ``.delta`` files (a version's changes) and ``.snapshot`` files (a full
copy); RocksDB writes ``.zip`` snapshots (a ``metadata`` file naming the SST files under ``SSTs/``)
and, with changelog checkpointing, ``.changelog`` files between them. Checkpoint format v2 adds the
version's unique id to the name. State version = batch id + 1.
"""
from __future__ import annotations

import io
import json
import re
import zipfile
from dataclasses import dataclass, field

from state_runbooks.common.formatting import id_ranges

DEFAULT_STORE = "default"
# Folders in a store's folder beside its state files: RocksDB's SSTs, the state schema.
OTHER_FOLDERS = ("SSTs", "_metadata")
STATE_FILE_PATTERN = re.compile(
    r"^(\d+)(?:_([0-9A-Za-z-]+))?\.(delta|snapshot|zip|changelog)$")
# A store's schema file: v1 beside each store, v2 (Spark 4's schema evolution) per operator.
SCHEMA_FILE = re.compile(
    r"^state/\d+/(\d+/(\w+/)?_metadata/schema|_stateSchema/(.+/)?[^./][^/]*)$")
SNAPSHOT_KINDS = ("snapshot", "zip")  # a full copy of a version
INCREMENTAL_KINDS = ("delta", "changelog")  # the changes of one version
INCREMENTAL_KINDS_SUFFIXES = tuple(f".{kind}" for kind in INCREMENTAL_KINDS)


@dataclass(frozen=True)
class StateFile:
    """One versioned state file (``.crc`` sidecars and ``SSTs/`` are not state files)."""
    operator_id: int
    partition_id: int
    store_name: str
    version: int
    kind: str  # delta, snapshot, zip, changelog
    size: int
    modified_ms: int
    path: str  # relative to the checkpoint root
    unique_id: str | None = None  # checkpoint format v2: the version's id in the commit log

    @property
    def batch_id(self) -> int:
        return self.version - 1




def checkpoint_format_version(commit_version_line: str | None, files: list[StateFile]) -> int:
    """Spark's state checkpoint format: 2 when the newest commit is a ``v2`` entry (it names the
    unique id of every store's version) or, with no commit to read, when state file names carry
    ids; else 1. Spark does not pin it in the offsets log, and its reader reads a v2 checkpoint
    only when the reading session sets ``CHECKPOINT_FORMAT_CONF`` to 2."""
    if commit_version_line:
        return 2 if commit_version_line.strip() == "v2" else 1
    return 2 if any(f.unique_id for f in files) else 1


def is_schema_file(rel: str) -> bool:
    """A state schema file (``.crc`` sidecars are not): Spark writes it again on restart."""
    return bool(SCHEMA_FILE.match(rel))


def store_folder(op: int, partition: int, store: str) -> str:
    """``state/<op>/<partition>``, with ``/<store>`` for any store but the default one."""
    base = f"state/{op}/{partition}"
    return base if store == DEFAULT_STORE else f"{base}/{store}"


def zip_ssts(raw, zip_rel: str) -> list[tuple[str, int]] | None:
    """SST files (name, size) a RocksDB ``<v>.zip`` lists in its ``metadata``; None: unreadable."""
    try:
        meta = snapshot_metadata(raw.read_bytes(zip_rel))
        return [(s["dfsSstFileName"], int(s["sizeBytes"])) for s in meta.get("sstFiles", [])]
    except Exception:  # noqa: BLE001 - any failure means the snapshot cannot be used
        return None


def snapshot_metadata(data: bytes) -> dict:
    """The ``metadata`` a RocksDB snapshot zip carries (its SST files, ``numKeys``, column
    families), parsed; its first line names the format version (``v1``, ``v2``)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        text = archive.read("metadata").decode("utf-8")
    return json.loads(text.split("\n", 1)[1] if text.startswith("v") else text)


def files_seen(files: list[StateFile]) -> str:
    """What a unit's state files say when Spark's reader did not read it: one wording for every
    runbook."""
    if not files:
        return "no state files"
    versions = sorted({f.version for f in files})
    partitions = id_ranges(sorted({f.partition_id for f in files}))
    return (f"{len(files)} files in partitions {partitions}, state versions "
            f"{versions[0]}..{versions[-1]}, {sum(f.size for f in files):,} bytes")


@dataclass
class StateLayout:
    """The state folder of a checkpoint, from one listing of its tree."""
    files: list[StateFile] = field(default_factory=list)
    # (operator, partition, store) -> bytes in other files (SSTs/, _metadata/schema, ...)
    other_bytes: dict = field(default_factory=dict)
    partitions: dict = field(default_factory=dict)  # operator -> set of partition ids on disk
    stores: dict = field(default_factory=dict)  # operator -> set of store names on disk


def state_layout(entries: dict) -> StateLayout:
    """The state folder from a listing of its tree (paths relative to the checkpoint root)."""
    layout = StateLayout()
    for rel, entry in entries.items():
        parts = rel.split("/")[1:]  # <op>/<partition>/[<store>/]<file>, or deeper
        if len(parts) < 2 or not parts[0].isdigit():
            continue
        op = int(parts[0])
        layout.partitions.setdefault(op, set())
        layout.stores.setdefault(op, set())
        if len(parts) < 3 or not parts[1].isdigit():
            continue  # the operator's own _metadata/, _stateSchema/
        part, rest = int(parts[1]), parts[2:]
        store = DEFAULT_STORE
        layout.partitions[op].add(part)
        if len(rest) > 1 and rest[0] not in OTHER_FOLDERS:
            if rest[0].startswith((".", "_")):
                continue
            store, rest = rest[0], rest[1:]  # a join's store folder
        if len(rest) == 2 and rest[0] in OTHER_FOLDERS:
            key = (op, part, store)
            layout.other_bytes[key] = layout.other_bytes.get(key, 0) + entry.size
            continue
        match = STATE_FILE_PATTERN.match(rest[0]) if len(rest) == 1 else None
        if match:
            layout.stores[op].add(store)
            layout.files.append(StateFile(op, part, store, int(match.group(1)),
                                          match.group(3), entry.size, entry.modified_ms, rel,
                                          match.group(2)))
    return layout
