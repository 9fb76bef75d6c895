"""The folder Spark's state rewriter writes the migrated batch into, and, in place, how that batch
joins the checkpoint.

The rewriter takes the operators and state schemas of the state it writes from its write
location's operator metadata at the read batch, and its store settings from the offsets entry of
the batch it writes. So the migrated batch is always written into a folder of its own first: the
checkpoint's logs (up to the last committed batch), its query and source metadata, the changed
query's operator metadata and schemas as Spark's planning wrote them (v2 metadata at the read
batch and at the new one), and the new batch's offsets entry. The checkpoint itself is only read
while Spark writes.

- ``output_path``: that folder is the result, a checkpoint the changed query starts on.
- In place: a staging folder beside the checkpoint; once the batch is written and committed
  there, its new files move into the checkpoint (the operator metadata and schema files it
  replaces move aside into the backup first, never deleted), and the staging folder is removed.
"""
from __future__ import annotations

import uuid

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import open_fs
from state_runbooks.core.fs.base import is_checksum_file, sidecar_of
from state_runbooks.query.planning import copy_pointing_here, is_metadata_v2
from state_runbooks.safety import new_batch


def _v2_batch(rel: str) -> tuple[str, int] | None:
    """``state/<op>/_metadata/v2/<batch>`` as (its folder, its batch)."""
    folder, _, name = rel.rpartition("/")
    return (folder, int(name)) if is_metadata_v2(rel) and name.isdigit() else None


def prepare(ckpt: Checkpoint, target, inventory: dict, fresh_folder: str, batch_id: int,
            new_batch_id: int, offsets_entry: bytes) -> int:
    """Write into ``target`` (file access of an empty folder) what the rewriter reads there;
    returns the number of files written."""
    src = ckpt.fs.raw()
    carried = [rel for rel in new_batch.carried_files(inventory, batch_id)
               if not rel.startswith("state/")]
    for rel in carried:
        src.copy_to(rel, target, rel)
    fresh = open_fs(ckpt.spark, f"file:{fresh_folder}").raw()
    written = len(carried)
    for rel in fresh.walk("state"):
        v2 = _v2_batch(rel)
        if v2 is not None:  # Spark planned it as batch 0: the rewriter reads it at batch_id
            for batch in (batch_id, new_batch_id):
                copy_pointing_here(fresh, target, rel, f"{v2[0]}/{batch}")
                written += 1
        elif not (is_checksum_file(rel) and _v2_batch(_file_of(rel))):
            copy_pointing_here(fresh, target, rel)
            written += 1
    target.write_bytes(f"offsets/{new_batch_id}", offsets_entry)
    return written + 1


def _file_of(sidecar: str) -> str:
    folder, _, name = sidecar.rpartition("/")
    return f"{folder}/{name[1:-4]}"


def staging_folder(ckpt: Checkpoint):
    """A new folder beside the checkpoint (same file system: its files move in), marked as made
    here so that only it is ever removed."""
    staging = open_fs(ckpt.spark, f"{ckpt.root}.migrate-staging-{uuid.uuid4().hex[:8]}").raw()
    staging.mark_made("migrate_state: the migrated batch, before it joins the checkpoint")
    return staging


def adopt(ckpt: Checkpoint, staging, inventory: dict, batch_id: int, new_batch_id: int,
          replaced_dir: str) -> tuple[list[str], list[str]]:
    """Move the migrated batch from ``staging`` into the checkpoint: its state files and the
    changed query's metadata and schemas (v2 metadata of the new batch only, pointing into the
    checkpoint), then its offsets entry and commit last, which make the batch count. A file of
    the checkpoint in the way (the operator metadata and schema of a v1 operator) moves aside into
    ``replaced_dir`` first. Returns (the paths moved in, the paths replaced)."""
    dst = ckpt.fs.raw()
    aside = open_fs(ckpt.spark, replaced_dir).raw()
    files = staging.walk("state")
    moved, replaced = [], []
    for rel in sorted(files):
        v2 = _v2_batch(rel) or (_v2_batch(_file_of(rel)) if is_checksum_file(rel) else None)
        if v2 is not None:
            if not is_checksum_file(rel) and v2[1] == new_batch_id:
                copy_pointing_here(staging, dst, rel)
                moved.append(rel)
            continue
        if rel in inventory:
            dst.move_to(rel, aside, rel)
            replaced.append(rel)
        staging.move_to(rel, dst, rel)
        moved.append(rel)
    for log in (f"offsets/{new_batch_id}", f"commits/{new_batch_id}"):
        for rel in (sidecar_of(log), log):  # the entry last: it makes the batch count
            if staging.exists(rel):
                staging.move_to(rel, dst, rel)
                moved.append(rel)
    return moved, replaced
