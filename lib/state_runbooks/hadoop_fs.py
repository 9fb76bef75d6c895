"""File access through Hadoop's FileSystem API in the Spark JVM.

Going through the JVM instead of ``os``/``open`` means the same code reads and changes checkpoints on
``file:``, ``hdfs://``, ``s3a://``, ``abfss://``, ``gs://`` and ``dbfs:/``, with the credentials the
cluster already has. Paths are given relative to a root folder (usually the checkpoint root).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .errors import RunbookError, first_line

_CHUNK = 4 * 1024 * 1024


@dataclass(frozen=True)
class FileEntry:
    """One entry of a directory listing."""
    name: str
    is_dir: bool
    size: int
    modified_ms: int


class HadoopFS:
    """A Hadoop FileSystem rooted at one folder."""

    def __init__(self, spark, root: str):
        self._spark = spark
        self._jvm = spark._jvm
        path = self._jvm.org.apache.hadoop.fs.Path(root)
        try:
            self._fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
        except Exception as exc:  # noqa: BLE001 - Py4J wraps the Java exception
            message = first_line(exc)
            if "No FileSystem for scheme" in message:
                scheme = root.split(":", 1)[0]
                raise RunbookError(
                    f"cannot open {root}: this Spark has no Hadoop file system for scheme "
                    f"'{scheme}' (add its connector jar, e.g. hadoop-aws for s3a, to the cluster)"
                ) from None
            raise RunbookError(f"cannot open {root}: {message}") from None
        self.root = self._fs.makeQualified(path).toString().rstrip("/")

    # -- paths ----------------------------------------------------------------------------------
    def uri(self, rel: str = "") -> str:
        """The full URI of a path relative to the root."""
        rel = rel.strip("/")
        return f"{self.root}/{rel}" if rel else self.root

    def _path(self, rel: str):
        return self._jvm.org.apache.hadoop.fs.Path(self.uri(rel))

    # -- reading --------------------------------------------------------------------------------
    def exists(self, rel: str = "") -> bool:
        return bool(self._fs.exists(self._path(rel)))

    def is_dir(self, rel: str = "") -> bool:
        path = self._path(rel)
        return bool(self._fs.exists(path) and self._fs.getFileStatus(path).isDirectory())

    def status(self, rel: str) -> FileEntry:
        st = self._fs.getFileStatus(self._path(rel))
        return FileEntry(rel.rsplit("/", 1)[-1], bool(st.isDirectory()), int(st.getLen()),
                         int(st.getModificationTime()))

    def list(self, rel: str = "") -> list[FileEntry]:
        """Entries of a directory, sorted by name; an absent directory lists as empty."""
        path = self._path(rel)
        if not self._fs.exists(path):
            return []
        entries = [FileEntry(st.getPath().getName(), bool(st.isDirectory()), int(st.getLen()),
                             int(st.getModificationTime()))
                   for st in self._fs.listStatus(path)]
        return sorted(entries, key=lambda e: e.name)

    def read_bytes(self, rel: str) -> bytes:
        stream = self._fs.open(self._path(rel))
        try:
            return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def read_text(self, rel: str) -> str:
        return self.read_bytes(rel).decode("utf-8")

    def sha256(self, rel: str) -> str:
        """SHA-256 of a file's bytes, read in chunks so large state files do not fill memory."""
        digest = hashlib.sha256()
        stream = self._fs.open(self._path(rel))
        try:
            buffer = self._spark.sparkContext._gateway.new_array(self._jvm.byte, _CHUNK)
            while True:
                n = stream.read(buffer)
                if n <= 0:
                    break
                chunk = self._jvm.java.util.Arrays.copyOf(buffer, n)
                digest.update(bytes(chunk))
        finally:
            stream.close()
        return digest.hexdigest()

    # -- writing (used by repairs; callers journal every change) ---------------------------------
    def write_bytes(self, rel: str, data: bytes, overwrite: bool = False) -> None:
        stream = self._fs.create(self._path(rel), overwrite)
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()

    def mkdirs(self, rel: str) -> None:
        self._fs.mkdirs(self._path(rel))

    def rename(self, src_rel: str, dst_rel: str) -> None:
        """Move a file or folder; the destination's parent is created. Never overwrites."""
        dst = self._path(dst_rel)
        if self._fs.exists(dst):
            raise RunbookError(f"refusing to move {src_rel} onto existing {dst_rel}")
        self._fs.mkdirs(dst.getParent())
        if not self._fs.rename(self._path(src_rel), dst):
            raise RunbookError(f"could not move {self.uri(src_rel)} to {self.uri(dst_rel)}")
