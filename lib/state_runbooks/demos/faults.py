"""Demo and test helpers: break a checkpoint the way storage incidents do, copy and checksum
folders, compare state row for row, restart a demo query, try "delete the state folder and
restart".
"""
from __future__ import annotations

import hashlib

from state_runbooks.common.errors import RunbookError, spark_error_text
from state_runbooks.core.checkpoint import DEFAULT_STORE, Checkpoint, StateFile
from state_runbooks.core.fs import copy_tree, open_fs
from state_runbooks.core.fs.base import sidecar_of
from state_runbooks.core.state_files import (
    INCREMENTAL_KINDS,
    SNAPSHOT_KINDS,
    is_schema_file,
    store_folder,
    zip_ssts,
)

FAULTS = ("truncate_latest", "garbage_latest", "delete_latest", "break_middle", "drop_partition",
          "drop_operator_metadata", "uncommitted_batch")
# Damage to the logs and metadata files beside the state: "<file kind>:<damage>". A separate tuple,
# so that the state faults above keep their own test matrix.
LOG_FILE_KINDS = ("metadata", "offsets_latest", "commits_latest", "offsets_middle", "sources",
                  "operator_metadata", "state_schema")
LOG_DAMAGES = ("truncated", "garbage", "missing", "empty")
LOG_FAULTS = tuple(f"{kind}:{damage}" for kind in LOG_FILE_KINDS for damage in LOG_DAMAGES)


# -- demo helpers: faults, copies, comparisons -----------------------------------------------------
def inject_fault(ckpt: Checkpoint, fault: str, operator_id: int = -1, partition_id: int = 0) -> str:
    """Break a (demo) checkpoint the way storage incidents do; returns the path that is broken.

    Removed files are moved to ``<checkpoint>.removed-by-fault/`` (nothing is deleted). The
    ``.crc`` sidecars are left as they were, as after a real corruption."""
    if fault in LOG_FAULTS:
        return inject_log_fault(ckpt, *fault.split(":"))
    if fault not in FAULTS:
        raise RunbookError(f"fault {fault!r} is not known: use one of {', '.join(FAULTS)}, or "
                           f"<file kind>:<damage> ({', '.join(LOG_FILE_KINDS)}; "
                           f"{', '.join(LOG_DAMAGES)})")
    raw = ckpt.fs.raw()
    lost = open_fs(ckpt.spark, ckpt.root + ".removed-by-fault").raw()
    target = state_fault_target(ckpt, fault, operator_id, partition_id)
    last = ckpt.last_committed_batch_id
    data = raw.read_bytes(target) if fault in ("truncate_latest", "garbage_latest",
                                                "break_middle") else b""
    if fault in ("truncate_latest", "break_middle"):
        raw.write_bytes(target, data[: len(data) // 2], overwrite=True)
    elif fault == "garbage_latest":
        noise = hashlib.sha256(target.encode()).digest() * (len(data) // 32 + 1)
        raw.write_bytes(target, noise[: len(data)], overwrite=True)
    elif fault == "delete_latest":
        raw.move_to(target, lost, target)
    elif fault == "drop_partition":
        raw.move_to(target, lost, target)
    elif fault == "drop_operator_metadata":
        folder = target.rsplit("/", 1)[0]  # the operator's whole _metadata folder
        raw.move_to(folder, lost, folder)
    else:
        raw.move_to(f"commits/{last}", lost, f"commits/{last}")
        if raw.exists(sidecar_of(f"commits/{last}")):
            raw.move_to(sidecar_of(f"commits/{last}"), lost, sidecar_of(f"commits/{last}"))
    ckpt.refresh()
    return target


def state_fault_target(ckpt: Checkpoint, fault: str, operator_id: int = -1,
                       partition_id: int = 0) -> str:
    """The path a state fault breaks (relative to the checkpoint root), found read-only: the
    newest snapshot (else the newest file) of one partition, a middle file, a partition's folder,
    an operator's metadata, or the last batch's offsets entry."""
    raw = ckpt.fs.raw()
    ops = [op.operator_id for op in ckpt.operators()]
    op = ops[-1] if operator_id == -1 else operator_id
    store = ckpt.stores(op)[0].store_name
    files = [f for f in ckpt.state_files(op, store) if f.partition_id == partition_id]
    if fault in ("truncate_latest", "garbage_latest", "delete_latest"):
        newest = max(f.version for f in files)
        at_newest = [f for f in files if f.version == newest]
        return next((f for f in at_newest if f.kind in SNAPSHOT_KINDS), at_newest[0]).path
    if fault == "break_middle":
        return _middle_file(ckpt, raw, files)
    if fault == "drop_partition":
        return store_folder(op, partition_id, DEFAULT_STORE)
    if fault == "drop_operator_metadata":
        return f"state/{op}/_metadata/metadata"
    return f"offsets/{ckpt.last_committed_batch_id}"  # uncommitted_batch


def log_fault_target(ckpt: Checkpoint, kind: str) -> str:
    """The file a log fault of ``kind`` breaks (relative to the checkpoint root)."""
    raw = ckpt.fs.raw()
    if kind == "metadata":
        return "metadata"
    if kind in ("offsets_latest", "commits_latest", "offsets_middle"):
        folder = kind.split("_")[0]
        ids = ckpt.offset_batch_ids if folder == "offsets" else ckpt.commit_batch_ids
        if not ids:
            raise RunbookError(f"{ckpt.root} has no {folder} entry to break")
        # the middle: older than the two newest entries, which a restart reads
        return f"{folder}/{ids[-1] if kind.endswith('latest') else ids[(len(ids) - 1) // 2]}"
    if kind == "sources":
        if not raw.exists("sources/0/0"):
            raise RunbookError(f"{ckpt.root} has no sources/0/0: its source keeps no log there "
                               "(rate-micro-batch does not; a file source does)")
        return "sources/0/0"
    op = ckpt.operators()[-1].operator_id
    if kind == "operator_metadata":
        v2 = sorted((rel for rel in raw.walk(f"state/{op}/_metadata/v2")
                     if not rel.rsplit("/", 1)[-1].startswith(".")),
                    key=lambda rel: int(rel.rsplit("/", 1)[-1])) \
            if raw.is_dir(f"state/{op}/_metadata/v2") else []
        return v2[-1] if v2 else f"state/{op}/_metadata/metadata"
    if kind == "state_schema":
        schemas = sorted(rel for rel in raw.walk(f"state/{op}") if is_schema_file(rel))
        if not schemas:
            raise RunbookError(f"operator {op} of {ckpt.root} has no state schema file")
        return schemas[0]
    raise RunbookError(f"log file kind {kind!r} is not known: use one of "
                       f"{', '.join(LOG_FILE_KINDS)}")


def inject_log_fault(ckpt: Checkpoint, kind: str, damage: str) -> str:
    """Damage one log or metadata file: cut it to half its bytes (``truncated``), overwrite it
    with as many bytes of noise (``garbage``), move it to ``<checkpoint>.removed-by-fault/``
    (``missing``) or empty it (``empty``). Its ``.crc`` sidecar stays as it was, as after a real
    corruption (a missing file's sidecar goes with it, as after a lost write). Returns the path."""
    if damage not in LOG_DAMAGES:
        raise RunbookError(f"damage {damage!r} is not known: use one of {', '.join(LOG_DAMAGES)}")
    target = log_fault_target(ckpt, kind)
    raw = ckpt.fs.raw()
    if damage == "missing":
        lost = open_fs(ckpt.spark, ckpt.root + ".removed-by-fault").raw()
        for rel in (target, sidecar_of(target)):
            if raw.exists(rel):
                raw.move_to(rel, lost, rel)
    else:
        data = raw.read_bytes(target)
        if damage == "truncated":
            data = data[: len(data) // 2]
        elif damage == "garbage":
            # Bytes that are neither JSON nor a version line, nor valid UTF-8 text.
            noise = b"\xff\xfe" + hashlib.sha256(target.encode()).digest() * (len(data) // 32 + 1)
            data = noise[: max(len(data), 8)]
        else:
            data = b""
        raw.write_bytes(target, data, overwrite=True)
    ckpt.refresh()
    return target


def _middle_file(ckpt: Checkpoint, raw, files: list[StateFile]) -> str:
    """The file of the middle version that later versions still need: a delta or changelog, or
    for RocksDB without changelogs the SST file that version added and the newest zip still
    lists."""
    versions = sorted({f.version for f in files})
    middle = versions[len(versions) // 2]
    at_middle = {f.kind: f for f in files if f.version == middle}
    for kind in INCREMENTAL_KINDS:
        if kind in at_middle:
            return at_middle[kind].path
    zips = {f.version: f for f in files if f.kind == "zip"}
    folder = zips[middle].path.rsplit("/", 1)[0]
    before = ({n for n, _ in zip_ssts(raw, zips[middle - 1].path) or []}
              if middle - 1 in zips else set())
    newest = {n for n, _ in zip_ssts(raw, zips[max(zips)].path) or []}
    added = [n for n, _ in zip_ssts(raw, zips[middle].path) or []
             if n not in before and n in newest]
    return f"{folder}/SSTs/{sorted(added)[0]}" if added else zips[middle].path


def restart_without_state_folder(spark, demo, ckpt: Checkpoint) -> str:
    """The advice "delete the state folder and restart", tried on a copy of the checkpoint (the
    folder is moved aside, not deleted): what Spark answers, as one line."""
    copy = copy_tree(spark, ckpt.root, ckpt.root + "-state-deleted")
    raw = open_fs(spark, copy).raw()
    raw.move_to("state", open_fs(spark, copy + ".removed").raw(), "state")
    try:
        restart_demo(spark, demo, copy, 1)
    except RunbookError as exc:
        return f"the restart fails: {spark_error_text(exc)}"
    return "the restart worked"


def restart_demo(spark, demo, checkpoint_path: str, batches: int) -> list[dict]:
    """Restart the demo's query on a checkpoint for ``batches`` more micro-batches."""
    from .checkpoints import run_demo_batches
    return run_demo_batches(spark, demo.workload, checkpoint_path, batches, demo.provider,
                            demo.rows_per_batch, demo.partitions, demo.extra_conf)
