"""A checkpoint as a newcomer first meets it: its folders, from one walk of its tree, and its
batches, from its logs (when each was planned and committed, the state version it wrote, the
watermark it applied and the one it recorded for the next batch)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.formatting import format_utc, id_ranges

from .checkpoint import Checkpoint
from .fs.base import is_checksum_file

# What each top-level entry is, as the outline names it.
# In the order a query writes them: the metadata at its first start, then per batch its offsets
# entry, its sources' logs, its state versions and last its commit.
ROLES = {"metadata": "the query's id, written at its first start",
         "offsets": "one entry per batch, written before it runs: what it reads, the watermark "
                    "it applies, the settings it pins",
         "sources": "each source's own log (a file source: the files it read)",
         "state": "per operator, per partition: the state store's versions",
         "commits": "one entry per batch, written after it ran: the watermark for the next"}
SHOWN_PARTITIONS = 1  # partitions of each operator drawn file by file; the rest in one line
# The newest batches the timeline reads: two log reads each (over Spark Connect, a Spark job
# each), and a production checkpoint retains 100.
TIMELINE_BATCHES = 20


@dataclass(frozen=True)
class OutlineLine:
    depth: int
    name: str  # a folder ends with "/"
    note: str  # what it holds, counted
    role: str  # the top-level entry it belongs to (a key of ROLES), or "other"


def _names(files: list[str]) -> str:
    """File names as few words: numbered ones as ranges, by suffix (``1..8 .delta; 5 .zip``)."""
    numbered: dict[str, list[int]] = {}
    other = []
    for name in files:
        m = re.fullmatch(r"(\d+)(\.[A-Za-z]+)?", name)
        if m:
            numbered.setdefault(m[2] or "", []).append(int(m[1]))
        else:
            other.append(name)
    parts = [f"{id_ranges(sorted(v))}{' ' + suffix if suffix else ''}"
             for suffix, v in sorted(numbered.items())]
    return "; ".join(parts + sorted(other))


def folder_outline(ckpt: Checkpoint) -> list[OutlineLine]:
    """Every folder of the checkpoint with the files it holds, in one walk (Hadoop's ``.crc``
    sidecars left out). Each operator's first partition is shown file by file; its other
    partitions in one line, with what each holds when they hold alike."""
    tree: dict = {}
    for rel in ckpt.fs.walk(""):
        if is_checksum_file(rel):
            continue
        node = tree
        *folders, name = rel.split("/")
        for folder in folders:
            node = node.setdefault(folder + "/", {})
        node[name] = None
    out: list[OutlineLine] = []

    def visit(node: dict, depth: int, role: str, path: str) -> None:
        files = [n for n, child in node.items() if child is None]
        folders = sorted((n for n, child in node.items() if child is not None),
                         key=lambda n: (not n[:-1].isdigit(), int(n[:-1]) if n[:-1].isdigit()
                                        else 0, n))
        if not depth:  # the top in the order a query writes it (ROLES)
            order = list(ROLES)
            folders.sort(key=lambda n: order.index(n[:-1]) if n[:-1] in order else len(order))
        partitions = [n for n in folders if n[:-1].isdigit()] if path.count("/") == 2 \
            and path.startswith("state/") else []
        for name in folders:
            if name in partitions[SHOWN_PARTITIONS:]:
                continue
            child_role = role or (name[:-1] if name[:-1] in ROLES else "other")
            child = node[name]
            out.append(OutlineLine(depth, name, _label(path, name, child), child_role))
            visit(child, depth + 1, child_role, path + name)
        rest = partitions[SHOWN_PARTITIONS:]
        if rest:
            held = sum(_files_below(node[n]) for n in rest)
            ids = id_ranges([int(n[:-1]) for n in rest])
            names = {_contents(node[n]) for n in rest}
            what = f"each {names.pop()}" if len(names) == 1 else "their own versions"
            out.append(OutlineLine(depth, f"{ids}/", f"partition{'s' if len(rest) > 1 else ''} "
                                   f"{ids}: {what}; {held} files", role))
        if files and depth:
            out.append(OutlineLine(depth, _names(files), "", role))
        elif files:
            for name in sorted(files):
                out.insert(0, OutlineLine(depth, name, "", name if name in ROLES else "other"))

    visit(tree, 0, "", "")
    return out


def _contents(node: dict) -> str:
    """A folder's files as few words, then its subfolders: ``1..8 .delta and _metadata/``."""
    files = _names([name for name, child in node.items() if child is None])
    folders = sorted(name for name, child in node.items() if child is not None)
    return " and ".join(x for x in [files, *folders] if x)


def _files_below(node: dict) -> int:
    return sum(1 if child is None else _files_below(child) for child in node.values())


def _count(node: dict) -> str:
    n = _files_below(node)
    return f"{n} file{'s' if n != 1 else ''}"


def _label(path: str, name: str, node: dict) -> str:
    """A folder's file count, and under ``state/`` what its number is."""
    if path == "state/" and name[:-1].isdigit():
        return f"operator {name[:-1]}: {_count(node)}"
    if path.startswith("state/") and path.count("/") == 2 and name[:-1].isdigit():
        return f"partition {name[:-1]}: {_count(node)}"
    if path.startswith("state/") and name == "_metadata/":
        return (f"the operator's metadata: {_count(node)}" if path.count("/") == 2 else
                f"the store's key and value schemas: {_count(node)}")
    return _count(node)


def description(line: OutlineLine) -> str:
    """What an outline line holds, and for a top entry what it is for."""
    role = ROLES.get(line.name.rstrip("/"), "") if line.depth == 0 else ""
    return "; ".join(x for x in (line.note, role) if x)


def outline_lines(outline: list[OutlineLine]) -> list[str]:
    """The outline as text: one line per entry, indented by depth."""
    return [f"{'    ' * line.depth}{line.name}" + (f"  ({description(line)})"
                                                   if description(line) else "")
            for line in outline]


@dataclass(frozen=True)
class BatchPoint:
    """One batch as the logs record it (times in ms since the epoch; None: not recorded)."""
    batch_id: int
    planned_ms: int | None  # offsets/<batch>'s batch time
    committed: bool
    state_version: int | None  # the version the batch wrote: batch id + 1
    watermark_applied_ms: int | None  # offsets/<batch>: what the batch evicts by
    watermark_next_ms: int | None  # commits/<batch>: what the next batch applies
    readable: bool = True  # False: offsets/<batch> is damaged (05 names it); its times unknown


def batch_timeline(ckpt: Checkpoint, newest: int = TIMELINE_BATCHES) -> list[BatchPoint]:
    """The ``newest`` batches the offsets log still holds, each with its commit, the state
    version it wrote (found among the state files) and the watermarks the two logs record; a
    damaged entry is a point with its times unknown, not a stop."""
    versions = {f.version for f in ckpt.state_files()} if ckpt.has_state_operators else set()
    committed = set(ckpt.commit_batch_ids)
    out = []
    for b in ckpt.offset_batch_ids[-newest:]:
        try:
            entry = ckpt.offsets(b)
        except RunbookError:
            entry = None
        try:
            recorded = ckpt.next_watermark_ms(b) if b in committed else None
        except RunbookError:
            recorded = None
        out.append(BatchPoint(b, (entry.timestamp_ms or None) if entry else None, b in committed,
                              b + 1 if b + 1 in versions else None,
                              entry.watermark_ms if entry else None, recorded, entry is not None))
    return out


def timeline_table(points: list[BatchPoint]):
    """The timeline as a table: the watermarks in event time (UTC); 0, none yet, as "-". The
    batches' own times are wall-clock times of the run, left to the picture."""
    import pandas as pd

    def when(ms):
        return format_utc(ms, zone=False) if ms else "-"
    return pd.DataFrame([{"batch": p.batch_id, "committed": p.committed,
                          "state_version": "-" if p.state_version is None else p.state_version,
                          "watermark_applied": when(p.watermark_applied_ms),
                          "watermark_for_next": when(p.watermark_next_ms)} for p in points])


def watermark_handover(points: list[BatchPoint]) -> list[int]:
    """The batches whose applied watermark is not the one the batch before recorded for it
    (empty: every batch applies what its predecessor's commit said)."""
    return [b.batch_id for a, b in zip(points, points[1:]) if a.watermark_next_ms is not None
            and b.readable and b.watermark_applied_ms != a.watermark_next_ms]


def timeline_lines(points: list[BatchPoint]) -> list[str]:
    """What the timeline shows, each sentence decided by it: the state version each batch
    wrote, and the watermark each batch applied."""
    if not points:
        return ["no batch in the offsets log"]
    out = []
    wrote = [p for p in points if p.state_version is not None]
    if wrote:
        same = all(p.state_version == p.batch_id + 1 for p in wrote)
        out.append(f"{'every' if same else 'not every'} batch N of "
                   f"{id_ranges([p.batch_id for p in wrote])} wrote state version N+1"
                   + ("" if same else ": see the table"))
    handed = [b.batch_id for a, b in zip(points, points[1:])
              if a.watermark_next_ms is not None and b.readable]
    broken = watermark_handover(points)
    if handed:
        out.append(("every" if not broken else "not every") + f" batch {id_ranges(handed)} "
                   "applied the watermark the batch before recorded in its commit"
                   + (f" (not {id_ranges(broken)})" if broken else ""))
    if points[0].readable and not points[0].watermark_applied_ms:
        out.append(f"batch {points[0].batch_id} applied none: no commit before it recorded one")
    damaged = [p.batch_id for p in points if not p.readable]
    if damaged:
        out.append(f"offsets entries {id_ranges(damaged)} do not read (damaged): their times are "
                   "unknown; 05 recover corrupted state says what Spark does with them")
    return out
