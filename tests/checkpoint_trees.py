"""Checkpoint trees as the tests see them on the local disk: every file's SHA-256 (to prove a
change was undone byte for byte), an age (to make a stopped query look stopped), and the state
of a run that was never broken (to compare a repaired one with), and every store's rows as
Spark's own reader reads them."""
from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path


def tree_sha(root) -> dict[str, str]:
    """SHA-256 of every file below root, .crc sidecars included."""
    out = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            out[os.path.relpath(path, root)] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return out


def age(root, seconds_ago: float = 3600) -> None:
    """Make a checkpoint look like its query stopped an hour ago."""
    stamp = time.time() - seconds_ago
    for folder, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(folder, name), (stamp, stamp))


def clean_checkpoints(spark, run, further, last: int) -> dict[int, str]:
    """A never-broken demo ``run``'s checkpoint at its ``last`` batch and, run one batch further
    in a copy at ``further``, at the next: the references a repaired checkpoint is compared with."""
    from state_runbooks.demos import faults

    shutil.copytree(run.checkpoint_path, further)
    faults.restart_demo(spark, run, str(further), 1)
    return {last: run.checkpoint_path, last + 1: str(further)}


def state_differences(spark, ckpt, batch: int, reference: str) -> list[str]:
    """The stores of ``ckpt`` at ``batch`` whose rows (key, value and partition) differ from the
    same store of the checkpoint at ``reference``: empty when the state is the same."""
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.core.state_diff import WITH_PARTITION, diff_checkpoints

    diffs = diff_checkpoints(ckpt, Checkpoint(spark, reference), batch, batch, WITH_PARTITION)
    return [d.line("in the reference", f"at batch {batch}") for d in diffs if not d.equal]


def reader_rows(spark, path: str, columns=("key", "value")) -> dict:
    """Every store's (or state variable's) rows (``columns``, those its reader shows) at the last
    committed batch, sorted: read with Spark's reader here, the library only naming the units."""
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.core.operators import state_units
    ckpt = Checkpoint(spark, path)
    out = {}
    for unit in state_units(ckpt):
        reader = spark.read.format("statestore").option("operatorId", unit.operator_id)
        for name, value in unit.options.items():
            reader = reader.option(name, value)
        df = reader.load(ckpt.root)
        out[unit.label] = sorted(map(repr, df.select(*[c for c in columns if c in df.columns])
                                     .collect()))
    return out
