"""The file-system interface every checkpoint reader and writer goes through, its entry type, and
the rules of Hadoop's ``.crc`` sidecars.

Two implementations stand beside it: :class:`~state_runbooks.core.fs.hadoop.HadoopFS` (Hadoop's
FileSystem API in a classic session's JVM) and :class:`~state_runbooks.core.fs.connect.ConnectFS`
(DataFrame reads run by a Spark Connect server). Paths are relative to the root each is opened at.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from typing import Protocol

from state_runbooks.common.errors import RunbookError

# A folder the library makes (a scratch copy, a staging folder, a new checkpoint location) holds
# this file, which says so: only such a folder is ever removed, by ``remove_tree``.
MADE_MARK = "made-by-state-runbooks.json"


@dataclass(frozen=True)
class FileEntry:
    """One entry of a directory listing."""
    name: str
    is_dir: bool
    size: int
    modified_ms: int


def local_file_sha256(path: str) -> str:
    """SHA-256 of a file on this machine's disk, read in chunks by the operating system."""
    digest = hashlib.sha256()
    with open(path, "rb") as reader:
        for chunk in iter(lambda: reader.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def local_tree_checksums(folder: str) -> dict[str, str]:
    """SHA-256 of every file below a folder of this machine's disk (sidecars included), by path
    from it: what :meth:`TreeOperations.tree_checksums` gives, without a Spark session."""
    return {os.path.relpath(os.path.join(parent, name), folder).replace(os.sep, "/"):
            local_file_sha256(os.path.join(parent, name))
            for parent, _dirs, names in os.walk(folder) for name in names}


def sidecar_of(rel: str) -> str:
    """The ``.<name>.crc`` sidecar Hadoop's checksum layer keeps beside a file."""
    folder, _, name = rel.rpartition("/")
    return f"{folder}/.{name}.crc" if folder else f".{name}.crc"


def file_of_sidecar(rel: str) -> str:
    """The file a ``.<name>.crc`` sidecar belongs to (the inverse of :func:`sidecar_of`)."""
    folder, _, name = rel.rpartition("/")
    plain = name[1:-4]
    return f"{folder}/{plain}" if folder else plain


def is_checksum_file(rel: str) -> bool:
    """Whether a path names a ``.<name>.crc`` sidecar of Hadoop's checksum layer (the names
    its listings hide)."""
    name = rel.rsplit("/", 1)[-1]
    return name.startswith(".") and name.endswith(".crc")


class CheckpointFS(Protocol):
    """A file system rooted at one folder (usually a checkpoint's root)."""

    root: str
    can_modify: bool  # whether this client can write, copy and move files

    def uri(self, rel: str = "") -> str: ...
    def refresh(self) -> None: ...  # forget cached listings
    def exists(self, rel: str = "") -> bool: ...
    def is_dir(self, rel: str = "") -> bool: ...
    def list(self, rel: str = "") -> list[FileEntry]: ...
    def walk(self, rel: str = "") -> dict[str, FileEntry]: ...  # every file below, by path
    def read_bytes(self, rel: str) -> bytes: ...
    def read_text(self, rel: str) -> str: ...
    def sha256(self, rel: str) -> str: ...
    def raw(self) -> "CheckpointFS": ...  # the same files without the checksum layer
    def verify_checksum(self, rel: str) -> str | None: ...
    def verify_checksums(self, rels: list[str]) -> dict[str, str]: ...
    def same_file_system(self, other: "CheckpointFS") -> bool: ...
    def write_bytes(self, rel: str, data: bytes, overwrite: bool = False) -> None: ...
    def copy_to(self, src_rel: str, dst: "CheckpointFS", dst_rel: str) -> None: ...
    def move_to(self, src_rel: str, dst: "CheckpointFS", dst_rel: str) -> None: ...
    # Whole folders (:class:`TreeOperations`).
    def tree_checksums(self, rel: str = "") -> dict[str, str]: ...
    def copy_tree(self, dst: "CheckpointFS") -> int: ...
    def copy_files(self, rels: list[str], dst: "CheckpointFS") -> dict[str, str]: ...
    def mark_made(self, purpose: str) -> None: ...
    def remove_tree(self) -> bool: ...


class TreeOperations:
    """Whole-folder operations, on each implementation's own primitives: the checksums of a tree,
    a tree copied byte for byte, and a folder the library made, marked when made and removed
    only with that mark (never a folder of the user's)."""

    def tree_checksums(self, rel: str = "") -> dict[str, str]:
        """SHA-256 of every file below ``rel`` (sidecars included), by path from the root."""
        raw = self.raw()
        return {path: raw.sha256(path) for path in raw.walk(rel)}

    def copy_tree(self, dst) -> int:
        """Every file below the root, byte for byte (sidecars included), to ``dst``'s root, which
        must be absent or empty; returns the number of files copied."""
        src, target = self.raw(), dst.raw()
        if target.exists() and target.list():
            raise RunbookError(f"{target.root} is not empty: pick a new folder to copy into")
        files = src.walk()
        for rel in files:
            src.copy_to(rel, target, rel)
        return len(files)

    def copy_files(self, rels: list[str], dst) -> dict[str, str]:
        """Copy each of ``rels`` byte for byte to the same path under ``dst`` (never over a
        file); returns the SHA-256 of every file as it was read for the copy, by path, so that
        the copy can be compared without reading the original again."""
        src, target = self.raw(), dst.raw()
        digests = {}
        for rel in rels:
            digests[rel] = src.sha256(rel)
            src.copy_to(rel, target, rel)
        return digests

    def mark_made(self, purpose: str) -> None:
        """Say in the root folder that the library made it, and what for."""
        text = json.dumps({"made_by": "spark-state-runbooks", "purpose": purpose,
                           "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        self.raw().write_bytes(MADE_MARK, (text + "\n").encode("utf-8"), overwrite=True)

    def remove_tree(self) -> bool:
        """Remove the root folder, which the library made (:meth:`mark_made`); True when it is
        gone. Any other folder is refused in one line, and nothing is removed."""
        raw = self.raw()
        if not raw.exists():
            return True
        if not raw.exists(MADE_MARK):
            raise RunbookError(f"refusing to remove {raw.root}: this library did not make it (no "
                               f"{MADE_MARK} in it); nothing was removed")
        self._delete_root()
        raw.refresh()
        return not raw.exists()


class WithoutChecksumLayer:
    """A file system whose reads check no ``.crc`` sidecars (Spark Connect's listing never shows
    them; files in memory keep none): the raw view is the same view, and nothing is verified."""

    has_checksum_layer = False

    def raw(self):
        """The same view: there is no checksum layer to step around."""
        return self

    def verify_checksum(self, rel: str) -> None:
        """Nothing to verify: no checksum layer."""
        return

    def verify_checksums(self, rels: list[str]) -> dict[str, str]:
        """Nothing to verify: no checksum layer."""
        return {}
