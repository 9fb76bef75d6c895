"""A view of one state partition as a checkpoint of its own, so Spark's state readers read that
partition alone where they would read them all (its change feed has no partition option).

The view is a private temporary folder of links into the checkpoint: its offsets and commits logs
(their folders, so a reader lists the entries there are when it reads; state readers never write
them), the operator's metadata and schemas, and partition ``p``'s state files as partition 0
(beside partition 0's own ``_metadata``, where Spark keeps the store's schema). Spark's reader
reports every row of the view in partition 0: the caller knows it is ``p``. State files are linked
one by one, never their folders, so whatever a reader might write lands in the view, not in the
checkpoint; the links are removed when the view is closed.

Offered only where it holds: a checkpoint on this machine read by tasks on this machine (as for
:mod:`.aliases`), in checkpoint format 1 (format 2 names each partition's files by an id its commit
log keeps by partition number, which the view would renumber).
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from state_runbooks.session.spark_session import is_connect

from .aliases import local_folder, private_folder, remove_links, server_reads_alias, tasks_elsewhere

# Hundreds of links made and removed a trace: in memory where the system offers it; on disk,
# beside a running Spark, they took about 20 times longer (tests/benchmarks/README.md).
_MEMORY = "/dev/shm"


def _files_below(folder: str) -> Iterator[str]:
    """Every file below ``folder`` (links to files included), relative to it."""
    for here, _dirs, files in os.walk(folder):
        for name in files:
            yield os.path.relpath(os.path.join(here, name), folder)


def _is_metadata(rel: str) -> bool:
    return "_metadata" in rel.split(os.sep)


def link_partition(local: str, view: str, operator_id: int, partition: int) -> None:
    """Fill ``view`` with links: the logs, operator ``operator_id``'s own files, partition 0's
    ``_metadata`` and ``partition``'s state files as partition 0."""
    local, made = os.path.realpath(local), set()

    def link(source: str, target: str) -> None:
        folder = os.path.dirname(target)
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        os.symlink(source, target)

    def link_files(source: str, target: str, keep=lambda rel: True) -> None:
        for rel in _files_below(source):
            if keep(rel):
                link(os.path.join(source, rel), os.path.join(target, rel))

    link(os.path.join(local, "metadata"), os.path.join(view, "metadata"))
    for log in ("offsets", "commits"):  # listed by the reader when it reads: the live entries
        link(os.path.join(local, log), os.path.join(view, log))
    operator = os.path.join(local, "state", str(operator_id))
    mirror = os.path.join(view, "state", str(operator_id))
    for entry in os.listdir(operator):
        if not entry.isdigit():  # the operator's metadata and state schemas
            link_files(os.path.join(operator, entry), os.path.join(mirror, entry))
    link_files(os.path.join(operator, "0"), os.path.join(mirror, "0"), _is_metadata)
    link_files(os.path.join(operator, str(partition)), os.path.join(mirror, "0"),
               lambda rel: not _is_metadata(rel))


@contextlib.contextmanager
def partition_view(spark, fs, operator_id: int, partition: int,
                   format_version: int) -> Iterator[tuple[str | None, str]]:
    """``(root, "")``: a checkpoint root holding only ``partition`` of ``operator_id``, as
    partition 0; or ``(None, why)`` where no view serves. Closed (links removed) on exit."""
    local = local_folder(fs.root)
    why = ("the checkpoint is not on this machine's file system" if local is None
           else "its checkpoint format (2) names each partition's files by partition number"
           if format_version != 1 else tasks_elsewhere(spark))
    if why:
        yield None, why
        return
    folder = private_folder("state-runbooks-partition-", _MEMORY if os.access(_MEMORY, os.W_OK)
                            else None)
    try:
        view = os.path.join(folder, "checkpoint")
        link_partition(local, view, operator_id, partition)
        root = "file:" + view
        if is_connect(spark) and not server_reads_alias(spark, fs, root):
            yield None, "the Spark Connect server does not see this machine's files"
        else:
            yield root, ""
    finally:
        remove_links(folder)
