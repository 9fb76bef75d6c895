"""Checkpoint trees as the tests see them on the local disk: every file's SHA-256 (to prove a
change was undone byte for byte) and an age (to make a stopped query look stopped)."""
from __future__ import annotations

import hashlib
import os
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
