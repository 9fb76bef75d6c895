"""The file-system interface every checkpoint reader and writer goes through, its entry type, and
the rules of Hadoop's ``.crc`` sidecars.

Two implementations stand beside it: :class:`~state_runbooks.core.fs.hadoop.HadoopFS` (Hadoop's
FileSystem API in a classic session's JVM) and :class:`~state_runbooks.core.fs.connect.ConnectFS`
(DataFrame reads run by a Spark Connect server). Paths are relative to the root each is opened at.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class FileEntry:
    """One entry of a directory listing."""
    name: str
    is_dir: bool
    size: int
    modified_ms: int


def sidecar_of(rel: str) -> str:
    """The ``.<name>.crc`` sidecar Hadoop's checksum layer keeps beside a file."""
    folder, _, name = rel.rpartition("/")
    return f"{folder}/.{name}.crc" if folder else f".{name}.crc"


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
