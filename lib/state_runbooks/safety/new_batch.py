"""The logs around a rewrite: the new batch's offsets entry (the provider it pins), the logs and
metadata a new location needs before Spark's rewriter can write there, the read-only staging
folder an HDFS-backed source is read through, the commit that ends the batch.

Spark's rewriter takes the store settings of the new state from the write location's offsets
entry for the new batch, the operators from its operator metadata and the state schemas from its
schema files: a new location gets all three (copied from the checkpoint, the offsets entry with
the new provider) before the call, and the new batch's commit after it.
"""
from __future__ import annotations

import contextlib
import re
import uuid

from state_runbooks.common.spark_settings import PROVIDER_CONF
from state_runbooks.core import offset_log
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import open_fs, remove_tree

# Files a new location needs besides offsets and commits: the query id, the sources' own logs,
# each operator's metadata and state schemas (with their .crc sidecars).
_CARRIED = re.compile(r"^(\.?metadata(\.crc)?|sources/.*|state/\d+/_metadata/.*"
                      r"|state/\d+/_stateSchema/.*|state/\d+/\d+/(.+/)?_metadata/.*)$")


def offsets_entry(ckpt: Checkpoint, batch_id: int, provider_class: str | None) -> bytes:
    """``offsets/<batch_id>`` as it is, with ``provider_class`` pinned (None: unchanged): the
    new batch reads no input (the same source offsets) and pins what the rewrite wrote with. Its
    format (1, or 2 with named sources) and every other pinned setting stay as Spark wrote them."""
    def pin(metadata: dict) -> dict:
        if provider_class:
            metadata["conf"] = {**metadata.get("conf", {}), PROVIDER_CONF: provider_class}
        return metadata
    return offset_log.with_metadata(ckpt.fs.read_bytes(f"offsets/{batch_id}"), pin)


def carried_files(inventory: dict, batch_id: int) -> list[str]:
    """What a new location gets from the checkpoint: the logs up to ``batch_id`` and the
    metadata files (sidecars included), no state file."""
    def log_entry(rel: str) -> bool:
        folder, _, name = rel.partition("/")
        name = name[1:-4] if name.startswith(".") and name.endswith(".crc") else name
        return folder in ("offsets", "commits") and name.isdigit() and int(name) <= batch_id
    return sorted(rel for rel in inventory if log_entry(rel) or _CARRIED.match(rel))


def prepare_new_location(ckpt: Checkpoint, dst, inventory: dict | None, batch_id: int,
                         new_batch: int, entry: bytes) -> int:
    """Copy the logs and metadata files to the new location ``dst`` (its file access) and write
    the new batch's offsets entry there; returns the number of files copied."""
    src = ckpt.fs.raw()
    files = carried_files(inventory if inventory is not None else src.walk(), batch_id)
    for rel in files:
        src.copy_to(rel, dst, rel)
    dst.write_bytes(f"offsets/{new_batch}", entry)
    return len(files)


def prepare_staging(ckpt: Checkpoint, inventory: dict | None, batch_id: int,
                    entry: bytes) -> str:
    """A folder beside the checkpoint holding only its metadata files and, as ``batch_id``, an
    offsets entry pinning RocksDB and the commit: where Spark's rewriter takes the state schema
    of an HDFS-backed source from (its own reader refuses that provider; the rows themselves are
    read from the checkpoint, see encoding). Nothing of the state is there or is read there."""
    staging = f"{ckpt.root}.rewrite-staging-{uuid.uuid4().hex[:8]}"
    src = ckpt.fs.raw()
    dst = open_fs(ckpt.spark, staging).raw()
    dst.mark_made("rewrite_state: a read-only staging folder, removed after the rewrite")
    for rel in inventory if inventory is not None else src.walk():
        if _CARRIED.match(rel) and not rel.startswith("sources/"):
            src.copy_to(rel, dst, rel)
    dst.write_bytes(f"offsets/{batch_id}", entry)
    src.copy_to(f"commits/{batch_id}", dst, f"commits/{batch_id}")
    return dst.root


def commit_new_batch(ckpt: Checkpoint, dst, batch_id: int, new_batch: int) -> None:
    """``commits/<new_batch>`` at ``dst`` (the checkpoint's or a new location's file access):
    the checkpoint's last commit as it is (the same next watermark), which ends the rewrite's
    batch."""
    ckpt.fs.raw().copy_to(f"commits/{batch_id}", dst, f"commits/{new_batch}")


@contextlib.contextmanager
def read_location(ckpt: Checkpoint, inventory: dict | None, batch_id: int, provider_before: str,
                  rocksdb_class: str):
    """Where Spark's rewriter reads the state of ``batch_id`` from: the checkpoint itself, or,
    for an HDFS-backed source (whose raw rows Spark's reader refuses), a staging folder that
    lends it the schemas (:func:`prepare_staging`), removed when the rewrite is over."""
    if provider_before != "hdfs":
        yield ckpt.root
        return
    staging = prepare_staging(ckpt, inventory, batch_id,
                              offsets_entry(ckpt, batch_id, rocksdb_class))
    try:
        yield staging
    finally:
        remove_tree(ckpt.spark, staging)
