"""Checkpoint file access for the session at hand: one interface, two implementations.

A classic session reaches files through Hadoop's FileSystem API in its JVM
(:class:`~state_runbooks.hadoop_fs.HadoopFS`). A Spark Connect session has no JVM on the client, so
it lists and reads files with DataFrame reads that run on the server
(:class:`~state_runbooks.connect_fs.ConnectFS`). Both see any file system the server can reach.
"""
from __future__ import annotations

from .hadoop_fs import FileEntry, HadoopFS  # noqa: F401 - FileEntry is part of this interface
from .session import is_connect


def open_fs(spark, root: str):
    """File access rooted at ``root`` for this session's kind."""
    if is_connect(spark):
        from .connect_fs import ConnectFS
        return ConnectFS(spark, root)
    return HadoopFS(spark, root)
