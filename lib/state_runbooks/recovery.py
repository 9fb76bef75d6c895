"""The recover-corrupted-state runbook's logic: diagnose a checkpoint, roll it back, undo.

Diagnose (read-only):

- **Structure**, from one listing of the checkpoint: the offsets and commits logs (gaps, the batch
  in flight), every operator, store and partition folder, and for each retained state version the
  files the pinned provider needs to load it (HDFS-backed: newest ``.snapshot`` plus the
  ``.delta`` files after it; RocksDB: ``<v>.zip`` and the SST files it lists; RocksDB with
  changelog checkpointing: newest ``.zip`` plus the ``.changelog`` files after it). Missing and
  empty files, and files that do not match their ``.crc`` sidecar (local file systems), are
  reported with the first batch whose state needs them.
- **Load test**: Spark's ``statestore`` reader at the last committed batch, per operator and store;
  a failure keeps the Spark error class and names the file at fault.
- **Last good batch**: the newest batch at which every operator, store and partition loads, found by
  bisection over the retained range (about log2(batches) loads, not one per batch; the first cut
  goes where the files point). Spark's reader skips a partition folder that is missing, while a
  restarted query fails on it, so a batch only counts as good when its files are all there and
  sound *and* the reader loads it.

Rollback (dry run unless asked): copy everything that will be touched into a backup folder, then
move (never delete) the offsets and commits entries after the target batch and every state file of
a later version, write a JSON journal (sizes and SHA-256 of every move), and verify that the state
loads at the target and that it is the last committed batch. ``undo`` puts the checkpoint back
byte for byte from the journal; files written after the rollback (a restarted query's batches) are
moved aside too, never deleted.

Every file operation goes through :class:`~state_runbooks.hadoop_fs.HadoopFS`, so this works on any
file system Spark can reach. On ``file:`` Hadoop keeps a ``.<name>.crc`` sidecar next to each file:
repairs work on the raw file system and move sidecars explicitly, as plain files.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import re
import time
import zipfile
from dataclasses import dataclass, field
from functools import reduce

from .checkpoint import _STATE_FILE, Checkpoint, StateFile, _ranges
from .errors import RunbookError, first_line, spark_errors
from .file_access import FileEntry, open_fs
from .operators import StateUnit, find_unit, is_reader_limit, state_partitions, state_units
from .state_reader import read_unit

MODES = ("diagnose", "rollback", "undo")
QUIET_MINUTES = 5  # offsets or commits written more recently than this: the query looks active
REPLAY_FROM_START = -1  # a resolved rollback target: before the first batch (re-run everything)
BACKUP_MARK = ".recovery-"  # default backup folder: <checkpoint>.recovery-<UTC time>, a sibling
JOURNAL_NAME = "journal.json"
SHUFFLE_PARTITIONS_CONF = "spark.sql.shuffle.partitions"
SNAPSHOT_KINDS = ("snapshot", "zip")  # a full copy of a version
INCREMENTAL_KINDS = ("delta", "changelog")  # the changes of one version
INCREMENTAL_KINDS_SUFFIXES = tuple(f".{kind}" for kind in INCREMENTAL_KINDS)
# Files a restarted query may write again in place: backed up by every rollback so undo can restore
# them (state files, offsets and commits are never rewritten in place by Spark).
_METADATA_FILE = re.compile(r"^(metadata|sources/.*|state/\d+/_metadata/.*"
                            r"|state/\d+/\d+/(.+/)?_metadata/.*)$")
_CRC_HEADER_BYTES = 8  # "crc\0" and the bytes per checksum
_DEFAULT_BYTES_PER_CHECKSUM = 512

FS = object  # a file access object of file_access.open_fs: HadoopFS or ConnectFS

FAULTS = ("truncate_latest", "garbage_latest", "delete_latest", "break_middle", "drop_partition",
          "drop_operator_metadata", "uncommitted_batch")


# -- results ---------------------------------------------------------------------------------------
@dataclass
class Problem:
    """One broken thing, with the path relative to the checkpoint root."""
    path: str
    problem: str
    error_class: str | None = None
    first_batch_id: int | None = None  # the first batch whose state needs it (None: not state)

    def summary(self) -> dict:
        return {"path": self.path, "problem": self.problem, "error_class": self.error_class}


@dataclass
class LoadResult:
    """Spark's ``statestore`` reader on one unit (a store, a join side, a state variable) at one
    batch."""
    operator_id: int
    store_name: str  # the unit's label: a store name, a join side or a state variable
    batch_id: int
    ok: bool
    rows: int | None = None
    error_class: str | None = None
    message: str = ""
    path: str | None = None  # the file at fault, when known
    partitions: tuple[int, ...] = ()  # the partitions Spark's error names, when it names any

    @property
    def label(self) -> str:
        return f"{self.operator_id}/{self.store_name}"

    @property
    def damaged(self) -> bool:
        """The load failed inside Spark's own store code: evidence that files are broken."""
        return not self.ok and is_store_load_failure(self.error_class)

    @property
    def reader_limit(self) -> bool:
        """The load failed for a reason of the reader (an option, a schema it cannot read):
        nothing is known about the files."""
        return not self.ok and not self.damaged


@dataclass
class Probe:
    """One step of the search for the last good batch."""
    batch_id: int
    ok: bool
    by: str  # "load" (a Spark job read every store) or "files" (a needed file is missing or bad)
    detail: str = ""


@dataclass
class Diagnosis:
    root: str
    provider: str  # hdfs, rocksdb, rocksdb_changelog
    offset_batch_ids: list[int]
    commit_batch_ids: list[int]
    in_flight: list[int]
    operators: list[dict]  # {operator_id, operator_name, stores, partitions, versions}
    retained: tuple[int, int] | None  # batches a rollback can go back to
    min_batches_to_retain: int
    files_checked: int
    sidecars_checked: int
    problems: list[Problem]
    load_test: list[LoadResult]
    probes: list[Probe]
    last_good_batch_id: int | None
    can_replay_from_start: bool
    offsets_after: dict = field(default_factory=dict)  # batch -> sources' offsets after it

    @property
    def last_committed_batch_id(self) -> int | None:
        return self.commit_batch_ids[-1] if self.commit_batch_ids else None

    @property
    def loads(self) -> int:
        """Spark jobs that loaded state: the load test's (one per store) and the bisection's."""
        return len(self.load_test) + sum(p.by == "load" for p in self.probes[1:])

    @property
    def nothing_broken(self) -> bool:
        return (not self.problems and not self.reader_limits
                and self.last_good_batch_id == self.last_committed_batch_id)

    @property
    def reader_limits(self) -> list[LoadResult]:
        """Units Spark's reader cannot read at all (not evidence of damage)."""
        return [r for r in self.load_test if r.reader_limit]

    @property
    def state_does_not_load(self) -> bool:
        """Evidence that a restart cannot load the state of the last committed batch: Spark's
        store code failed on it, or a file its provider needs is missing or damaged."""
        c = self.last_committed_batch_id
        return bool(self.operators) and c is not None and self.last_good_batch_id != c

    def broken(self) -> list[dict]:
        return [p.summary() for p in self.problems]

    def verdict(self) -> str:
        c, g = self.last_committed_batch_id, self.last_good_batch_id
        if c is None:
            return "no batch was committed yet: there is no state to recover"
        if not self.operators:
            logs = ("the offsets and commits logs are sound" if not self.problems else
                    f"{len(self.problems)} problem(s) in the logs (see the list)")
            return f"no stateful operator: there is no state to load; {logs}"
        if self.reader_limits and not self.state_does_not_load:
            units = ", ".join(f"{r.label} ({r.error_class or 'error'})" for r in self.reader_limits)
            files = ("every file the pinned provider needs is there" +
                     (" and matches its .crc sidecar" if self.sidecars_checked else "")
                     if not self.problems else f"{len(self.problems)} problem(s) in the files "
                     "(see the list)")
            return (f"unknown: Spark's reader cannot read {units}, so no load can show whether "
                    f"that state is sound; here is what the files say: {files}. This is not "
                    "evidence of damage: nothing is planned")
        if self.nothing_broken:
            return f"nothing is broken: the state loads at the last committed batch {c}"
        if g == c:
            only_in_flight = all(p.problem.startswith("offsets entry without a commit")
                                 for p in self.problems)
            if only_in_flight:
                return (f"nothing is broken in the committed state: batch {self.in_flight[0]} was "
                        f"in flight and a restart re-runs it; the last good batch is {c}")
            return (f"the state loads at the last committed batch {c}, but {len(self.problems)} "
                    f"thing(s) are broken (see the list): they do not stop a restart")
        if g is None:
            start = (" (batch 0 is retained: a rollback can still replay everything from the "
                     "sources' start)") if self.can_replay_from_start else ""
            return f"no retained batch loads{start}"
        return (f"the state of the last committed batch {c} does not load; the last good batch is "
                f"{g}")


# -- inventory and structure -----------------------------------------------------------------------
def _sidecar(rel: str) -> str:
    folder, _, name = rel.rpartition("/")
    return f"{folder}/.{name}.crc" if folder else f".{name}.crc"


def _is_sidecar(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return name.startswith(".") and name.endswith(".crc")


def _is_metadata_file(rel: str) -> bool:
    """Query metadata, source metadata, operator metadata and state schemas (and their sidecars)."""
    if _is_sidecar(rel):
        folder, _, name = rel.rpartition("/")
        rel = f"{folder}/{name[1:-4]}" if folder else name[1:-4]
    return bool(_METADATA_FILE.match(rel))


def _provider(ckpt: Checkpoint) -> str:
    if ckpt.provider_kind != "rocksdb":
        return ckpt.provider_kind
    return "rocksdb_changelog" if ckpt.changelog_checkpointing else "rocksdb"


def _folder(op: int, partition: int, store: str) -> str:
    base = f"state/{op}/{partition}"
    return base if store == "default" else f"{base}/{store}"


def _read_zip_ssts(raw: FS, zip_rel: str) -> list[tuple[str, int]] | None:
    """SST files (name, size) a RocksDB ``<v>.zip`` lists in its ``metadata``; None: unreadable."""
    try:
        with zipfile.ZipFile(io.BytesIO(raw.read_bytes(zip_rel))) as archive:
            text = archive.read("metadata").decode("utf-8")
        meta = json.loads(text.split("\n", 1)[1] if text.startswith("v") else text)
        return [(s["dfsSstFileName"], int(s["sizeBytes"])) for s in meta.get("sstFiles", [])]
    except Exception:  # noqa: BLE001 - any failure means the snapshot cannot be used
        return None


class _Structure:
    """What the files say, for every operator, store and partition (no Spark job)."""

    def __init__(self, ckpt: Checkpoint, inventory: dict[str, FileEntry]):
        self.ckpt, self.inventory = ckpt, inventory
        self.raw = ckpt.fs.raw()
        self.provider = _provider(ckpt)
        self.problems: dict[str, Problem] = {}
        self.bad_files: set[str] = set()  # present but damaged
        self.ssts: dict[str, list[tuple[str, int]] | None] = {}  # zip -> its SSTs
        self.sidecars_checked = 0
        offsets, commits = ckpt.offset_batch_ids, ckpt.commit_batch_ids
        self.offsets, self.commits = offsets, commits
        self.last_committed = commits[-1] if commits else None
        self.in_flight = [b for b in offsets
                          if self.last_committed is None or b > self.last_committed]
        self.operators: list[dict] = []
        # (op, store, partition) -> version -> list of files needed to load it
        self.chains: dict[tuple, dict[int, list[str]]] = {}
        self.missing_partitions: dict[int, list[int]] = {}
        self.partitions: dict[int, list[int]] = {}  # operator -> the partitions that hold state
        self._check_logs()
        self._check_state()
        self._check_files()

    def add(self, path: str, problem: str, first_batch_id: int | None = None) -> None:
        known = self.problems.get(path)
        if known is None:
            self.problems[path] = Problem(path, problem, None, first_batch_id)
        elif first_batch_id is not None and (known.first_batch_id is None
                                             or first_batch_id < known.first_batch_id):
            known.first_batch_id = first_batch_id

    # logs -----------------------------------------------------------------------------------------
    def _check_logs(self) -> None:
        if "metadata" not in self.inventory:
            self.add("metadata", "missing: the query id is lost (a restart starts a new query id)")
        offsets, commits = self.offsets, self.commits
        for folder, ids in (("offsets", offsets), ("commits", commits)):
            if ids:
                for gap in sorted(set(range(ids[0], ids[-1] + 1)) - set(ids)):
                    self.add(f"{folder}/{gap}", f"missing: the {folder} log has a gap", gap)
        for b in sorted(set(commits) - set(offsets)):
            self.add(f"commits/{b}", "commit without an offsets entry", b)
        for b in self.in_flight:
            self.add(f"offsets/{b}", f"offsets entry without a commit: batch {b} was in flight "
                     "(a restart re-runs it)", b)

    # state ----------------------------------------------------------------------------------------
    def _check_state(self) -> None:
        ckpt = self.ckpt
        pinned = ckpt.pinned_conf.get(SHUFFLE_PARTITIONS_CONF)
        files_by_key: dict[tuple, list[StateFile]] = {}
        for f in ckpt.state_files():
            files_by_key.setdefault((f.operator_id, f.store_name, f.partition_id), []).append(f)
        top = None if self.last_committed is None else self.last_committed + 1
        for op in operators_of(ckpt):
            expected = max([op.num_partitions] + ([int(pinned)] if pinned else []))
            metadata = f"state/{op.operator_id}/_metadata/metadata"
            if not any(rel == metadata or rel.startswith(f"state/{op.operator_id}/_metadata/v")
                       for rel in self.inventory):
                self.add(metadata, "operator metadata missing: Spark's state-metadata source then "
                         "lists no operator of this checkpoint at all (the next batch writes it "
                         "again)")
            holding = list(state_partitions(ckpt, op.operator_id))
            self.partitions[op.operator_id] = holding
            on_disk = {int(rel.split("/")[2]) for rel in self.inventory
                       if rel.startswith(f"state/{op.operator_id}/")
                       and rel.split("/")[2].isdigit()}
            missing_parts = [p for p in holding if p not in on_disk]
            self.missing_partitions[op.operator_id] = missing_parts
            for p in missing_parts:
                self.add(f"state/{op.operator_id}/{p}", f"partition directory missing: operator "
                         f"{op.operator_id} keeps state in {len(holding)} partitions (pinned "
                         f"{SHUFFLE_PARTITIONS_CONF}={pinned or expected})", 0)
            lows, highs = [], []
            for store in op.stores:
                for p in holding:
                    key = (op.operator_id, store.store_name, p)
                    files = files_by_key.get(key, [])
                    if p in missing_parts:
                        self.chains[key] = {}
                        continue
                    if not files:
                        self.add(_folder(op.operator_id, p, store.store_name), "no state files", 0)
                        self.chains[key] = {}
                        continue
                    low = self._chains(key, files, top)
                    lows.append(low)
                    highs.append(max(f.version for f in files))
            self.operators.append({
                "operator_id": op.operator_id, "operator_name": op.operator_name,
                "stores": [s.store_name for s in op.stores], "partitions": expected,
                "partitions_with_state": holding,
                "versions": (max(lows), min(highs)) if lows else None})

    def _chains(self, key: tuple, files: list[StateFile], top: int | None) -> int:
        """Record, for each version from the oldest loadable one to ``top``, the files that load
        it; report the missing ones. Returns the oldest version this partition can load."""
        op, store, part = key
        folder = _folder(op, part, store)
        by_version: dict[int, dict[str, str]] = {}
        for f in files:
            by_version.setdefault(f.version, {})[f.kind] = f.path
        snapshots = sorted(v for v, kinds in by_version.items() if set(kinds) & set(SNAPSHOT_KINDS))
        rocksdb_zip_only = self.provider == "rocksdb"
        if rocksdb_zip_only:
            floor = snapshots[0] if snapshots else min(by_version)
        else:
            floor = snapshots[0] if snapshots and 1 not in by_version else 1
        chains: dict[int, list[str]] = {}
        self.chains[key] = chains
        if top is None:
            return floor
        incremental = "changelog" if self.provider == "rocksdb_changelog" else "delta"
        snapshot_kind = "snapshot" if self.provider == "hdfs" else "zip"
        for v in range(floor, top + 1):
            needed: list[str] = []
            if rocksdb_zip_only:
                needed.append(by_version.get(v, {}).get("zip", f"{folder}/{v}.zip"))
            else:
                base = max((s for s in snapshots if s <= v), default=0)
                if base:
                    needed.append(by_version[base].get(snapshot_kind)
                                  or next(iter(by_version[base].values())))
                for u in range(base + 1, v + 1):
                    needed.append(by_version.get(u, {}).get(incremental,
                                                            f"{folder}/{u}.{incremental}"))
            for rel in list(needed):
                if rel.endswith(".zip") and rel in self.inventory:
                    needed.extend(self._sst_paths(rel, folder, v))
            chains[v] = needed
            for rel in needed:
                if rel not in self.inventory:
                    self.add(rel, f"missing: the state of batch {v - 1} needs it", v - 1)
        return floor

    def _sst_paths(self, zip_rel: str, folder: str, version: int) -> list[str]:
        if zip_rel not in self.ssts:
            self.ssts[zip_rel] = _read_zip_ssts(self.raw, zip_rel)
        listed = self.ssts[zip_rel]
        if listed is None:
            self.bad_files.add(zip_rel)
            self.add(zip_rel, "not a readable zip: the RocksDB snapshot is damaged", version - 1)
            return []
        paths = []
        for name, size in listed:
            rel = f"{folder}/SSTs/{name}"
            paths.append(rel)
            entry = self.inventory.get(rel)
            if entry is not None and entry.size != size:
                self.bad_files.add(rel)
                self.add(rel, f"{entry.size} bytes, but {zip_rel.rsplit('/', 1)[-1]} lists it with "
                         f"{size} bytes", version - 1)
        return paths

    # content of every file -----------------------------------------------------------------------
    def _check_files(self) -> None:
        """Empty files, and files whose ``.crc`` sidecar does not match (file systems with one)."""
        first_needed: dict[str, int] = {}
        for chains in self.chains.values():
            for v, needed in chains.items():
                for rel in needed:
                    first_needed[rel] = min(first_needed.get(rel, v - 1), v - 1)
        checked_fs = self.ckpt.fs
        for rel, entry in self.inventory.items():
            if _is_sidecar(rel) or not rel.startswith(("offsets/", "commits/", "state/",
                                                        "metadata")):
                continue
            batch = first_needed.get(rel, _log_batch(rel))
            if entry.size == 0:
                self.bad_files.add(rel)
                self.add(rel, "empty (0 bytes)", batch)
                continue
            sidecar = self.inventory.get(_sidecar(rel))
            if sidecar is None or not checked_fs.has_checksum_layer:
                continue
            self.sidecars_checked += 1
            complaint = self._sidecar_complaint(rel, entry, sidecar, checked_fs)
            if complaint:
                self.bad_files.add(rel)
                self.add(rel, complaint, batch)

    def _sidecar_complaint(self, rel: str, entry: FileEntry, sidecar: FileEntry,
                           checked_fs: FS) -> str | None:
        per_sum = _DEFAULT_BYTES_PER_CHECKSUM
        sums = (sidecar.size - _CRC_HEADER_BYTES) // 4
        if sums != math.ceil(entry.size / per_sum):
            header = self.raw.read_bytes(_sidecar(rel))[:_CRC_HEADER_BYTES]
            per_sum = int.from_bytes(header[4:8], "big") or per_sum
        if sums != math.ceil(entry.size / per_sum):
            low, high = (sums - 1) * per_sum + 1, sums * per_sum
            return (f"{entry.size} bytes, but its .crc sidecar was written for {low}..{high} "
                    "bytes: the file was cut short or grew after Spark wrote it")
        if checked_fs.verify_checksum(rel) is not None:
            return "its bytes do not match its .crc sidecar: the file changed after Spark wrote it"
        return None

    # verdicts per batch --------------------------------------------------------------------------
    def batch_files_ok(self, batch: int) -> tuple[bool, str]:
        """Whether every file the state of ``batch`` needs is there and undamaged."""
        version = batch + 1
        for op, parts in self.missing_partitions.items():
            if parts:
                return False, f"state/{op}/{parts[0]} is missing"
        for key, chains in self.chains.items():
            needed = chains.get(version)
            if needed is None:
                return False, f"{_folder(key[0], key[2], key[1])} has no version {version}"
            for rel in needed:
                if rel not in self.inventory:
                    return False, f"{rel} is missing"
                if rel in self.bad_files:
                    return False, f"{rel} is damaged"
        return True, ""

    def on_disk(self, unit) -> list[int]:
        """The partition folders of a unit's store on disk (the reader's tasks, in order)."""
        return sorted(p for (op, store, p), chains in self.chains.items()
                      if op == unit.operator_id and store == unit.files_store
                      and p not in self.missing_partitions.get(op, []))

    def retained(self) -> tuple[int, int] | None:
        """Batches a rollback can target: committed, with offsets, and state on disk for every
        store. None when there is no such batch."""
        if self.last_committed is None:
            return None
        lows = [op["versions"][0] - 1 for op in self.operators if op["versions"]]
        lo = max(lows + [self.commits[0], self.offsets[0] if self.offsets else 0])
        return (lo, self.last_committed) if lo <= self.last_committed else None


def _log_batch(rel: str) -> int | None:
    head, _, tail = rel.partition("/")
    return int(tail) if head in ("offsets", "commits") and tail.isdigit() else None


# -- operators, units and loads --------------------------------------------------------------------
# Error classes raised when Spark's own store code fails on the files: evidence of damage. Reader
# options and schemas (STDS_*, column families) and memory say nothing about the files.
_STORE_LOAD_FAILURES = ("CANNOT_LOAD_STATE_STORE", "CANNOT_READ_ZIP_ENTRY",
                        "STATE_STORE_UNEXPECTED_EMPTY_FILE_IN_ROCKSDB_ZIP",
                        "STATE_STORE_ROW_CHECKSUM_VERIFICATION_FAILED")
_NOT_DAMAGE = ("CANNOT_LOAD_STATE_STORE.HDFS_STORE_PROVIDER_OUT_OF_MEMORY",
               "CANNOT_LOAD_STATE_STORE.ROCKSDB_STORE_PROVIDER_OUT_OF_MEMORY",
               "CANNOT_LOAD_STATE_STORE.SNAPSHOT_PARTITION_ID_NOT_FOUND",
               "CANNOT_LOAD_STATE_STORE.UNRELEASED_THREAD_ERROR")
# Where Spark's errors name a partition: RocksDB's StateStoreId(opId=0,partId=1,...), the
# HDFS-backed provider's StateStoreId[ operatorId=0, partitionId=1, ...], and a failed task
# (the reader runs one task per partition folder, in the order of their numbers).
_PARTITION_NAMED = re.compile(r"\b(?:partId|partitionId)=(\d+)")
_TASK_NAMED = re.compile(r"Lost task (\d+)\.\d+ in stage")


def is_store_load_failure(error_class: str | None) -> bool:
    """Whether a Spark error class says its store code could not load the state's files."""
    if not error_class or error_class in _NOT_DAMAGE:
        return False
    return error_class.split(".", 1)[0] in _STORE_LOAD_FAILURES


def operators_of(ckpt: Checkpoint) -> list:
    """The checkpoint's stateful operators; none when it has no state folder with operators."""
    if not any(e.is_dir and e.name.isdigit() for e in ckpt.fs.list("state")):
        return []
    return ckpt.operators()


def load_units(ckpt: Checkpoint) -> list[StateUnit]:
    """Every unit Spark's reader loads to cover the checkpoint's state, as the operator model
    reads it (joins of state format 3 by store name, transformWithState by variable)."""
    return state_units(ckpt) if operators_of(ckpt) else []


def _read_changes(ckpt: Checkpoint, unit: StateUnit, first_batch: int, last_batch: int):
    """Spark's state change feed of one unit over batches ``first_batch..last_batch`` (the
    change feed takes no ``batchId``: Spark refuses both together, STDS_CONFLICT_OPTIONS)."""
    reader = ckpt.spark.read.format("statestore").option("operatorId", unit.operator_id)
    options = {**unit.options, "readChangeFeed": "true", "changeStartBatchId": first_batch,
               "changeEndBatchId": last_batch}
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load(ckpt.root)


def _file_at_fault(ckpt: Checkpoint, text: str) -> str | None:
    """A checkpoint file named anywhere in a Spark error (message or causes), relative."""
    roots = {ckpt.root, ckpt.root.replace("file:/", "file:///", 1), ckpt.root.removeprefix("file:")}
    for root in roots:
        match = re.search(re.escape(root) + r"/([^\s,;\]\)]+)", text)
        if match:
            return match.group(1)
    return None


def _error_text(exc: RunbookError) -> str:
    return str(exc.spark_error) if exc.spark_error is not None else str(exc)


def _partitions_named(text: str, on_disk: list[int]) -> tuple[int, ...]:
    named = {int(p) for p in _PARTITION_NAMED.findall(text)} & set(on_disk)
    if not named:
        ordered = sorted(on_disk)
        named = {ordered[int(t)] for t in _TASK_NAMED.findall(text) if int(t) < len(ordered)}
    return tuple(sorted(named))


def load_unit(ckpt: Checkpoint, unit: StateUnit, batch_id: int, on_disk: list[int] = ()
              ) -> LoadResult:
    """Read one unit at one batch with Spark's ``statestore`` reader (a full scan: a load test)."""
    name = unit.label.split("/", 1)[1]
    try:
        with spark_errors(f"loading {unit.label} at batch {batch_id}"):
            rows = read_unit(ckpt, unit, batch_id).count()
        return LoadResult(unit.operator_id, name, batch_id, True, rows)
    except RunbookError as exc:
        text = _error_text(exc)
        return LoadResult(unit.operator_id, name, batch_id, False, None, exc.error_class,
                          _spark_line(exc), _file_at_fault(ckpt, text),
                          _partitions_named(text, list(on_disk)))


def load_store(ckpt: Checkpoint, operator_id: int, store_name: str, batch_id: int) -> LoadResult:
    """Read one store at one batch with Spark's ``statestore`` reader (a full scan: a load test)."""
    return load_unit(ckpt, find_unit(ckpt, operator_id, store_name), batch_id)


def load_batch(ckpt: Checkpoint, batch_id: int, units: list[StateUnit] | None = None
               ) -> tuple[bool, str]:
    """Load every unit (default: all of the checkpoint) at one batch, in one Spark job."""
    units = load_units(ckpt) if units is None else units
    if not units:
        return True, ""
    try:
        with spark_errors(f"loading the state of batch {batch_id}"):
            frames = [read_unit(ckpt, u, batch_id).select("partition_id") for u in units]
            reduce(lambda a, b: a.unionAll(b), frames).count()
        return True, ""
    except RunbookError as exc:
        return False, f"{exc.error_class or 'error'}: {_spark_line(exc)}"


def _changes_load(ckpt: Checkpoint, unit: StateUnit, first_version: int, last_version: int,
                  on_disk: list[int]) -> tuple[bool | None, tuple[int, ...], str | None]:
    """Spark's state change feed over versions ``first_version..last_version``: it reads exactly
    those versions' ``.delta`` or ``.changelog`` files and nothing else (seen on 4.3). Returns
    whether it loads (None: the reader refuses the read itself, which tells nothing), the
    partitions its error names, and the file its error names."""
    try:
        with spark_errors(f"reading the changes of {unit.label}"):
            _read_changes(ckpt, unit, first_version - 1, last_version - 1).count()
        return True, (), None
    except RunbookError as exc:
        if is_reader_limit(exc.error_class):
            return None, (), None
        text = _error_text(exc)
        return False, _partitions_named(text, on_disk), _file_at_fault(ckpt, text)


def _spark_line(exc: RunbookError) -> str:
    """The Spark message without the action prefix added by spark_errors."""
    line = str(exc)
    return line.split(" failed: ", 1)[1] if " failed: " in line else line


# -- diagnose --------------------------------------------------------------------------------------
def diagnose(ckpt: Checkpoint) -> Diagnosis:
    """Structure, load test at the last committed batch, the last good batch by bisection, and
    the file at fault of every unit that does not load."""
    ckpt.refresh()
    inventory = ckpt.fs.raw().walk()
    structure = _Structure(ckpt, inventory)
    last = structure.last_committed
    load_test: list[LoadResult] = []
    probes: list[Probe] = []
    retained = structure.retained()
    last_good = last if not structure.operators else None
    if last is not None and retained is not None:
        units = load_units(ckpt)
        load_test = [load_unit(ckpt, u, last, structure.on_disk(u)) for u in units]
        readable = [u for u, r in zip(units, load_test) if not r.reader_limit]
        files_ok, why = structure.batch_files_ok(last)
        latest_ok = files_ok and not any(r.damaged for r in load_test)
        probes.append(Probe(last, latest_ok, "load" if files_ok else "files",
                            why or _first_failure(load_test)))
        if latest_ok:
            last_good = last
        else:
            last_good = _bisect(ckpt, structure, readable, retained[0], last, probes)
            _name_files_at_fault(ckpt, structure, units, load_test, last_good, retained[0])
    problems = sorted(structure.problems.values(),
                      key=lambda p: (p.first_batch_id is None, p.first_batch_id or 0, p.path))
    offsets_after = {}
    for b in {last_good, last} - {None}:
        if b in ckpt.offset_batch_ids:
            offsets_after[b] = ckpt.offsets(b).sources
    return Diagnosis(
        root=ckpt.root, provider=structure.provider, offset_batch_ids=structure.offsets,
        commit_batch_ids=structure.commits, in_flight=structure.in_flight,
        operators=structure.operators, retained=retained,
        min_batches_to_retain=ckpt.min_batches_to_retain,
        files_checked=sum(not _is_sidecar(r) for r in inventory),
        sidecars_checked=structure.sidecars_checked, problems=problems, load_test=load_test,
        probes=probes, last_good_batch_id=last_good,
        can_replay_from_start=bool(retained) and retained[0] == 0 and last_good is None
        and 0 in structure.offsets, offsets_after=offsets_after)


def _first_failure(results: list[LoadResult]) -> str:
    for r in results:
        if r.damaged:
            return f"{r.label}: {r.error_class or 'error'}"
    return ""


def _name_files_at_fault(ckpt: Checkpoint, structure: _Structure, units: list[StateUnit],
                         results: list[LoadResult], last_good: int | None, lo: int) -> None:
    """For each unit whose load failed in Spark's store code, name the file at fault and keep
    Spark's error class: the first missing or damaged file its state needs, else the file found
    by Spark's own loads (the unit at the first bad batch, then single versions through the
    change feed), so it works without ``.crc`` sidecars (object stores, Spark Connect)."""
    for unit, failed in zip(units, results):
        if not failed.damaged:
            continue
        good, failure = last_good, failed
        first_bad = lo if last_good is None else last_good + 1
        if first_bad < failed.batch_id:
            there = load_unit(ckpt, unit, first_bad, structure.on_disk(unit))
            if there.damaged:
                failure = there
            elif there.ok:
                good = first_bad
        path, how = _locate(ckpt, structure, unit, failure, good)
        failed.path = path
        known = structure.problems.get(path)
        if known is None:
            structure.problems[path] = Problem(
                path, f"Spark cannot load the state of batch {failure.batch_id}: {how}",
                failure.error_class, failure.batch_id)
        elif known.error_class is None:
            known.error_class = failure.error_class


def _locate(ckpt: Checkpoint, structure: _Structure, unit: StateUnit, failure: LoadResult,
            good: int | None) -> tuple[str, str]:
    """The file at fault of a unit that does not load at ``failure.batch_id`` while it loads at
    ``good`` (None: at no retained batch), and how it was found."""
    op, store, version = unit.operator_id, unit.files_store, failure.batch_id + 1
    bad = _first_bad_file(structure, op, store, version)
    if bad:
        return bad, "missing or damaged on disk"
    if failure.path and failure.path in structure.inventory:
        return failure.path, "named in Spark's error"
    on_disk = structure.on_disk(unit)
    partitions = failure.partitions or tuple(on_disk)
    candidates = []
    for p in partitions:
        chains = structure.chains.get((op, store, p), {})
        before = set(chains.get(good + 1, [])) if good is not None else set()
        candidates += [rel for rel in chains.get(version, []) if rel not in before]
    incremental = sorted({_version_of(rel) for rel in candidates
                          if rel.endswith(INCREMENTAL_KINDS_SUFFIXES)})
    if incremental and structure.provider in ("hdfs", "rocksdb_changelog"):
        found = _first_unreadable_changes(ckpt, unit, incremental[0], incremental[-1], on_disk)
        if found is True:  # every version's changes read: the damage is in a snapshot's files
            candidates = [rel for rel in candidates
                          if not rel.endswith(INCREMENTAL_KINDS_SUFFIXES)]
        elif found is not None:
            version_at_fault, named, path = found
            if path and path in structure.inventory:
                return path, f"version {version_at_fault}'s changes do not read"
            hits = [rel for rel in candidates if _version_of(rel) == version_at_fault
                    and rel.endswith(INCREMENTAL_KINDS_SUFFIXES)
                    and (not named or _partition_of(rel) in named)]
            if hits:
                return hits[0], (f"Spark's change feed of version {version_at_fault} alone fails "
                                 "on it" + ("" if len(hits) == 1 else
                                            f" (or on {', '.join(hits[1:])})"))
    if not candidates:
        where = _folder(op, partitions[0], store) if len(partitions) == 1 else f"state/{op}"
        return where, "Spark's error names no file, and each file it needs reads on its own"
    others = f" (or one of {', '.join(candidates[1:4])}{'...' if len(candidates) > 4 else ''})" \
        if len(candidates) > 1 else ""
    return candidates[0], f"the file version {version} adds to what loads{others}"


def _first_unreadable_changes(ckpt: Checkpoint, unit: StateUnit, lo: int, hi: int,
                              on_disk: list[int]):
    """The first version in ``lo..hi`` whose changes Spark cannot read, with the partitions and
    file its error names, by bisection (about log2 single reads); True when all read, None when
    the reader refuses the change feed for this unit."""
    ok, named, path = _changes_load(ckpt, unit, lo, hi, on_disk)
    if ok is not False:
        return ok
    while lo < hi:
        mid = (lo + hi) // 2
        ok, first_named, first_path = _changes_load(ckpt, unit, lo, mid, on_disk)
        if ok is None:
            return None
        if ok:
            lo = mid + 1
        else:
            hi, named, path = mid, first_named, first_path
    return lo, named, path


def _version_of(rel: str) -> int:
    match = _STATE_FILE.match(rel.rsplit("/", 1)[-1])
    return int(match.group(1)) if match else -1


def _partition_of(rel: str) -> int:
    return int(rel.split("/")[2])


def _first_bad_file(structure: _Structure, operator_id: int, store_name: str, version: int
                    ) -> str | None:
    for part in structure.missing_partitions.get(operator_id, []):
        return f"state/{operator_id}/{part}"
    for (op, store, _part), chains in sorted(structure.chains.items()):
        if op == operator_id and store == store_name:
            for rel in chains.get(version, []):
                if rel not in structure.inventory or rel in structure.bad_files:
                    return rel
    return None


def _bisect(ckpt: Checkpoint, structure: _Structure, units: list[StateUnit], lo: int, bad: int,
            probes: list[Probe]) -> int | None:
    """The newest good batch below ``bad`` (known bad) down to ``lo``; None if none is good.

    Invariant: ``good`` is good (``lo - 1`` stands for "before the range") and ``bad`` is bad.
    A batch whose files are missing or damaged is bad without a Spark job. When the files point
    at the answer (a missing or damaged file explains why ``bad`` is bad), the first cut goes there:
    the newest batch whose files are all sound, which one load confirms. Otherwise (damage only
    Spark sees, as on object stores, which keep no ``.crc`` sidecars) plain bisection: at most
    ceil(log2(bad - lo + 1)) loads."""
    good = lo - 1
    sound = next((b for b in range(bad - 1, good, -1) if structure.batch_files_ok(b)[0]), None)
    if sound is None:  # no batch of the range has all its files: nothing can load
        if good + 1 < bad:
            probes.append(Probe(good + 1, False, "files", structure.batch_files_ok(good + 1)[1]))
        return None
    if sound + 1 < bad or not structure.batch_files_ok(bad)[0]:  # the files point at the answer
        if sound + 1 < bad:
            bad = sound + 1
            probes.append(Probe(bad, False, "files", structure.batch_files_ok(bad)[1]))
        ok, why = load_batch(ckpt, sound, units)
        probes.append(Probe(sound, ok, "load", why))
        if ok:
            return sound
        bad = sound
    while bad - good > 1:
        mid = (good + bad) // 2
        files_ok, why = structure.batch_files_ok(mid)
        if files_ok:
            ok, why = load_batch(ckpt, mid, units)
            probes.append(Probe(mid, ok, "load", why))
        else:
            ok = False
            probes.append(Probe(mid, ok, "files", why))
        if ok:
            good = mid
        else:
            bad = mid
    return good if good >= lo else None


def linear_scan(ckpt: Checkpoint) -> int | None:
    """The last good batch the slow way: load every retained batch (the benchmark's baseline)."""
    lo, hi = ckpt.retained_batch_range()
    units = load_units(ckpt)
    last_good = None
    for b in range(lo, hi + 1):
        ok, _ = load_batch(ckpt, b, units)
        if ok:
            last_good = b
    return last_good


# -- presenting a diagnosis ------------------------------------------------------------------------
def structure_lines(diag: Diagnosis) -> list[str]:
    last = diag.last_committed_batch_id
    flight = (f"batch {', '.join(map(str, diag.in_flight))} in flight (offsets, no commit)"
              if diag.in_flight else "no batch in flight")
    provider = {"hdfs": "HDFS-backed: <v>.delta per batch, <v>.snapshot now and then",
                "rocksdb": "RocksDB: <v>.zip per batch, listing the SST files it needs",
                "rocksdb_changelog": "RocksDB with changelog checkpointing: <v>.changelog per "
                                     "batch, <v>.zip snapshots now and then"}.get(diag.provider,
                                                                                 diag.provider)
    lines = [f"offsets {_ranges(diag.offset_batch_ids)}, commits {_ranges(diag.commit_batch_ids)}: "
             f"last committed batch {last}; {flight}",
             f"provider pinned in the offsets log: {provider}"]
    for op in diag.operators:
        versions = op["versions"]
        span = f"state versions {versions[0]}..{versions[1]}" if versions else "no state files"
        holding = op.get("partitions_with_state", range(op["partitions"]))
        parts = (f" x {op['partitions']} partitions" if len(holding) == op["partitions"] else
                 f", state in partition(s) {_ranges(list(holding))} of {op['partitions']} (the "
                 "others hold none, by design)")
        lines.append(f"operator {op['operator_id']} ({op['operator_name']}): "
                     f"{len(op['stores'])} store(s){parts}, {span}")
    sidecars = (f", {diag.sidecars_checked} checked against their .crc sidecars"
                if diag.sidecars_checked else "")
    lines.append(f"{diag.files_checked} files{sidecars}")
    return lines


def problem_lines(diag: Diagnosis) -> list[str]:
    if not diag.problems:
        return ["nothing missing, empty or damaged"]
    lines = []
    for p in diag.problems:
        batch = f" [batch {p.first_batch_id}]" if p.first_batch_id is not None else ""
        spark = f" ({p.error_class})" if p.error_class else ""
        lines.append(f"{p.path}{batch}: {p.problem}{spark}")
    return lines


def load_lines(diag: Diagnosis) -> list[str]:
    if not diag.load_test:
        return ["nothing to load: no committed batch with state"]
    lines = []
    for r in diag.load_test:
        where = f"batch {r.batch_id}, operator {r.operator_id} {r.store_name}"
        if r.ok:
            lines.append(f"{where}: loads ({r.rows} rows)")
        elif r.damaged:
            lines.append(f"{where}: FAILS in Spark's store code with {r.error_class}; file at "
                         f"fault: {r.path}")
        else:
            lines.append(f"{where}: Spark's reader cannot read it ({r.error_class or 'error'}: "
                         f"{r.message[:160]}); a reader limit, not evidence of damage")
    missing = [p for p in diag.problems if p.problem.startswith("partition directory missing")]
    for p in missing:
        lines.append(f"{p.path} is missing: Spark's reader skips a missing partition folder (its "
                     "rows are simply absent), while a restarted query fails on it")
    return lines


def bisection_lines(diag: Diagnosis) -> list[str]:
    if diag.retained is None:
        return ["no retained batch: nothing to search"]
    lo, hi = diag.retained
    lines = [f"retained: batches {lo}..{hi}; Spark keeps the last "
             f"minBatchesToRetain={diag.min_batches_to_retain} versions, so a rollback cannot go "
             f"further back than batch {lo}"]
    for p in diag.probes:
        verdict = "loads" if p.ok else "does not load"
        by = "Spark job" if p.by == "load" else "files"
        detail = f": {p.detail}" if p.detail and not p.ok else ""
        lines.append(f"  batch {p.batch_id}: {verdict} ({by}{detail})")
    g = diag.last_good_batch_id
    lines.append(f"last good batch: {g if g is not None else 'none'} ({diag.loads} state loads; "
                 f"loading every retained batch would take {hi - lo + 1})")
    return lines


def source_offsets_lines(sources: list) -> list[str]:
    lines = []
    for i, offset in enumerate(sources):
        text = json.dumps(offset, sort_keys=True) if not isinstance(offset, str) else offset
        kafka = (isinstance(offset, dict) and offset
                 and all(isinstance(v, dict) for v in offset.values()))
        hint = " (Kafka: use as the option startingOffsets)" if kafka else ""
        lines.append(f"    source {i}: {text}{hint}")
    return lines


def options_lines(diag: Diagnosis) -> list[str]:
    """The ways back to a running query, with their consequences; the recommended one first."""
    c, g = diag.last_committed_batch_id, diag.last_good_batch_id
    if c is None:
        return ["(c) nothing to recover: no batch was committed yet"]
    lines = []
    broken_state = g != c
    if not broken_state:
        lines.append("(c) nothing in the committed state is broken: restart the query as it is"
                     + (f" (Spark re-runs batch {diag.in_flight[0]}, which was in flight)"
                        if diag.in_flight else ""))
    if broken_state and (g is not None or diag.can_replay_from_start):
        if g is None:
            lines.append("(a) roll back to before batch 0: the query re-runs every batch from the "
                         "offsets its sources start from (their sources/ entries are kept). Safe "
                         "only when the sources still hold all input since the query started.")
        else:
            rerun = f"batches {g + 1}..{c}" if g + 1 < c else f"batch {c}"
            lines.append(f"(a) roll back to batch {g}: the query re-reads the input of {rerun} "
                         f"from its sources, starting after these offsets (offsets/{g}):")
            lines += source_offsets_lines(diag.offsets_after.get(g, []))
            lines.append("    Safe when the sources still hold that input (Kafka: retention covers "
                         "those offsets). Sinks see those batches again: fine for idempotent sinks "
                         "(file sink, Delta, foreachBatch keyed on the batch id).")
    if broken_state:
        lines.append(f"(b) start a new checkpoint: no input is skipped if the new query starts "
                     f"after the last committed batch {c} (offsets/{c}):")
        lines += source_offsets_lines(diag.offsets_after.get(c, []))
        lines.append("    The new query's state starts empty: aggregates, deduplication and "
                     "join buffers forget everything before it.")
    return lines


# -- the plan --------------------------------------------------------------------------------------
@dataclass
class Plan:
    target_batch_id: int | None  # REPLAY_FROM_START: before batch 0; None: no rollback possible
    moves: list[str]  # files to move aside, relative (their .crc sidecars go with them)
    note: str = ""

    def summary(self) -> dict:
        return {"target_batch_id": self.target_batch_id, "moves": list(self.moves)}


def plan_rollback(ckpt: Checkpoint, diag: Diagnosis, target_batch_id: int = -1) -> Plan:
    """What a rollback to ``target_batch_id`` moves (-1: the last good batch found)."""
    c, g = diag.last_committed_batch_id, diag.last_good_batch_id
    if c is None or diag.retained is None or not diag.operators:
        return Plan(None, [], "nothing to roll back: no committed batch with state")
    if diag.reader_limits and not diag.state_does_not_load:
        if target_batch_id != -1:
            raise RunbookError(f"target_batch_id={target_batch_id}: no rollback on state Spark's "
                               "reader cannot read and nothing shows damaged: restart the query "
                               "as it is, or pass -1")
        return Plan(None, [], "no rollback planned: Spark's reader cannot read part of this "
                              "state, and nothing shows that Spark's store cannot load it")
    lo = diag.retained[0]
    if target_batch_id == -1:
        if g is None:
            if not diag.can_replay_from_start:
                return Plan(None, [], f"no retained batch loads and batch 0 is gone (retained "
                                      f"{lo}..{c}): start a new checkpoint, option (b)")
            target = REPLAY_FROM_START
        else:
            target = g
    else:
        if not lo <= target_batch_id <= c:
            raise RunbookError(f"target_batch_id={target_batch_id} is outside the retained range "
                               f"{lo}..{c}: pass -1 (the last good batch) or a batch in that range")
        if g is None or target_batch_id > g:
            raise RunbookError(f"target_batch_id={target_batch_id}: the state of that batch does "
                               f"not load (last good batch: {g if g is not None else 'none'}); "
                               "pass -1 or an older batch")
        target = target_batch_id
    inventory = ckpt.fs.raw().walk()
    moves = [f"commits/{b}" for b in reversed(ckpt.commit_batch_ids) if b > target]
    moves += [f"offsets/{b}" for b in reversed(ckpt.offset_batch_ids) if b > target]
    if target == REPLAY_FROM_START:
        # Spark refuses to start a query on a state folder that is not empty
        # (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY): everything in state/ goes, and then the
        # state/ folder itself (rollback moves it once only empty folders are left).
        moves += [rel for rel in inventory if rel.startswith("state/") and not _is_sidecar(rel)]
    else:
        moves += _state_moves(ckpt, inventory, target + 1)
    moves += _orphan_sidecars(inventory, target)
    note = ("nothing to move: the checkpoint already ends at the target batch" if not moves
            else f"{len(moves)} files to move aside")
    return Plan(target, moves, note)


def _state_moves(ckpt: Checkpoint, inventory: dict, keep_version: int) -> list[str]:
    """State files of versions after ``keep_version``, and SSTs only such versions use."""
    raw = ckpt.fs.raw()
    later = [f for f in ckpt.state_files() if f.version > keep_version]
    moves = [f.path for f in later]
    kept_zips = [f for f in ckpt.state_files() if f.kind == "zip" and f.version <= keep_version]
    if any(f.kind == "zip" for f in later):
        kept_ssts = set()
        for f in kept_zips:
            folder = f.path.rsplit("/", 1)[0]
            kept_ssts |= {f"{folder}/SSTs/{n}" for n, _ in (_read_zip_ssts(raw, f.path) or [])}
        exclusive = set()
        for f in later:
            if f.kind == "zip":
                folder = f.path.rsplit("/", 1)[0]
                exclusive |= {f"{folder}/SSTs/{n}" for n, _ in (_read_zip_ssts(raw, f.path) or [])}
        moves += sorted(rel for rel in exclusive - kept_ssts if rel in inventory)
    return moves


def _orphan_sidecars(inventory: dict, target: int) -> list[str]:
    """Sidecars left behind by a lost file of a later batch (``.5.delta.crc`` without
    ``5.delta``): the restarted query writes that file and its sidecar again, so the old one
    goes aside too, to keep undo exact."""
    out = []
    for rel in inventory:
        if not _is_sidecar(rel):
            continue
        folder, _, name = rel.rpartition("/")
        data = f"{folder}/{name[1:-4]}"
        if data in inventory:
            continue
        log = _log_batch(data)
        state = _STATE_FILE.match(data.rsplit("/", 1)[-1]) if data.startswith("state/") else None
        if (log is not None and log > target) or (state and int(state.group(1)) > target + 1):
            out.append(rel)
    return out


def plan_lines(plan: Plan, limit: int = 12) -> list[str]:
    if plan.target_batch_id is None:
        return [plan.note]
    target = ("before batch 0 (replay everything)" if plan.target_batch_id == REPLAY_FROM_START
              else f"batch {plan.target_batch_id}")
    lines = [f"target: {target}; {plan.note}"]
    shown = plan.moves if len(plan.moves) <= limit else plan.moves[:limit]
    lines += [f"  move {rel}" for rel in shown]
    if len(plan.moves) > limit:
        lines.append(f"  ... and {len(plan.moves) - limit} more")
    if plan.moves:
        lines.append("  (each with its .crc sidecar, where there is one)")
    return lines


# -- activity --------------------------------------------------------------------------------------
@dataclass
class Activity:
    reasons: list[str]
    seen: str = ""  # what the guard looked at, active or not

    @property
    def looks_active(self) -> bool:
        return bool(self.reasons)


TRIGGER_INTERVALS_QUIET = 3  # quiet for this many of the query's own trigger intervals: stopped
_RECENT_BATCHES = 10  # batches whose timestamps give the query's trigger interval


def trigger_interval_ms(ckpt: Checkpoint) -> int | None:
    """The query's usual time between batches: the median gap between the batch timestamps of
    its last offsets entries (None with fewer than two batches)."""
    ids = ckpt.offset_batch_ids[-_RECENT_BATCHES:]
    stamps = [ckpt.offsets(b).timestamp_ms for b in ids]
    gaps = sorted(b - a for a, b in zip(stamps, stamps[1:]) if b > a)
    return gaps[len(gaps) // 2] if gaps else None


def check_activity(ckpt: Checkpoint, quiet_minutes: float = QUIET_MINUTES,
                   now_ms: int | None = None) -> Activity:
    """Signs that a query is still writing to the checkpoint: an offsets or commits entry written
    more recently than ``quiet_minutes`` or than ``TRIGGER_INTERVALS_QUIET`` of the query's own
    trigger intervals (from its batch timestamps), whichever is longer, or an active query of
    this session on it."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    reasons = []
    newest = None
    raw = ckpt.fs.raw()
    for folder in ("offsets", "commits"):
        for rel, entry in raw.walk(folder).items():
            if entry.name.rsplit("/", 1)[-1].isdigit() and (newest is None
                                                            or entry.modified_ms > newest[1]):
                newest = (rel, entry.modified_ms)
    interval = trigger_interval_ms(ckpt)
    window_ms = max(quiet_minutes * 60_000, TRIGGER_INTERVALS_QUIET * (interval or 0))
    why = (f"{TRIGGER_INTERVALS_QUIET} x the query's trigger interval of about "
           f"{interval / 1000:.0f} s (offsets' batch timestamps)"
           if interval and TRIGGER_INTERVALS_QUIET * interval > quiet_minutes * 60_000
           else f"{quiet_minutes:g} minutes")
    seen = (f"newest log entry {newest[0]}, written {(now_ms - newest[1]) / 1000:.0f} s ago; "
            f"quiet means nothing written for {window_ms / 1000:.0f} s ({why})" if newest
            else "no offsets or commits entry")
    if newest and now_ms - newest[1] < window_ms:
        reasons.append(f"{newest[0]} was written {(now_ms - newest[1]) / 1000:.0f} s ago (less "
                       f"than {why})")
    for query in ckpt.spark.streams.active:
        try:
            location = str(query._jsq.streamingQuery().resolvedCheckpointRoot())
        except Exception:  # noqa: BLE001 - not every wrapper exposes it
            location = ""
        if str(query.id) == ckpt.query_id or location.rstrip("/") in (ckpt.root, ckpt.fs.uri()):
            reasons.append(f"query {query.name or query.id} is active in this Spark session on "
                           "this checkpoint")
    return Activity(reasons, seen)


# -- rollback and undo -----------------------------------------------------------------------------
@dataclass
class Outcome:
    mode: str
    dry_run: bool
    applied: bool = False
    refused: str | None = None
    backup_dir: str | None = None
    journal_path: str | None = None
    lines: list[str] = field(default_factory=list)
    verified: bool | None = None


def cannot_modify(ckpt: Checkpoint, mode: str) -> str | None:
    """Why this session cannot move the checkpoint's files (Spark Connect outside Databricks has
    no way to rename a file), else None. Checked before anything changes: never half-apply."""
    if getattr(ckpt.fs, "can_modify", True):
        return None
    return (f"this Spark Connect session cannot move files (no Databricks dbutils.fs): run the "
            f"apply step (mode=\"{mode}\", dry_run=False) on a classic session that reaches "
            f"{ckpt.root}; nothing was changed")


def default_backup_dir(ckpt: Checkpoint, now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    return f"{ckpt.root}{BACKUP_MARK}{stamp}"


def _backup_fs(ckpt: Checkpoint, backup_dir: str) -> FS:
    backup = open_fs(ckpt.spark, backup_dir).raw()
    if backup.root == ckpt.root or backup.root.startswith(ckpt.root + "/"):
        raise RunbookError(f"backup_dir {backup.root} is inside the checkpoint: pick a folder "
                           "outside it (empty: a sibling named after the checkpoint)")
    if not backup.same_file_system(ckpt.fs.raw()):
        raise RunbookError(f"backup_dir {backup.root} is not on the checkpoint's file system "
                           f"({ckpt.root}): moves are renames, so pick a folder there")
    if backup.exists() and backup.list():
        raise RunbookError(f"backup_dir {backup.root} is not empty: pick a new folder (or leave "
                           "backup_dir empty for a fresh one)")
    return backup


def _write_journal(backup: FS, journal: dict, name: str = JOURNAL_NAME) -> str:
    backup.write_bytes(name, (json.dumps(journal, indent=1) + "\n").encode("utf-8"), overwrite=True)
    return backup.uri(name)


def rollback(ckpt: Checkpoint, plan: Plan, dry_run: bool = True, backup_dir: str = "",
             force: bool = False, quiet_minutes: float = QUIET_MINUTES) -> Outcome:
    """Apply a plan: back up, move aside, journal, verify. A dry run only says what it would do."""
    out = Outcome("rollback", dry_run)
    if plan.target_batch_id is None or not plan.moves:
        out.lines.append(f"nothing to do: {plan.note}")
        return out
    activity = check_activity(ckpt, quiet_minutes)
    out.lines.append(f"activity check: {activity.seen}")
    out.refused = cannot_modify(ckpt, "rollback")
    if activity.looks_active and not force and not out.refused:
        out.refused = ("the query looks active: " + "; ".join(activity.reasons) + ". Stop it, "
                       "wait, or pass force=True when you know it is stopped")
    backup_dir = backup_dir or default_backup_dir(ckpt)
    out.backup_dir = backup_dir
    if dry_run:
        out.lines.append(f"dry run: nothing changed. With dry_run=False this copies and then moves "
                         f"{len(plan.moves)} files (with sidecars) to {backup_dir}")
        if out.refused:
            out.lines.append(f"and would be refused now: {out.refused}")
        return out
    if out.refused:
        out.lines.append(f"refused: {out.refused}")
        if cannot_modify(ckpt, "rollback"):  # the exact plan, for the classic session
            out.lines += plan_lines(plan, limit=len(plan.moves))
        return out
    raw = ckpt.fs.raw()
    backup = _backup_fs(ckpt, backup_dir)
    out.backup_dir = backup.root
    inventory = raw.walk()
    moved = [rel for rel in plan.moves if rel in inventory]
    moved += [_sidecar(rel) for rel in moved if _sidecar(rel) in inventory]
    kept_copies = [rel for rel in inventory if _is_metadata_file(rel) and rel not in moved]
    journal = {
        "format": 1, "runbook": "recover_corrupted_state", "checkpoint": ckpt.root,
        "backup_dir": backup.root, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "target_batch_id": plan.target_batch_id,
        "last_committed_batch_id_before": ckpt.last_committed_batch_id, "status": "started",
        "moves": [_record(raw, inventory, rel, moved_to=f"moved/{rel}") for rel in moved],
        "copies": [_record(raw, inventory, rel) for rel in kept_copies],
        "manifest": [{"path": rel, "size": e.size, "modified_ms": e.modified_ms}
                     for rel, e in inventory.items()],
    }
    out.journal_path = _write_journal(backup, journal)
    for item in journal["moves"] + journal["copies"]:  # 1. copy everything that will be touched
        raw.copy_to(item["path"], backup, item["copy"])
        if backup.sha256(item["copy"]) != item["sha256"]:
            raise RunbookError(f"the backup copy of {item['path']} differs from the original: "
                               f"nothing was moved; see {out.journal_path}")
    for item in journal["moves"]:  # 2. move (never delete)
        raw.move_to(item["path"], backup, item["moved_to"])
        item["moved"] = True
    if plan.target_batch_id == REPLAY_FROM_START and raw.is_dir("state"):
        left = raw.walk("state")
        if left:
            raise RunbookError(f"state/ still holds {len(left)} files after the moves (e.g. "
                               f"{next(iter(left))}): did a query write meanwhile? See "
                               f"{out.journal_path}")
        raw.move_to("state", backup, "moved-empty-folders/state")
        journal["moved_empty_folders"] = ["state"]
    journal["status"] = "applied"
    ckpt.refresh()
    journal["verification"] = _verify_rollback(ckpt, plan.target_batch_id)
    out.verified = journal["verification"]["ok"]
    _write_journal(backup, journal)
    out.applied = True
    out.lines.append(f"moved {len(moved)} files (with sidecars) to {backup.root}/moved after "
                     f"copying them to {backup.root}/copy; journal {out.journal_path}")
    out.lines += journal["verification"]["lines"]
    return out


def _record(raw: FS, inventory: dict, rel: str, moved_to: str | None = None) -> dict:
    item = {"path": rel, "size": inventory[rel].size, "sha256": raw.sha256(rel),
            "copy": f"copy/{rel}"}
    if moved_to:
        item["moved_to"] = moved_to
    return item


def _verify_rollback(ckpt: Checkpoint, target: int) -> dict:
    last = ckpt.last_committed_batch_id
    lines = []
    if target == REPLAY_FROM_START:
        ok = last is None and not ckpt.offset_batch_ids
        lines.append(f"verified: no offsets and no commits left: the query starts from batch 0"
                     if ok else f"NOT verified: the checkpoint still has commits up to {last}")
        return {"ok": ok, "last_committed_batch_id": last, "loads": None, "lines": lines}
    loads, why = load_batch(ckpt, target) if last == target else (False, "")
    ok = last == target and loads
    lines.append(f"verified: the last committed batch is {last} and its state loads" if ok else
                 f"NOT verified: last committed batch {last} (expected {target}); loads: {loads} "
                 f"{why}")
    return {"ok": ok, "last_committed_batch_id": last, "loads": loads, "lines": lines}


def find_journal(ckpt: Checkpoint, journal_path: str = "") -> str:
    """The journal to undo: ``journal_path`` (a journal file or its backup folder), else the
    newest ``<checkpoint>.recovery-*/journal.json`` next to the checkpoint."""
    if journal_path:
        fs = open_fs(ckpt.spark, journal_path).raw()
        if fs.is_dir():
            return fs.uri(JOURNAL_NAME) if fs.exists(JOURNAL_NAME) else _no_journal(fs.root)
        if not fs.exists():
            _no_journal(fs.root)
        return fs.root
    parent, name = ckpt.root.rsplit("/", 1)
    siblings = open_fs(ckpt.spark, parent).raw()
    candidates = sorted((e.name for e in siblings.list()
                         if e.is_dir and e.name.startswith(name + BACKUP_MARK)
                         and siblings.exists(f"{e.name}/{JOURNAL_NAME}")), reverse=True)
    if not candidates:
        raise RunbookError(f"no rollback journal next to the checkpoint ({parent}/{name}"
                           f"{BACKUP_MARK}*/{JOURNAL_NAME}): pass journal_path")
    return siblings.uri(f"{candidates[0]}/{JOURNAL_NAME}")


def _no_journal(path: str):
    raise RunbookError(f"journal_path {path} has no {JOURNAL_NAME}: pass the journal file or the "
                       "backup folder of a rollback")


def read_journal(spark, journal_uri: str) -> dict:
    folder, name = journal_uri.rsplit("/", 1)
    try:
        return json.loads(open_fs(spark, folder).raw().read_text(name))
    except (ValueError, KeyError) as exc:
        raise RunbookError(f"{journal_uri} is not a rollback journal: {exc}") from None


def undo(ckpt: Checkpoint, journal_path: str = "", dry_run: bool = True, force: bool = False,
         quiet_minutes: float = QUIET_MINUTES) -> Outcome:
    """Put the checkpoint back as the journal's rollback found it, byte for byte.

    Files written since the rollback (a restarted query's offsets, commits and state) are moved
    aside into ``<backup>/undo-<time>/displaced`` first; then the moved files come back (checked
    against their SHA-256), and the backed-up metadata files are restored where they changed."""
    out = Outcome("undo", dry_run)
    uri = find_journal(ckpt, journal_path)
    journal = read_journal(ckpt.spark, uri)
    out.journal_path, out.backup_dir = uri, journal.get("backup_dir")
    if journal.get("checkpoint") != ckpt.root:
        raise RunbookError(f"journal {uri} is for {journal.get('checkpoint')}, not {ckpt.root}")
    if journal.get("status") == "undone":
        raise RunbookError(f"journal {uri} was already undone ({journal['undo']['at']}): nothing "
                           "to undo")
    raw = ckpt.fs.raw()
    backup = open_fs(ckpt.spark, journal["backup_dir"]).raw()
    manifest = {m["path"]: m for m in journal["manifest"]}
    moves = {m["path"]: m for m in journal["moves"]}
    copies = {m["path"]: m for m in journal["copies"]}
    current = raw.walk()
    # An undo stopped halfway already put some moved files back: they stay where they are.
    back = ({rel for rel, m in moves.items() if rel in current
             and current[rel].size == m["size"] and not backup.exists(m["moved_to"])}
            if journal.get("status") == "undo_started" else set())
    displace = [rel for rel, e in current.items() if rel not in back and (
                rel not in manifest or rel in moves or e.size != manifest[rel]["size"]
                or e.modified_ms != manifest[rel]["modified_ms"])]
    restore_copies = [rel for rel in copies if rel in displace or rel not in current]
    lost = [rel for rel in manifest if rel not in moves and rel not in copies
            and (rel not in current or rel in displace)]
    activity = check_activity(ckpt, quiet_minutes)
    out.lines.append(f"activity check: {activity.seen}")
    out.refused = cannot_modify(ckpt, "undo")
    if out.refused:
        pass
    elif activity.looks_active and not force:
        out.refused = ("the query looks active: " + "; ".join(activity.reasons) + ". Stop it, "
                       "wait, or pass force=True when you know it is stopped")
    elif lost and not force:
        out.refused = (f"{len(lost)} files of the checkpoint as the rollback found it changed or "
                       f"vanished since and have no backup (e.g. {lost[0]}); pass force=True to "
                       "undo the rest anyway")
    out.lines.append(f"journal {uri}: rollback to batch {journal['target_batch_id']} moved "
                     f"{len(moves)} files")
    out.lines.append(f"{len(displace)} files written since then go aside, {len(moves)} moved files "
                     f"come back, {len(restore_copies)} metadata files are restored from the copy")
    if lost:
        out.lines.append(f"{len(lost)} files of the original checkpoint changed or vanished and "
                         f"have no backup (e.g. {lost[0]}): undo cannot bring those back")
    if dry_run:
        out.lines.insert(0, "dry run: nothing changed")
        if out.refused:
            out.lines.append(f"and would be refused now: {out.refused}")
        return out
    if out.refused:
        out.lines.append(f"refused: {out.refused}")
        if cannot_modify(ckpt, "undo"):  # the exact plan, for the classic session
            out.lines += [f"  move aside {rel}" for rel in displace]
            out.lines += [f"  move back {m['moved_to']} to {rel}" for rel, m in moves.items()
                          if rel not in back]
            out.lines += [f"  restore {copies[rel]['copy']} to {rel}" for rel in restore_copies]
        return out
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    undo_dir = f"undo-{stamp}"
    undo_journal = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "displaced": [{"path": rel, "size": current[rel].size,
                                   "moved_to": f"{undo_dir}/displaced/{rel}"} for rel in displace]}
    _write_journal(backup, undo_journal, f"{undo_dir}/{JOURNAL_NAME}")
    journal["status"] = "undo_started"
    journal.setdefault("undo_attempts", []).append(f"{undo_dir}/{JOURNAL_NAME}")
    _write_journal(backup, journal)
    try:
        for item in undo_journal["displaced"]:
            raw.move_to(item["path"], backup, item["moved_to"])
        for rel, item in moves.items():
            if rel not in back:
                _restore(raw, backup, item, from_moved=True)
        for rel in restore_copies:
            _restore(raw, backup, copies[rel], from_moved=False)
    except Exception as exc:  # noqa: BLE001 - a file system error of any kind stops it here
        raise RunbookError(
            f"undo stopped halfway: {first_line(exc)}. Files written since the rollback are in "
            f"{backup.root}/{undo_dir}/displaced (listed in {undo_dir}/{JOURNAL_NAME}); the "
            f"moved files not yet back are in {backup.root}/moved. Fix the cause and run undo "
            f"again with journal_path={uri}: it resumes, keeping what is already back") from None
    after = raw.walk()
    same_files = {rel: e.size for rel, e in after.items()} == {
        rel: m["size"] for rel, m in manifest.items()}
    restored = list(moves.values()) + [copies[rel] for rel in restore_copies]
    same_bytes = all(raw.sha256(item["path"]) == item["sha256"] for item in restored)
    out.verified = same_files and same_bytes and not lost
    journal["status"] = "undone"
    journal["undo"] = {"at": undo_journal["at"], "journal": f"{undo_dir}/{JOURNAL_NAME}",
                       "verified": out.verified}
    backup.write_bytes(JOURNAL_NAME, (json.dumps(journal, indent=1) + "\n").encode("utf-8"),
                       overwrite=True)
    ckpt.refresh()
    out.applied = True
    out.lines.append(f"files written since the rollback are in {backup.root}/{undo_dir}/displaced")
    out.lines.append("verified: every file of the checkpoint before the rollback is back, same "
                     "size, and the restored ones have the same SHA-256" if out.verified else
                     "NOT verified: the checkpoint differs from the journal's manifest")
    return out


def _restore(raw: FS, backup: FS, item: dict, from_moved: bool) -> None:
    rel = item["path"]
    if raw.exists(rel):
        raise RunbookError(f"cannot restore {rel}: a file is in the way (undo stopped; nothing "
                           "was deleted)")
    if from_moved and backup.exists(item["moved_to"]) and \
            backup.sha256(item["moved_to"]) == item["sha256"]:
        backup.move_to(item["moved_to"], raw, rel)
        return
    backup.copy_to(item["copy"], raw, rel)


# -- demo helpers: faults, copies, comparisons -----------------------------------------------------
def inject_fault(ckpt: Checkpoint, fault: str, operator_id: int = -1, partition_id: int = 0) -> str:
    """Break a (demo) checkpoint the way storage incidents do; returns the path that is broken.

    Removed files are moved to ``<checkpoint>.removed-by-fault/`` (nothing is deleted). The
    ``.crc`` sidecars are left as they were, as after a real corruption."""
    if fault not in FAULTS:
        raise RunbookError(f"fault {fault!r} is not known: use one of {', '.join(FAULTS)}")
    raw = ckpt.fs.raw()
    lost = open_fs(ckpt.spark, ckpt.root + ".removed-by-fault").raw()
    ops = [op.operator_id for op in ckpt.operators()]
    op = ops[-1] if operator_id == -1 else operator_id
    store = ckpt.stores(op)[0].store_name
    files = [f for f in ckpt.state_files(op, store) if f.partition_id == partition_id]
    last = ckpt.last_committed_batch_id
    if fault in ("truncate_latest", "garbage_latest", "delete_latest"):
        newest = max(f.version for f in files)
        at_newest = [f for f in files if f.version == newest]
        target = next((f for f in at_newest if f.kind in SNAPSHOT_KINDS), at_newest[0]).path
    elif fault == "break_middle":
        target = _middle_file(ckpt, raw, files)
    elif fault == "drop_partition":
        target = _folder(op, partition_id, "default")
    elif fault == "drop_operator_metadata":
        target = f"state/{op}/_metadata/metadata"
    else:  # uncommitted_batch
        target = f"offsets/{last}"
    data = raw.read_bytes(target) if fault in ("truncate_latest", "garbage_latest",
                                                "break_middle") else b""
    if fault in ("truncate_latest", "break_middle"):
        raw.write_bytes(target, data[: len(data) // 2], overwrite=True)
    elif fault == "garbage_latest":
        noise = hashlib.sha256(target.encode()).digest() * (len(data) // 32 + 1)
        raw.write_bytes(target, noise[: len(data)], overwrite=True)
    elif fault == "delete_latest":
        raw.move_to(target, lost, target)
    elif fault == "drop_partition":
        raw.move_to(target, lost, target)
    elif fault == "drop_operator_metadata":
        raw.move_to(f"state/{op}/_metadata", lost, f"state/{op}/_metadata")
    else:
        raw.move_to(f"commits/{last}", lost, f"commits/{last}")
        if raw.exists(_sidecar(f"commits/{last}")):
            raw.move_to(_sidecar(f"commits/{last}"), lost, _sidecar(f"commits/{last}"))
    ckpt.refresh()
    return target


def _middle_file(ckpt: Checkpoint, raw: FS, files: list[StateFile]) -> str:
    """The file of the middle version that later versions still need: a delta or changelog, or
    for RocksDB without changelogs the SST file that version added and the newest zip still
    lists."""
    versions = sorted({f.version for f in files})
    middle = versions[len(versions) // 2]
    at_middle = {f.kind: f for f in files if f.version == middle}
    for kind in INCREMENTAL_KINDS:
        if kind in at_middle:
            return at_middle[kind].path
    zips = {f.version: f for f in files if f.kind == "zip"}
    folder = zips[middle].path.rsplit("/", 1)[0]
    before = ({n for n, _ in _read_zip_ssts(raw, zips[middle - 1].path) or []}
              if middle - 1 in zips else set())
    newest = {n for n, _ in _read_zip_ssts(raw, zips[max(zips)].path) or []}
    added = [n for n, _ in _read_zip_ssts(raw, zips[middle].path) or []
             if n not in before and n in newest]
    return f"{folder}/SSTs/{sorted(added)[0]}" if added else zips[middle].path


def copy_tree(spark, source: str, target: str) -> str:
    """Copy a folder byte for byte (sidecars included) through Hadoop; returns the target URI."""
    src = open_fs(spark, source).raw()
    dst = open_fs(spark, target).raw()
    if dst.exists() and dst.list():
        raise RunbookError(f"{dst.root} is not empty: pick a new folder to copy into")
    for rel in src.walk():
        src.copy_to(rel, dst, rel)
    return dst.root


def tree_checksums(spark, root: str) -> dict[str, str]:
    """SHA-256 of every file below ``root`` (sidecars included), by relative path."""
    raw = open_fs(spark, root).raw()
    return {rel: raw.sha256(rel) for rel in raw.walk()}


def state_rows(ckpt: Checkpoint, batch_id: int) -> dict[str, list]:
    """Every unit's rows at one batch, sorted, by ``<operator>/<store or variable>``."""
    out = {}
    for unit in load_units(ckpt):
        with spark_errors(f"reading {unit.label} at batch {batch_id}"):
            rows = read_unit(ckpt, unit, batch_id).collect()
        out[unit.label] = sorted(rows, key=repr)
    return out


def compare_state(a: Checkpoint, b: Checkpoint, batch_id: int) -> list[str]:
    """Row-for-row comparison of two checkpoints at one batch; one line per store."""
    left, right = state_rows(a, batch_id), state_rows(b, batch_id)
    lines = []
    for label in sorted(set(left) | set(right)):
        x, y = left.get(label), right.get(label)
        verdict = "equal" if x == y else "DIFFERENT"
        lines.append(f"{label} at batch {batch_id}: {len(x or [])} vs {len(y or [])} rows, "
                     f"{verdict}")
    return lines


def spark_error_text(exc: RunbookError) -> str:
    """``[CLASS] message`` of the Spark error under the wrapper (a failed query wraps its cause
    in ``STREAM_FAILED``), up to the SQLSTATE or the end of the line."""
    text = str(exc.spark_error) if exc.spark_error is not None else str(exc)
    for marker in re.finditer(r"\[([A-Z][A-Z0-9_]+(?:\.[A-Z0-9_]+)*)\] ", text):
        if marker.group(1) != "STREAM_FAILED":
            message = re.split(r" SQLSTATE|\n", text[marker.end():], maxsplit=1)[0]
            return f"[{marker.group(1)}] {message.strip()}"
    return first_line(exc)


def restart_without_state_folder(spark, demo, ckpt: Checkpoint) -> str:
    """The advice "delete the state folder and restart", tried on a copy of the checkpoint (the
    folder is moved aside, not deleted): what Spark answers, as one line."""
    copy = copy_tree(spark, ckpt.root, ckpt.root + "-state-deleted")
    raw = open_fs(spark, copy).raw()
    raw.move_to("state", open_fs(spark, copy + ".removed").raw(), "state")
    try:
        restart_demo(spark, demo, copy, 1)
    except RunbookError as exc:
        return f"the restart fails: {spark_error_text(exc)}"
    return "the restart worked"


def restart_demo(spark, demo, checkpoint_path: str, batches: int) -> list[dict]:
    """Restart the demo's query on a checkpoint for ``batches`` more micro-batches."""
    from .demo import run_demo_batches
    return run_demo_batches(spark, demo.workload, checkpoint_path, batches, demo.provider,
                            demo.rows_per_batch, demo.partitions)


# -- the summary -----------------------------------------------------------------------------------
def summarize(summary, diag: Diagnosis, plan: Plan, outcome: Outcome | None) -> None:
    """The runbook's keys and findings in the run summary."""
    summary.details.update({
        "last_committed_batch_id": diag.last_committed_batch_id,
        "last_good_batch_id": diag.last_good_batch_id,
        "broken": diag.broken(),
        "plan": plan.summary(),
        "applied": bool(outcome and outcome.applied),
        "backup_dir": outcome.backup_dir if outcome and outcome.applied else None,
        "journal_path": outcome.journal_path if outcome and outcome.applied else None,
        "loads": diag.loads,
    })
    if diag.state_does_not_load:
        summary.add_finding("critical", "state_does_not_load", diag.verdict())
    elif diag.reader_limits:
        summary.add_finding("warning", "state_unreadable_by_reader", diag.verdict())
    elif diag.nothing_broken:
        summary.add_finding("info", "nothing_broken", diag.verdict())
    else:
        summary.add_finding("warning" if any(not p.problem.startswith("offsets entry without")
                                             for p in diag.problems) else "info",
                            "broken_files", diag.verdict())
    if outcome and outcome.refused:
        summary.add_finding("warning", f"{outcome.mode}_refused", outcome.refused)
    if outcome and outcome.applied:
        summary.add_finding("info", f"{outcome.mode}_applied",
                            f"{outcome.mode} applied; journal {outcome.journal_path}")
        if outcome.verified is False:
            summary.add_finding("critical", f"{outcome.mode}_not_verified",
                                "; ".join(outcome.lines[-2:]))


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise RunbookError(f"mode={mode!r} is not valid: use 'diagnose', 'rollback' or 'undo'")
    return mode
