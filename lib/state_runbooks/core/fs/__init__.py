"""Checkpoint file access for the session at hand: one interface, three implementations.

A classic session reaches files through Hadoop's FileSystem API in its JVM
(:class:`~state_runbooks.core.fs.hadoop.HadoopFS`). A Spark Connect session has no JVM on the client, so
it lists and reads files with DataFrame reads that run on the server
(:class:`~state_runbooks.core.fs.connect.ConnectFS`). Both see any file system the server can reach.
Files held in memory (:class:`~state_runbooks.core.fs.memory.MemoryFiles`), given where a session
is expected, open their own roots (:class:`~state_runbooks.core.fs.memory.MemoryFS`): the change
procedure and the runbooks' file logic run on them without Spark.
"""
from __future__ import annotations

from state_runbooks.session.spark_session import is_connect

from .aliases import state_reader_root  # noqa: F401 - the root Spark's state readers get
from .base import MADE_MARK, CheckpointFS, FileEntry  # noqa: F401 - the interface
from .hadoop import HadoopFS
from .memory import MemoryFiles


def open_fs(spark, root: str) -> CheckpointFS:
    """File access rooted at ``root`` for this session's kind (``spark``: a session, or files in
    memory, which open their own roots)."""
    if isinstance(spark, MemoryFiles):
        return spark.open(root)
    if is_connect(spark):
        from .connect import ConnectFS
        return ConnectFS(spark, root)
    return HadoopFS(spark, root)


def tree_checksums(spark, root: str) -> dict[str, str]:
    """SHA-256 of every file below ``root`` (sidecars included), by relative path."""
    return open_fs(spark, root).tree_checksums()


def copy_tree(spark, source: str, target: str) -> str:
    """Copy a folder byte for byte (sidecars included) to a new folder; returns its URI."""
    dst = open_fs(spark, target)
    open_fs(spark, source).copy_tree(dst)
    return dst.raw().root


def remove_tree(spark, root: str) -> bool:
    """Remove a folder the library made (see ``TreeOperations.remove_tree``)."""
    return open_fs(spark, root).remove_tree()
