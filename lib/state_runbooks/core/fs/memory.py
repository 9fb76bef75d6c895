"""Checkpoint files held in memory: the third implementation of the file-system interface, beside
Hadoop's and Spark Connect's, for running the change procedure and the runbooks' file logic
without Spark.

:class:`MemoryFiles` is a whole file system: files (bytes and a modification time) and folders by
path, and a clock. :class:`MemoryFS` is that file system rooted at one folder, with the semantics
of Hadoop's FileSystem that the safety layer relies on: folders stay when their files move away,
a move is a rename that keeps the file's time, a copy or a write stamps the time of the clock,
nothing is ever overwritten unless asked, and every listing is read afresh. There is no checksum
layer (as on an object store): a file has no ``.crc`` sidecar unless one is written.

Pass a ``MemoryFiles`` where a Spark session is expected (``open_fs(files, root)``,
``Checkpoint(files, root)``): it opens its own roots. Each write, copy and move is reported to
``on_change`` (a test's live writer, for instance), after it is done.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Callable

from state_runbooks.common.errors import RunbookError

from .base import FileEntry, TreeOperations, WithoutChecksumLayer

SCHEME = "mem:"


@dataclass
class _File:
    data: bytes
    modified_ms: int


class MemoryFiles:
    """A file system in memory: files and folders by absolute path (``/a/b``), and a clock.

    ``now_ms``: the clock's start (default: the real time now). Each write, copy and folder made
    stamps the clock's time and advances it 1 ms, so that two writes never share a time; set it
    or advance it (:meth:`advance`) to make files look old or new to the activity guard."""

    def __init__(self, now_ms: int | None = None):
        self.now_ms = int(time.time() * 1000) if now_ms is None else int(now_ms)
        self.files: dict[str, _File] = {}
        self.folders: dict[str, int] = {"/": self.now_ms}  # path -> modified ms
        # Called as on_change(operation, uri) after each write, copy or move ("write", "copy",
        # "move"), with the URI written to.
        self.on_change: Callable[[str, str], None] | None = None

    def advance(self, ms: int) -> None:
        """Move the clock forward (a negative ``ms`` moves it back)."""
        self.now_ms += int(ms)

    def open(self, root: str) -> MemoryFS:
        """This file system rooted at ``root`` (``mem:/a/b`` or ``/a/b``)."""
        return MemoryFS(self, root)

    # -- the primitives every root shares ---------------------------------------------------------
    def _tick(self) -> int:
        stamp = self.now_ms
        self.now_ms += 1
        return stamp

    def _mkdirs(self, path: str) -> None:
        if path in self.files:
            raise RunbookError(f"{SCHEME}{path} is a file, not a folder")
        parent = _parent(path)
        if parent is not None and parent not in self.folders:
            self._mkdirs(parent)
        self.folders.setdefault(path, self._tick())

    def _below(self, path: str) -> tuple[list[str], list[str]]:
        """Files and folders at ``path`` and below it."""
        prefix = path.rstrip("/") + "/"
        return ([p for p in self.files if p == path or p.startswith(prefix)],
                [p for p in self.folders if p == path or p.startswith(prefix)])

    def _report(self, operation: str, path: str) -> None:
        if self.on_change is not None:
            self.on_change(operation, SCHEME + path)


def _parent(path: str) -> str | None:
    if path == "/":
        return None
    head = path.rsplit("/", 1)[0]
    return head or "/"


def _path_of(root: str) -> str:
    """The absolute path of a root (``mem:/a/b/`` -> ``/a/b``)."""
    text = str(root).strip()
    text = (text[len(SCHEME):] if text.startswith(SCHEME) else text) or "/"
    if not text.startswith("/"):
        raise RunbookError(f"{root} is not a path of the memory file system (mem:/<path>)")
    return "/" + "/".join(p for p in text.split("/") if p)


class MemoryFS(WithoutChecksumLayer, TreeOperations):
    """A :class:`MemoryFiles` file system rooted at one folder."""

    can_modify = True

    def __init__(self, files: MemoryFiles, root: str):
        self.files = files
        self._path_root = _path_of(root)
        self.root = SCHEME + self._path_root

    # -- paths ----------------------------------------------------------------------------------
    def uri(self, rel: str = "") -> str:
        rel = rel.strip("/")
        return f"{self.root.rstrip('/')}/{rel}" if rel else self.root

    def _abs(self, rel: str) -> str:
        rel = rel.strip("/")
        if not rel:
            return self._path_root
        return f"{self._path_root.rstrip('/')}/{rel}"

    def refresh(self) -> None:
        """Nothing cached here: every call reads the files as they are."""

    # -- reading --------------------------------------------------------------------------------
    def exists(self, rel: str = "") -> bool:
        path = self._abs(rel)
        return path in self.files.files or path in self.files.folders

    def is_dir(self, rel: str = "") -> bool:
        return self._abs(rel) in self.files.folders

    def _entry(self, path: str, name: str) -> FileEntry:
        if path in self.files.folders:
            return FileEntry(name, True, 0, self.files.folders[path])
        f = self.files.files[path]
        return FileEntry(name, False, len(f.data), f.modified_ms)

    def list(self, rel: str = "") -> list[FileEntry]:
        """Entries directly below a folder, by name (a file lists as itself, as in Hadoop); an
        absent path lists as empty."""
        path = self._abs(rel)
        if path in self.files.files:
            return [self._entry(path, path.rsplit("/", 1)[-1])]
        if path not in self.files.folders:
            return []
        prefix = path.rstrip("/") + "/"
        names = {p[len(prefix):] for p in [*self.files.files, *self.files.folders]
                 if p.startswith(prefix) and "/" not in p[len(prefix):]}
        return [self._entry(prefix + name, name) for name in sorted(names)]

    def walk(self, rel: str = "") -> dict[str, FileEntry]:
        """Every file below ``rel``, by path relative to the root; absent: empty."""
        path, base = self._abs(rel), rel.strip("/")
        if path in self.files.files:
            return {base: self._entry(path, base)}
        if path not in self.files.folders:
            return {}
        prefix = path.rstrip("/") + "/"
        out = {}
        for full in self.files.files:
            if full.startswith(prefix):
                child = (f"{base}/" if base else "") + full[len(prefix):]
                out[child] = self._entry(full, child)
        return dict(sorted(out.items()))

    def read_bytes(self, rel: str) -> bytes:
        path = self._abs(rel)
        if path not in self.files.files:
            raise RunbookError(f"{self.uri(rel)} is not a file")
        return self.files.files[path].data

    def read_text(self, rel: str) -> str:
        return self.read_bytes(rel).decode("utf-8")

    def sha256(self, rel: str) -> str:
        return hashlib.sha256(self.read_bytes(rel)).hexdigest()

    def same_file_system(self, other) -> bool:
        return isinstance(other, MemoryFS) and other.files is self.files

    # -- writing --------------------------------------------------------------------------------
    def write_bytes(self, rel: str, data: bytes, overwrite: bool = False) -> None:
        path = self._abs(rel)
        if path in self.files.folders:
            raise RunbookError(f"cannot write {self.uri(rel)}: it is a folder")
        if path in self.files.files and not overwrite:
            raise RunbookError(f"cannot write {self.uri(rel)}: the file exists")
        self.files._mkdirs(_parent(path))
        self.files.files[path] = _File(bytes(data), self.files._tick())
        self.files._report("write", path)

    def copy_to(self, src_rel: str, dst, dst_rel: str) -> None:
        """Copy one file's bytes to ``dst`` (any file system); never overwrites."""
        if dst.exists(dst_rel):
            raise RunbookError(f"refusing to copy {src_rel} onto existing {dst.uri(dst_rel)}")
        dst.write_bytes(dst_rel, self.read_bytes(src_rel))
        if not isinstance(dst, MemoryFS):
            self.files._report("copy", dst.uri(dst_rel))

    def move_to(self, src_rel: str, dst, dst_rel: str) -> None:
        """Move a file or folder to a path under another root of the same file system (a rename:
        the times stay); the destination's parent is created. Never overwrites."""
        if not self.same_file_system(dst):
            raise RunbookError(f"cannot move {self.uri(src_rel)} to {dst.uri(dst_rel)}: not the "
                               "same file system (pick a folder on the checkpoint's file system)")
        source, target = self._abs(src_rel), dst._abs(dst_rel)
        if dst.exists(dst_rel):
            raise RunbookError(f"refusing to move {src_rel} onto existing {dst.uri(dst_rel)}")
        if not self.exists(src_rel) or target.startswith(source.rstrip("/") + "/"):
            raise RunbookError(f"could not move {self.uri(src_rel)} to {dst.uri(dst_rel)}")
        store = self.files
        store._mkdirs(_parent(target))
        files, folders = store._below(source)
        for path in files:
            store.files[target + path[len(source):]] = store.files.pop(path)
        for path in sorted(folders):
            store.folders[target + path[len(source):]] = store.folders.pop(path)
        store._report("move", target)

    def _delete_root(self) -> None:
        files, folders = self.files._below(self._path_root)
        for path in files:
            del self.files.files[path]
        for path in folders:
            if path != "/":
                del self.files.folders[path]
