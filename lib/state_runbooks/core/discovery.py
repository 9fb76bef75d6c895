"""The checkpoints under a folder: every folder that is a streaming checkpoint, and every one that
looks like one but is not whole, found by listing folder by folder (one prefix listing per folder
on an object store), never below a checkpoint's root.

A checkpoint's root holds ``offsets/`` and its ``metadata`` file or ``commits/`` (Spark writes
``metadata`` when a query first starts, ``offsets/<n>`` before batch ``n`` runs and ``commits/<n>``
after). A folder holding some of these and not enough is reported with what it lacks, not
skipped: a query that has never run a batch (``metadata`` alone), or a checkpoint whose logs were
deleted or only partly copied. Folders holding none are searched, down to ``max_depth``.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from state_runbooks.common.errors import RunbookError

MARKS = ("offsets", "commits", "metadata", "state")  # what only a checkpoint's root holds
DEFAULT_MAX_DEPTH = 6


@dataclass(frozen=True)
class Found:
    """A folder under the searched root: a checkpoint, or one that is not whole (``lacks``)."""
    path: str  # from the searched root ("" for the root itself)
    lacks: str = ""  # one line: what it holds and lacks; "" for a whole checkpoint

    @property
    def whole(self) -> bool:
        return not self.lacks


def _verdict(names: dict[str, bool]) -> str | None:
    """None: not a checkpoint at all; "": a whole one; else what it lacks."""
    held = [m for m in MARKS if m in names]
    if not held:
        return None
    if names.get("offsets") and ("metadata" in names or names.get("commits")):
        return ""
    if held == ["metadata"]:
        return "only its metadata file: the query started and never ran a batch"
    holds = ", ".join(f"{m}/" if names[m] else m for m in held)
    missing = "offsets/" if not names.get("offsets") else "its metadata file and commits/"
    return f"holds {holds} but not {missing}: its logs were deleted, or it was only partly copied"


def _chosen(path: str, include: list[str], exclude: list[str]) -> bool:
    return ((not include or any(fnmatch.fnmatch(path, g) for g in include))
            and not any(fnmatch.fnmatch(path, g) for g in exclude))


def discover(fs, max_depth: int = DEFAULT_MAX_DEPTH, include: list[str] | None = None,
             exclude: list[str] | None = None) -> list[Found]:
    """Every checkpoint, whole or not, at ``fs``'s root or below it down to ``max_depth`` levels,
    by path; ``include``/``exclude``: globs over the path from the root (``orders/*``)."""
    if not fs.is_dir():
        raise RunbookError(f"{fs.root} is not a folder (it does not exist, or is a file): give "
                           "the folder that holds your checkpoints")
    found, level = [], [""]
    for depth in range(max_depth + 1):
        below = []
        for folder in level:
            entries = fs.list(folder)
            verdict = _verdict({e.name: e.is_dir for e in entries})
            if verdict is not None:
                if _chosen(folder, include or [], exclude or []):
                    found.append(Found(folder, verdict))
                continue  # a checkpoint's own folders hold no other checkpoint
            if depth < max_depth:
                below += [f"{folder}/{e.name}".lstrip("/") for e in entries if e.is_dir]
        level = below
    return sorted(found, key=lambda f: f.path)

