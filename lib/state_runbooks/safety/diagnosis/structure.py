"""What a checkpoint's files say, from one listing and no Spark job: the offsets and commits logs
(gaps, the batch in flight), every operator's partition folders (those the operator model says
hold state), and for each retained state version the files the pinned provider needs to load it
(HDFS-backed: newest ``.snapshot`` plus the ``.delta`` files after it; RocksDB: ``<v>.zip`` and the
SST files it lists; RocksDB with changelog checkpointing: newest ``.zip`` plus the ``.changelog``
files after it). Missing and empty files, zips that do not read, SST files of the wrong size and
files that do not match their ``.crc`` sidecar (local file systems only) are problems.

What costs a read per file is done only for the batches a verdict needs (:meth:`Structure.needs`):
the SST files a zip lists, and the bytes of a file compared with its sidecar. A production
checkpoint keeps 100 versions of 200 partitions; the newest batch needs a few of each.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from state_runbooks.common.spark_settings import SHUFFLE_PARTITIONS_CONF
from state_runbooks.core.checkpoint import DEFAULT_STORE, Checkpoint, StateFile
from state_runbooks.core.fs import FileEntry
from state_runbooks.core.fs.base import is_checksum_file, sidecar_of
from state_runbooks.core.operators import state_partitions
from state_runbooks.core.state_files import (  # noqa: F401
    INCREMENTAL_KINDS,
    INCREMENTAL_KINDS_SUFFIXES,
    SNAPSHOT_KINDS,
    store_folder,
    zip_ssts,
)
from state_runbooks.core.state_loads import operators_of

from .log_damage import Logs, file_kind, log_findings, missing_findings

_CRC_HEADER_BYTES = 8  # "crc\0" and the bytes per checksum
# Files Spark's RocksDB provider copies through the checksum layer when it loads a version: a
# changed byte fails the load with Hadoop's ChecksumException (tested). Changelogs and the
# HDFS-backed provider's files are read without that check, so their bytes are compared here.
CHECKED_BY_SPARK_LOAD = (".zip", ".sst")
_DEFAULT_BYTES_PER_CHECKSUM = 512


@dataclass
class Problem:
    """One broken thing, with the path relative to the checkpoint root."""
    path: str
    problem: str
    error_class: str | None = None
    first_batch_id: int | None = None  # the first batch whose state needs it (None: not state)
    # A damaged log or metadata file (log_damage): whether a restart fails on it (None: not such
    # a file), and the minimal repair: the files to move aside and the last committed batch after.
    critical: bool | None = None
    moves: tuple = ()
    target_batch_id: int | None = None
    damage: str = ""  # log_damage's word for it; "unknown": a format these runbooks do not read

    def summary(self) -> dict:
        return {"path": self.path, "problem": self.problem, "error_class": self.error_class}


# -- inventory and structure -----------------------------------------------------------------------
def provider_setup(ckpt: Checkpoint) -> str:
    if ckpt.provider_kind != "rocksdb":
        return ckpt.provider_kind
    return "rocksdb_changelog" if ckpt.changelog_checkpointing else "rocksdb"


class Structure:
    """What the files say, for every operator, store and partition (no Spark job)."""

    def __init__(self, ckpt: Checkpoint, inventory: dict[str, FileEntry]):
        self.ckpt, self.inventory = ckpt, inventory
        self.raw = ckpt.fs.raw()
        self.provider = provider_setup(ckpt)
        self.problems: dict[str, Problem] = {}
        self.bad_files: set[str] = set()  # present but damaged
        self.ssts: dict[str, list[tuple[str, int]] | None] = {}  # zip -> its SSTs
        self.sidecars_checked = 0  # files whose length was compared with their sidecar's
        self.content_checked: set[str] = set()  # files whose bytes were compared with it
        self.checked_by_spark_load: set[str] = set()  # of those, by a load of Spark's that worked
        self._first_needed: dict[str, int] = {}  # state file -> first batch whose state needs it
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
        ckpt, offsets, commits = self.ckpt, self.offsets, self.commits
        logs = Logs(ckpt.spark, self.raw, ckpt.root, self.inventory, offsets, commits,
                    ckpt.fs.has_checksum_layer)
        for f in missing_findings(logs) + log_findings(logs):
            self.problems[f["path"]] = Problem(f["path"], f["problem"], None, f["batch"],
                                               f["critical"], tuple(f["moves"]), f["target"],
                                               f["damage"])
        if ckpt.fs.has_checksum_layer:  # log_damage compared these files with their sidecars
            self.sidecars_checked += sum(1 for rel in self.inventory if file_kind(rel)
                                         and sidecar_of(rel) in self.inventory)
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
                       for rel in self.inventory) and metadata not in self.problems:
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
                        self.add(store_folder(op.operator_id, p, store.store_name),
                                 "no state files", 0)
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
        folder = store_folder(op, part, store)
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
            chains[v] = needed  # without the SSTs of its zips: needs() reads them
            for rel in needed:
                if rel not in self.inventory:
                    self.add(rel, f"missing: the state of batch {v - 1} needs it", v - 1)
        return floor

    def _listed_ssts(self, zip_rel: str) -> list[tuple[str, int]] | None:
        if zip_rel not in self.ssts:
            self.ssts[zip_rel] = zip_ssts(self.raw, zip_rel) if zip_rel in self.inventory else []
        return self.ssts[zip_rel]

    def _sst_paths(self, zip_rel: str, key: tuple) -> list[str]:
        folder = store_folder(key[0], key[2], key[1])
        listed = self._listed_ssts(zip_rel)
        if listed is None:
            self.bad_files.add(zip_rel)
            self.add(zip_rel, "not a readable zip: the RocksDB snapshot is damaged",
                     self._first_needed.get(zip_rel))
            return []
        paths = []
        for name, size in listed:
            rel = f"{folder}/SSTs/{name}"
            paths.append(rel)
            entry = self.inventory.get(rel)
            if entry is not None and entry.size != size:
                self.bad_files.add(rel)
                self.add(rel, f"{entry.size} bytes, but {zip_rel.rsplit('/', 1)[-1]} lists it with "
                         f"{size} bytes", self._first_batch_listing(rel, key))
        return paths

    def _first_batch_listing(self, sst_rel: str, key: tuple) -> int | None:
        """The first batch whose state needs an SST file: the oldest zip of its partition that
        lists it (read only for a file with a problem)."""
        name = sst_rel.rsplit("/", 1)[-1]
        for v, needed in sorted(self.chains.get(key, {}).items()):
            for rel in needed:
                if rel.endswith(".zip") and any(n == name for n, _ in
                                                self._listed_ssts(rel) or []):
                    return v - 1
        return None

    def needs(self, key: tuple, version: int, check_content: bool = True) -> list[str] | None:
        """The files that load ``version`` of one store partition (``key``: operator, store,
        partition), the SSTs its zips list included, each compared with its ``.crc`` sidecar
        (once); None when the partition has no such version."""
        needed = self.chains.get(key, {}).get(version)
        if needed is None:
            return None
        full = list(needed)
        for rel in needed:
            if rel.endswith(".zip") and rel in self.inventory:
                full.extend(self._sst_paths(rel, key))
        if check_content:
            self._check_content(full)
        return full

    def loaded_by_spark(self, unit, version: int) -> None:
        """Spark loaded ``version`` of a unit's store: the files it read through the checksum
        layer (``CHECKED_BY_SPARK_LOAD``) match their sidecars, so they are not read again here."""
        if not self.ckpt.fs.has_checksum_layer:
            return
        for p in self.on_disk(unit):
            for rel in self.needs((unit.operator_id, unit.files_store, p), version,
                                  check_content=False) or []:
                if rel.endswith(CHECKED_BY_SPARK_LOAD) and sidecar_of(rel) in self.inventory:
                    self.content_checked.add(rel)
                    self.checked_by_spark_load.add(rel)

    # content of every file ----------------------------------------------------------------------
    def _check_files(self) -> None:
        """Empty files, and files whose length does not match their ``.crc`` sidecar (file systems
        with one): no file is read. The bytes are compared with the sidecar by :meth:`needs`."""
        for chains in self.chains.values():
            for v, needed in chains.items():
                for rel in needed:
                    self._first_needed[rel] = min(self._first_needed.get(rel, v - 1), v - 1)
        checked_fs = self.ckpt.fs
        for rel, entry in self.inventory.items():
            if is_checksum_file(rel) or not rel.startswith(("offsets/", "commits/", "state/",
                                                        "metadata")) or file_kind(rel):
                continue  # log and metadata files: log_damage reads and checks them
            batch = self._first_needed.get(rel, log_batch_id(rel))
            if entry.size == 0:
                self.bad_files.add(rel)
                self.add(rel, "empty (0 bytes)", batch)
                continue
            sidecar = self.inventory.get(sidecar_of(rel))
            if sidecar is None or not checked_fs.has_checksum_layer:
                continue
            self.sidecars_checked += 1
            complaint = self._length_complaint(rel, entry, sidecar)
            if complaint:
                self.bad_files.add(rel)
                self.add(rel, complaint, batch if batch is not None or "/SSTs/" not in rel
                         else self._sst_key_batch(rel))

    def _sst_key_batch(self, rel: str) -> int | None:
        parts = rel.split("/")  # state/<op>/<partition>/[<store>/]SSTs/<name>
        store = parts[3] if len(parts) > 5 else DEFAULT_STORE
        return self._first_batch_listing(rel, (int(parts[1]), store, int(parts[2])))

    def _length_complaint(self, rel: str, entry: FileEntry, sidecar: FileEntry) -> str | None:
        per_sum = _DEFAULT_BYTES_PER_CHECKSUM
        sums = (sidecar.size - _CRC_HEADER_BYTES) // 4
        if sums != math.ceil(entry.size / per_sum):
            header = self.raw.read_bytes(sidecar_of(rel))[:_CRC_HEADER_BYTES]
            per_sum = int.from_bytes(header[4:8], "big") or per_sum
        if sums != math.ceil(entry.size / per_sum):
            low, high = (sums - 1) * per_sum + 1, sums * per_sum
            return (f"{entry.size} bytes, but its .crc sidecar was written for {low}..{high} "
                    "bytes: the file was cut short or grew after Spark wrote it")
        return None

    def _check_content(self, rels: list[str]) -> None:
        """Read each file (once) through the checksum layer: bytes that no longer match the
        sidecar are damage."""
        checked_fs = self.ckpt.fs
        if not checked_fs.has_checksum_layer:
            return
        todo = [rel for rel in dict.fromkeys(rels)
                if rel not in self.content_checked and rel not in self.bad_files
                and rel in self.inventory and sidecar_of(rel) in self.inventory]
        self.content_checked.update(todo)
        for rel in checked_fs.verify_checksums(todo):
            self.bad_files.add(rel)
            batch = self._first_needed.get(rel)
            if batch is None and "/SSTs/" in rel:
                batch = self._sst_key_batch(rel)
            self.add(rel, "its bytes do not match its .crc sidecar: the file changed after Spark "
                     "wrote it", batch)

    # verdicts per batch --------------------------------------------------------------------------
    def batch_files_ok(self, batch: int) -> tuple[bool, str]:
        """Whether every file the state of ``batch`` needs is there and undamaged."""
        version = batch + 1
        for op, parts in self.missing_partitions.items():
            if parts:
                return False, f"state/{op}/{parts[0]} is missing"
        needs = {key: self.needs(key, version, check_content=False) for key in self.chains}
        self._check_content([rel for needed in needs.values() for rel in needed or []])
        for key, needed in needs.items():
            if needed is None:
                return False, f"{store_folder(key[0], key[2], key[1])} has no version {version}"
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


def log_batch_id(rel: str) -> int | None:
    head, _, tail = rel.partition("/")
    return int(tail) if head in ("offsets", "commits") and tail.isdigit() else None
