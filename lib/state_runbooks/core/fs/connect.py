"""Checkpoint file access for Spark Connect sessions, built on DataFrame reads.

A Connect client has no JVM, so Hadoop's FileSystem API is out of reach. Spark's ``binaryFile``
source, run on the server, lists files with their size and time (and reads their bytes on demand)
on any file system the server reaches. One recursive listing serves a whole folder tree; it is kept
until :meth:`ConnectFS.refresh`.

What Spark's listing hides, and so this class cannot see:

- names starting with ``.``: every ``.crc`` sidecar, even when named exactly. Nothing here can
  lean on sidecars (object stores have none either);
- below the folder listed, names starting with ``_`` other than ``_metadata*``. Spark writes one
  such folder into checkpoints, ``state/<op>/_stateSchema/``; it is listed separately.
- empty folders (a listing is a list of files).

Changing files needs Databricks' ``dbutils.fs`` (:attr:`can_modify`); elsewhere every change is
refused with a message saying to run that step on a classic session.
"""
from __future__ import annotations

import posixpath
import re

from state_runbooks.common.errors import (
    RunbookError,
    first_line,
    root_cause,
    spark_errors,
)
from state_runbooks.common.locations import refuse_own_folder
from state_runbooks.common.spark_settings import PARALLEL_DISCOVERY_CONF
from state_runbooks.session.spark_session import session_conf

from .base import FileEntry, TreeOperations, WithoutChecksumLayer
from .causes import is_permission_error, missing_connector, permission_message

# List on the driver: a checkpoint has a folder per partition, and past 32 folders Spark would
# otherwise list them in a distributed job, a job per listing (slower: tests/benchmarks/README.md).
LISTING_CONF = {PARALLEL_DISCOVERY_CONF: "1000000"}
# Folders Spark writes into a checkpoint whose names its own listing filters out (see above).
HIDDEN_CHECKPOINT_FOLDERS = ("state/*/_stateSchema",)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _dbutils(spark):
    """Databricks' ``dbutils`` when this runs on Databricks, else None."""
    try:
        import IPython
        shell = IPython.get_ipython()
        found = shell.user_ns.get("dbutils") if shell is not None else None
        if found is not None:
            return found
    except ImportError:
        pass
    try:
        from pyspark.dbutils import (
            DBUtils,  # only on Databricks runtimes and Databricks Connect
        )
        return DBUtils(spark)
    except Exception:  # noqa: BLE001 - not Databricks
        return None


class ConnectFS(WithoutChecksumLayer, TreeOperations):
    """Files below one root, listed and read through Spark Connect."""

    def __init__(self, spark, root: str):
        self._spark = spark
        self._given = str(root).rstrip("/") or "/"
        self._listings: dict[str, dict[str, FileEntry] | None] = {}  # rel -> files below it
        self._root: str | None = None
        self._dbutils = _dbutils(spark)

    # -- paths ----------------------------------------------------------------------------------
    @property
    def root(self) -> str:
        """The root as the server's file system names it (``/x`` is ``file:/x`` locally,
        ``dbfs:/x`` on Databricks), learned from the server's own listing of it."""
        if self._root is None:
            self._listing("")
        return self._root or self._given

    def uri(self, rel: str = "") -> str:
        rel = rel.strip("/")
        base = self._root or self._given
        return f"{base}/{rel}" if rel else base

    # -- listing --------------------------------------------------------------------------------
    def _list_below(self, path: str) -> dict[str, FileEntry] | None:
        """Every file below ``path`` (or the file itself): full path -> FileEntry; None if absent."""
        from pyspark.sql.connect import functions as F
        try:
            with spark_errors(f"listing {path}"), session_conf(self._spark, LISTING_CONF):
                rows = (self._spark.read.format("binaryFile")
                        .option("recursiveFileLookup", "true").load(path)
                        .select("path", "length",
                                F.unix_millis("modificationTime").alias("mtime"))
                        .collect())
        except RunbookError as exc:
            if exc.error_class == "PATH_NOT_FOUND":
                return None
            text = f"{exc}\n{root_cause(exc.spark_error) or ''}"
            cause = missing_connector(self._given, text)
            if cause is None and is_permission_error(text):
                cause = permission_message(path, None)
            if cause is not None:
                raise RunbookError(cause, spark_error=exc.spark_error,
                                   error_class=exc.error_class) from None
            raise
        return {r.path: FileEntry(r.path, False, int(r.length), int(r.mtime)) for r in rows}

    def _listing(self, rel: str) -> dict[str, FileEntry] | None:
        """Files below ``rel`` by path relative to the root (cached, and served from the cached
        listing of a folder above it when there is one); None when ``rel`` does not exist."""
        rel = rel.strip("/")
        for folder, files in self._listings.items():
            if files is not None and (folder == "" or rel == folder
                                      or rel.startswith(folder + "/")):
                if folder == rel:
                    return files
                prefix = rel + "/"
                below = {k: v for k, v in files.items() if k == rel or k.startswith(prefix)}
                return below or None
        base = posixpath.join(self._given, rel) if rel else self._given
        found = self._list_below(base)
        if found is None:
            self._listings[rel] = None
            return None
        files = self._relative(found, rel)
        if rel == "":
            for pattern in HIDDEN_CHECKPOINT_FOLDERS:
                extra = self._list_below(posixpath.join(self._given, pattern))
                files.update(self._relative(extra or {}, None))
        self._listings[rel] = files
        return files

    def _relative(self, found: dict, rel: str | None) -> dict[str, FileEntry]:
        """Full server paths -> paths relative to the root. The root's qualified form is learned
        from the first listing (the server names ``/x`` ``file:/x``)."""
        out = {}
        given_path = re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*:(//[^/]*)?", "", self._given)
        for full, entry in found.items():
            if self._root is None:
                idx = full.find(given_path)
                if idx < 0:
                    raise RunbookError(f"cannot place {full} below {self._given}: pass the "
                                       "checkpoint path as the server names it")
                self._root = full[: idx + len(given_path)].rstrip("/")
            if not full.startswith(self._root):
                continue
            name = full[len(self._root):].strip("/")
            out[name] = FileEntry(name, False, entry.size, entry.modified_ms)
        return out

    def refresh(self) -> None:
        """Forget cached listings (after files changed)."""
        self._listings.clear()

    def exists(self, rel: str = "") -> bool:
        return self._listing(rel) is not None

    def is_dir(self, rel: str = "") -> bool:
        files = self._listing(rel)
        return files is not None and rel.strip("/") not in files

    def list(self, rel: str = "") -> list[FileEntry]:
        """Entries directly below ``rel`` (folders implied by the files below them), by name."""
        rel = rel.strip("/")
        files = self._listing(rel)
        if not files or rel in files:
            return []
        prefix = rel + "/" if rel else ""
        entries: dict[str, FileEntry] = {}
        for path, entry in files.items():
            head, _, rest = path[len(prefix):].partition("/")
            if rest:
                entries.setdefault(head, FileEntry(head, True, 0, 0))
            else:
                entries[head] = FileEntry(head, False, entry.size, entry.modified_ms)
        return sorted(entries.values(), key=lambda e: e.name)

    def walk(self, rel: str = "") -> dict[str, FileEntry]:
        """Every file below ``rel``, by path relative to the root; absent: empty."""
        return dict(sorted((self._listing(rel) or {}).items()))

    # -- reading --------------------------------------------------------------------------------
    def _content(self, rel: str, column):
        if not self.exists(rel) or self.is_dir(rel):
            raise RunbookError(f"{self.uri(rel)} is not a file")
        with spark_errors(f"reading {self.uri(rel)}"):
            rows = (self._spark.read.format("binaryFile").load(self.uri(rel))
                    .select(column.alias("out")).collect())
        if not rows:
            raise RunbookError(f"{self.uri(rel)} could not be read")
        return rows[0].out

    def read_bytes(self, rel: str) -> bytes:
        from pyspark.sql.connect import functions as F
        return bytes(self._content(rel, F.col("content")))

    def read_text(self, rel: str) -> str:
        return self.read_bytes(rel).decode("utf-8")

    def sha256(self, rel: str) -> str:
        """SHA-256 of a file's bytes, computed on the server: the bytes never cross the wire."""
        from pyspark.sql.connect import functions as F
        return self._content(rel, F.sha2(F.col("content"), 256))

    def same_file_system(self, other) -> bool:
        return _file_system(self.root) == _file_system(other.root)

    # -- changing files: Databricks' dbutils.fs only ----------------------------------------------
    @property
    def can_modify(self) -> bool:
        return self._dbutils is not None

    def _require_dbutils(self, action: str):
        if self._dbutils is None:
            raise RunbookError(f"cannot {action} over Spark Connect outside Databricks (no "
                               "dbutils.fs): run this step on a classic session (spark_master "
                               "local[N], spark://, yarn) that reaches the same file system")
        return self._dbutils

    def write_bytes(self, rel: str, data: bytes, overwrite: bool = False) -> None:
        refuse_own_folder(self.uri(rel))
        dbutils = self._require_dbutils(f"write {self.uri(rel)}")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise RunbookError(f"cannot write binary data to {self.uri(rel)} with dbutils.fs.put: "
                               "run this step on a classic session") from None
        dbutils.fs.put(self.uri(rel), text, overwrite)
        self.refresh()

    def copy_to(self, src_rel: str, dst, dst_rel: str) -> None:
        refuse_own_folder(dst.uri(dst_rel))
        dbutils = self._require_dbutils(f"copy {self.uri(src_rel)}")
        if dst.exists(dst_rel):
            raise RunbookError(f"refusing to copy {src_rel} onto existing {dst.uri(dst_rel)}")
        try:
            dbutils.fs.cp(self.uri(src_rel), dst.uri(dst_rel))
        except Exception as exc:  # noqa: BLE001 - dbutils raises many types
            raise RunbookError(f"could not copy {self.uri(src_rel)} to {dst.uri(dst_rel)}: "
                               f"{first_line(exc)}") from None
        dst.refresh()

    def move_to(self, src_rel: str, dst, dst_rel: str) -> None:
        refuse_own_folder(dst.uri(dst_rel))
        dbutils = self._require_dbutils(f"move {self.uri(src_rel)}")
        if dst.exists(dst_rel):
            raise RunbookError(f"refusing to move {src_rel} onto existing {dst.uri(dst_rel)}")
        try:
            dbutils.fs.mv(self.uri(src_rel), dst.uri(dst_rel), True)
        except Exception as exc:  # noqa: BLE001 - dbutils raises many types
            raise RunbookError(f"could not move {self.uri(src_rel)} to {dst.uri(dst_rel)}: "
                               f"{first_line(exc)}") from None
        self.refresh()
        dst.refresh()


    def _delete_root(self) -> None:
        refuse_own_folder(self.root)
        dbutils = self._require_dbutils(f"remove {self.root}")
        dbutils.fs.rm(self.root, True)
        self.refresh()


def _file_system(uri: str) -> str:
    """``scheme://authority`` of a URI (``file:`` for local paths)."""
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*:)(//[^/]*)?", uri)
    return (match.group(1) + (match.group(2) or "")) if match else "file:"
