"""File access through Hadoop's FileSystem API in the Spark JVM (classic sessions).

Going through the JVM instead of ``os``/``open`` means the same code reads and changes checkpoints on
``file:``, ``hdfs://``, ``s3a://``, ``abfss://``, ``gs://`` and ``dbfs:/``, with the credentials the
cluster already has. Paths are given relative to a root folder (usually the checkpoint root).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from state_runbooks.common.errors import RunbookError, first_line, root_cause
from state_runbooks.common.locations import refuse_own_folder

from ..spark_internals import hadoop_configuration, jvm, jvm_member
from .base import (  # noqa: F401
    FileEntry,
    TreeOperations,
    is_checksum_file,
    local_file_sha256,
    sidecar_of,
)
from .causes import is_permission_error, missing_connector, permission_message

# Hadoop 3's FileStatus.toString(): "<class>{path=<uri>; isDirectory=<bool>[; length=<n>; ...];
# modification_time=<ms>; ...}". Parsed by list() to list a folder in one JVM call.
_STATUS_TEXT = re.compile(r"^\w+\{path=(?P<path>.*?); isDirectory=(?P<dir>true|false)"
                          r"(?:; length=(?P<len>\d+))?.*?; modification_time=(?P<mtime>\d+);")
_CHECKING_THREADS = 4  # each check waits mostly on the JVM (tests/benchmarks/README.md)
_ONE_THREAD_UP_TO = 16  # files: a store partition's few need no threads of their own
_PATHS_KEPT = 256  # Hadoop Paths a root keeps (see HadoopFS._path)
_MAX_DEPTH = 12  # deeper than any checkpoint tree (state/<op>/<partition>/<store>/SSTs/<file>)


class HadoopFS(TreeOperations):
    """A Hadoop FileSystem rooted at one folder."""

    can_modify = True  # the JVM client writes, copies and renames on any Hadoop file system

    def __init__(self, spark, root: str):
        self._spark = spark
        self._java = jvm(spark)
        path = jvm_member(self._java, "org.apache.hadoop.fs.Path")(root)
        try:
            self._fs = path.getFileSystem(hadoop_configuration(spark))
        except Exception as exc:  # noqa: BLE001 - Py4J wraps the Java exception
            raise RunbookError(self._cause(root, exc) or f"cannot open {root}: {first_line(exc)}",
                               spark_error=exc) from None
        self.root = self._fs.makeQualified(path).toString().rstrip("/")
        self._made_paths: dict = {}  # shared with raw(): the same names (see _path)

    def _cause(self, path: str, exc: BaseException) -> str | None:
        """The one line for a missing connector or a permission denied, else None."""
        text = f"{first_line(exc)}\n{root_cause(exc) or ''}"
        try:
            version = str(self._java.org.apache.hadoop.util.VersionInfo.getVersion())
        except Exception:  # noqa: BLE001 - no version: the message says <hadoop version>
            version = None
        missing = missing_connector(path, text, version)
        if missing is not None:
            return missing
        if is_permission_error(text):
            return permission_message(path, *self.users())
        return None

    def users(self) -> tuple[str | None, str | None]:
        """Hadoop's current user (whom file systems check) and the JVM's ``user.name``."""
        try:
            hadoop = str(self._java.org.apache.hadoop.security.UserGroupInformation
                         .getCurrentUser().getShortUserName())
        except Exception:  # noqa: BLE001 - no Hadoop security classes: the JVM's user
            hadoop = None
        jvm = str(self._java.java.lang.System.getProperty("user.name"))
        return hadoop or jvm, jvm

    @contextlib.contextmanager
    def _access(self, rel: str) -> Iterator[None]:
        """Turn a permission denied (or a missing connector) while reading ``rel`` into its
        one-line RunbookError; other errors pass unchanged."""
        try:
            yield
        except RunbookError:
            raise
        except Exception as exc:
            cause = self._cause(self.uri(rel), exc)
            if cause is None:
                raise
            raise RunbookError(cause, spark_error=exc) from None

    # -- paths ----------------------------------------------------------------------------------
    def uri(self, rel: str = "") -> str:
        """The full URI of a path relative to the root."""
        rel = rel.strip("/")
        return f"{self.root}/{rel}" if rel else self.root

    def _path(self, rel: str):
        """The Hadoop ``Path`` of ``rel``, made once: a checkpoint's few log paths are asked for
        again and again (exists, then read), and each Path made and released costs two JVM round
        trips. A name, not a listing: keeping it trusts nothing about the files."""
        made = self._made_paths
        path = made.get(rel)
        if path is None:
            if len(made) >= _PATHS_KEPT:  # a copy of thousands of files asks each path once
                made.clear()
            path = made[rel] = jvm_member(self._java, "org.apache.hadoop.fs.Path")(self.uri(rel))
        return path

    def refresh(self) -> None:
        """Nothing cached here: every call asks the file system."""

    # -- reading --------------------------------------------------------------------------------
    def exists(self, rel: str = "") -> bool:
        return bool(self._fs.exists(self._path(rel)))

    def is_dir(self, rel: str = "") -> bool:
        path = self._path(rel)
        return bool(self._fs.exists(path) and self._fs.getFileStatus(path).isDirectory())

    def list(self, rel: str = "") -> list[FileEntry]:
        """Entries of a directory, sorted by name; an absent directory lists as empty. One JVM call
        per folder (its statuses read as text) instead of five per entry, unless the statuses do
        not read as expected: then entry by entry."""
        path = self._path(rel)
        if not self._fs.exists(path):
            return []
        with self._access(rel):
            statuses = self._fs.listStatus(path)
        entries = [FileEntry(full.rstrip("/").rsplit("/", 1)[-1], is_dir, size, mtime)
                   for full, is_dir, size, mtime in self._statuses(statuses)]
        return sorted(entries, key=lambda e: e.name)

    def _statuses(self, statuses) -> list[tuple[str, bool, int, int]]:
        """``(full path, is_dir, size, modified_ms)`` of Hadoop FileStatus objects: their text in
        one JVM call, or entry by entry when the text does not read as expected."""
        try:
            wrap = jvm_member(self._java, "scala.collection.immutable.ArraySeq.unsafeWrapArray")
            text = str(wrap(statuses).mkString("\n"))
            matches = [_STATUS_TEXT.match(line) for line in text.split("\n") if line]
        except Exception:  # noqa: BLE001 - another Hadoop or Scala: the portable way
            matches = []
        if matches and len(matches) == len(statuses) and all(matches):
            return [(m["path"], m["dir"] == "true", int(m["len"] or 0), int(m["mtime"]))
                    for m in matches]
        return [(str(st.getPath().toString()), bool(st.isDirectory()), int(st.getLen()),
                 int(st.getModificationTime())) for st in statuses]

    def read_bytes(self, rel: str) -> bytes:
        with self._access(rel):
            stream = self._fs.open(self._path(rel))
        try:
            to_bytes = jvm_member(self._java, "org.apache.commons.io.IOUtils.toByteArray")
            return bytes(to_bytes(stream))
        finally:
            stream.close()

    def read_text(self, rel: str) -> str:
        return self.read_bytes(rel).decode("utf-8")

    def sha256(self, rel: str) -> str:
        """SHA-256 of a file's bytes, read in chunks: by the operating system on the driver's
        own disk (no JVM call per file: a move compares tens of thousands), else in the JVM
        (commons-codec, shipped with Spark), so that the bytes never cross to Python."""
        local = self._local_folder()
        if local is not None:
            return local_file_sha256(os.path.join(local, rel))
        sha256_hex = jvm_member(self._java, "org.apache.commons.codec.digest.DigestUtils.sha256Hex")
        stream = self._fs.open(self._path(rel))
        try:
            return str(sha256_hex(stream))
        finally:
            stream.close()

    # -- writing (used by repairs; callers journal every change) ---------------------------------
    def write_bytes(self, rel: str, data: bytes, overwrite: bool = False) -> None:
        refuse_own_folder(self.uri(rel))
        stream = self._fs.create(self._path(rel), overwrite)
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()

    # -- additions for repairs that must be reversible (recovery) --------------------------------
    @property
    def has_checksum_layer(self) -> bool:
        """Whether this is Hadoop's client-side checksum file system (``file:``), which keeps a
        ``.<name>.crc`` sidecar next to every file, verifies it on read and hides it in listings."""
        if "_checksum_layer" not in self.__dict__:
            checksum_fs = jvm_member(self._java, "java.lang.Class.forName")(
                "org.apache.hadoop.fs.ChecksumFileSystem")
            self._checksum_layer = bool(checksum_fs.isInstance(self._fs))
        return self._checksum_layer

    def raw(self) -> HadoopFS:
        """The same root without the checksum layer: ``.crc`` sidecars are listed, copied and moved
        as plain files, and reads never verify them (so a corrupt file can be hashed and backed
        up byte for byte). Other file systems have no such layer: the view is the same."""
        view = object.__new__(HadoopFS)
        view.__dict__.update(self.__dict__)
        if self.has_checksum_layer:
            view._fs = self._fs.getRawFileSystem()
        view._checksum_layer = False
        return view

    def walk(self, rel: str = "") -> dict[str, FileEntry]:
        """Every file below ``rel`` (recursive), by path relative to the root; absent: empty.
        One ``listStatus`` call per depth level for all the folders found at the level above: a
        few JVM calls for a whole tree where listing folder by folder takes one per folder (a
        200-partition checkpoint has thousands). A brace glob (``{a,b,...}/*``) lists the same
        folders, slower (tests/benchmarks/README.md)."""
        base = rel.strip("/")
        path = self._path(base)
        if not self._fs.exists(path):
            return {}
        prefix = str(self._fs.getFileStatus(path).getPath().toString()).rstrip("/") + "/"
        out: dict[str, FileEntry] = {}
        folders = [base]
        for _ in range(_MAX_DEPTH):
            if any("\n" in f for f in folders):  # a name the joined paths would split
                return self._walk_folder_by_folder(base)
            try:
                found = self._statuses(self._fs.listStatus(self._paths(folders)))
            except Exception:  # noqa: BLE001 - a folder went away meanwhile: list what is there
                return self._walk_folder_by_folder(base)
            if any(not full.startswith(prefix) for full, *_ in found):
                return self._walk_folder_by_folder(base)  # paths written another way: be exact
            folders = []
            for full, is_dir, size, mtime in found:
                child = (f"{base}/" if base else "") + full[len(prefix):].rstrip("/")
                if is_dir:
                    folders.append(child)
                else:
                    out[child] = FileEntry(child, False, size, mtime)
            if not folders:
                return dict(sorted(out.items()))
        return self._walk_folder_by_folder(base)

    def _paths(self, rels: list[str]):
        """A Java ``Path[]`` of many paths in two JVM calls (not two per path): their URIs joined
        by newlines, split and turned into paths by Hadoop's ``StringUtils``."""
        strings = jvm_member(self._java, "org.apache.hadoop.util.StringUtils.getStrings")(
            "\n".join(map(self.uri, rels)), "\n")
        return jvm_member(self._java, "org.apache.hadoop.util.StringUtils.stringToPath")(strings)

    def _walk_folder_by_folder(self, base: str) -> dict[str, FileEntry]:
        out: dict[str, FileEntry] = {}
        pending = [base]
        while pending:
            folder = pending.pop()
            for entry in self.list(folder):
                child = f"{folder}/{entry.name}" if folder else entry.name
                if entry.is_dir:
                    pending.append(child)
                else:
                    out[child] = FileEntry(child, False, entry.size, entry.modified_ms)
        return dict(sorted(out.items()))

    def same_file_system(self, other: HadoopFS) -> bool:
        return str(self._fs.getUri().toString()) == str(other._fs.getUri().toString())

    def copy_to(self, src_rel: str, dst: HadoopFS, dst_rel: str) -> None:
        """Copy one file's bytes to ``dst`` (any file system); never overwrites."""
        refuse_own_folder(dst.uri(dst_rel))
        if self._local_copy(src_rel, dst, dst_rel):
            return
        target = dst._path(dst_rel)
        if dst._fs.exists(target):
            raise RunbookError(f"refusing to copy {src_rel} onto existing {dst.uri(dst_rel)}")
        dst._fs.mkdirs(target.getParent())
        copied = jvm_member(self._java, "org.apache.hadoop.fs.FileUtil.copy")(
            self._fs, self._path(src_rel), dst._fs, target, False, False,
            hadoop_configuration(self._spark))
        if not copied:
            raise RunbookError(f"could not copy {self.uri(src_rel)} to {dst.uri(dst_rel)}")

    def copy_files(self, rels: list[str], dst) -> dict[str, str]:
        """:meth:`TreeOperations.copy_files`; between two folders of the driver's disk by the
        operating system, each file read once (copied and hashed in one pass) on four threads:
        no JVM call per file (a production checkpoint holds tens of thousands)."""
        src, target = self.raw(), dst.raw()
        src_root, dst_root = src._local_folder(), target._local_folder()
        if src_root is None or dst_root is None:
            return super().copy_files(rels, dst)
        refuse_own_folder(target.root)

        def copy(rel: str) -> str:
            path = os.path.join(dst_root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            digest = hashlib.sha256()
            try:
                with open(os.path.join(src_root, rel), "rb") as reader, \
                        open(path, "xb") as writer:
                    for chunk in iter(lambda: reader.read(1 << 20), b""):
                        digest.update(chunk)
                        writer.write(chunk)
            except FileExistsError:
                raise RunbookError(f"refusing to copy {rel} onto existing "
                                   f"{target.uri(rel)}") from None
            return digest.hexdigest()
        with ThreadPoolExecutor(4) as pool:  # each copy waits on the disk, not on Python
            return dict(zip(rels, pool.map(copy, rels)))

    def _local_folder(self) -> str | None:
        """The root as an operating-system path when this is the driver's local file system."""
        if "_local_root" not in self.__dict__:
            local = str(self._fs.getUri().getScheme()) == "file"
            self._local_root = str(self._path("").toUri().getPath()) if local else None
        return self._local_root

    def _local_copy(self, src_rel: str, dst: HadoopFS, dst_rel: str) -> bool:
        """Copy between two folders of the driver's disk with the operating system, the ``.crc``
        sidecar along when both sides keep one; False when this is not such a copy. Without
        Hadoop's native library (pip's pyspark has none) each file Hadoop creates on a local disk
        forks ``chmod``: 5-9 ms a file against 0.2 ms here (08's copy of 2,328 files: 30 s)."""
        src_root, dst_root = self._local_folder(), dst._local_folder()
        if src_root is None or dst_root is None or \
                self.has_checksum_layer != dst.has_checksum_layer:
            return False
        self._os_copy(src_rel, dst, dst_rel, exclusive=True)
        if self.has_checksum_layer and os.path.exists(os.path.join(src_root, sidecar_of(src_rel))):
            # A file without a sidecar stays without: Hadoop reads it unchecked, as the original.
            self._os_copy(sidecar_of(src_rel), dst, sidecar_of(dst_rel), exclusive=False)
        return True

    def _os_copy(self, src_rel: str, dst: HadoopFS, dst_rel: str, exclusive: bool) -> None:
        target = os.path.join(dst._local_folder(), dst_rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        try:
            with open(os.path.join(self._local_folder(), src_rel), "rb") as reader, \
                    open(target, "xb" if exclusive else "wb") as writer:
                shutil.copyfileobj(reader, writer)
        except FileExistsError:
            raise RunbookError(f"refusing to copy {src_rel} onto existing "
                               f"{dst.uri(dst_rel)}") from None
        except OSError as exc:
            raise RunbookError(f"could not copy {self.uri(src_rel)} to {dst.uri(dst_rel)}: "
                               f"{exc.strerror or exc}") from None

    def move_to(self, src_rel: str, dst: HadoopFS, dst_rel: str) -> None:
        """Move a file or folder to a path under another root of the same file system (a rename:
        the bytes are not rewritten); the destination's parent is created. Never overwrites."""
        refuse_own_folder(dst.uri(dst_rel))
        if not self.same_file_system(dst):
            raise RunbookError(f"cannot move {self.uri(src_rel)} to {dst.uri(dst_rel)}: not the "
                               "same file system (pick a folder on the checkpoint's file system)")
        target = dst._path(dst_rel)
        if self._fs.exists(target):
            raise RunbookError(f"refusing to move {src_rel} onto existing {dst.uri(dst_rel)}")
        self._fs.mkdirs(target.getParent())
        if not self._fs.rename(self._path(src_rel), target):
            raise RunbookError(f"could not move {self.uri(src_rel)} to {dst.uri(dst_rel)}")

    def _delete_root(self) -> None:
        refuse_own_folder(self.root)
        self._fs.delete(self._path(""), True)

    def verify_checksum(self, rel: str) -> str | None:
        """Read a file through the checksum layer: None when its ``.crc`` sidecar matches (or there
        is no checksum layer), else the first line of Hadoop's complaint. The bytes stay in the JVM.

        Hadoop checks the chunks it reads and nothing more: a file cut short at a chunk boundary,
        or emptied, passes; compare the sidecar's length with the file's size for those."""
        if not self.has_checksum_layer:
            return None
        # Read to the end into nothing, then close: one call.
        copy_bytes = jvm_member(self._java, "org.apache.hadoop.io.IOUtils.copyBytes")
        nowhere = jvm_member(self._java, "org.apache.commons.io.output.NullOutputStream.INSTANCE")
        try:
            copy_bytes(self._fs.open(self._path(rel)), nowhere, 65536, True)
        except Exception as exc:  # noqa: BLE001 - Py4J wraps the Java exception
            return first_line(exc)
        return None

    def verify_checksums(self, rels: list[str]) -> dict[str, str]:
        """:meth:`verify_checksum` of many files, a few at a time (each call waits mostly on the
        JVM): Hadoop's complaint by path, for the files whose bytes do not match their sidecar."""
        if not self.has_checksum_layer or not rels:
            return {}
        first = self.verify_checksum(rels[0])  # looks the JVM members up before the threads
        if len(rels) <= _ONE_THREAD_UP_TO:
            complaints = [first, *map(self.verify_checksum, rels[1:])]
        else:
            with ThreadPoolExecutor(max_workers=_CHECKING_THREADS) as pool:
                complaints = [first, *pool.map(self.verify_checksum, rels[1:])]
        return {rel: c for rel, c in zip(rels, complaints) if c is not None}
