"""Checkpoint trees as the tests see them on the local disk: every file's SHA-256 (to prove a
change was undone byte for byte), an age (to make a stopped query look stopped), and the state
of a run that was never broken (to compare a repaired one with)."""
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


def clean_rows(spark, run, further, last: int) -> dict:
    """The state rows of every store of a never-broken demo ``run`` at its ``last`` batch and,
    run one batch further in a copy at ``further``, at the next."""
    from state_runbooks.core.checkpoint import Checkpoint
    from state_runbooks.demos import faults

    shutil.copytree(run.checkpoint_path, further)
    faults.restart_demo(spark, run, str(further), 1)
    return {last: faults.state_rows(Checkpoint(spark, run.checkpoint_path), last),
            last + 1: faults.state_rows(Checkpoint(spark, str(further)), last + 1)}
