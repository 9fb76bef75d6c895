"""Whether a query still writes to the checkpoint: its logs' times against its own trigger
interval, and the active queries of this session. Rollback and undo refuse an active-looking
checkpoint unless forced.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs.memory import MemoryFiles
from state_runbooks.core.log_files import listed_batches

from .watch import LOG_FOLDERS, log_listing

QUIET_MINUTES = 5  # offsets or commits written more recently than this: the query looks active


# -- activity --------------------------------------------------------------------------------------
@dataclass
class Activity:
    reasons: list[str]
    seen: str = ""  # what the guard looked at, active or not

    @property
    def looks_active(self) -> bool:
        return bool(self.reasons)


TRIGGER_INTERVALS_QUIET = 3  # quiet for this many of the query's own trigger intervals: stopped
_RECENT_BATCHES = 10  # batches whose timestamps give the query's trigger interval


def trigger_interval_ms(ckpt: Checkpoint, batch_ids: list[int] | None = None) -> int | None:
    """The query's usual time between batches: the median gap between the batch timestamps of
    its last offsets entries (None with fewer than two batches); ``batch_ids``: the offsets
    entries a listing just saw, else the log is listed."""
    stamps = []
    ids = ckpt.offset_batch_ids if batch_ids is None else batch_ids
    for batch in ids[-_RECENT_BATCHES:]:
        try:
            stamps.append(ckpt.offsets(batch).timestamp_ms)
        except RunbookError:  # a damaged entry (05 names it), or one purged since: no time
            continue
    gaps = sorted(b - a for a, b in zip(stamps, stamps[1:]) if b > a)
    return gaps[len(gaps) // 2] if gaps else None


def check_activity(ckpt: Checkpoint, quiet_minutes: float = QUIET_MINUTES,
                   now_ms: int | None = None, own_writes: dict | None = None) -> Activity:
    """Signs that a query is still writing to the checkpoint: an offsets or commits entry written
    more recently than ``quiet_minutes`` or than ``TRIGGER_INTERVALS_QUIET`` of the query's own
    trigger intervals (from its batch timestamps), whichever is longer, or an active query of
    this session on it. ``own_writes`` (path -> [size, modified ms], as a change's journal
    records what the change wrote) are not signs: an undo right after the change is not refused
    for the change's own new batch."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    reasons = []
    # The newest entry by time, and among entries of the same time (a copy that kept no times)
    # the latest batch.
    own = own_writes or {}
    files = log_listing(ckpt.fs.raw())
    entries = []
    for folder in LOG_FOLDERS:
        for batch, entry in listed_batches(files, folder).items():
            rel = f"{folder}/{batch}"
            if list(own.get(rel, ())) != [entry.size, entry.modified_ms]:
                entries.append((entry.modified_ms, batch, rel))
    newest = None
    if entries:
        modified_ms, _batch, rel = max(entries)
        newest = (rel, modified_ms)
    interval = trigger_interval_ms(ckpt, sorted(listed_batches(files, "offsets")))
    window_ms = max(quiet_minutes * 60_000, TRIGGER_INTERVALS_QUIET * (interval or 0))
    why = (f"{TRIGGER_INTERVALS_QUIET} x the query's trigger interval of about "
           f"{interval / 1000:.0f} s (offsets' batch timestamps)"
           if interval and TRIGGER_INTERVALS_QUIET * interval > quiet_minutes * 60_000
           else f"{quiet_minutes:g} minutes")
    seen = (f"newest log entry {newest[0]}, written {(now_ms - newest[1]) / 1000:.0f} s ago; "
            f"quiet means nothing written for {window_ms / 1000:.0f} s ({why})" if newest
            else "no offsets or commits entry")
    if newest and now_ms - newest[1] < window_ms:
        reasons.append(f"{newest[0]} was written {(now_ms - newest[1]) / 1000:.0f} s ago (less "
                       f"than {why})")
    for query in _active_queries(ckpt.spark):
        try:
            location = str(query._jsq.streamingQuery().resolvedCheckpointRoot())
        except Exception:  # noqa: BLE001 - not every wrapper exposes it
            location = ""
        if str(query.id) == _query_id(ckpt) or location.rstrip("/") in (ckpt.root, ckpt.fs.uri()):
            reasons.append(f"query {query.name or query.id} is active in this Spark session on "
                           "this checkpoint")
    return Activity(reasons, seen)


def _active_queries(spark) -> list:
    """The streaming queries active in this session; none where the files are reached without
    a session (files in memory)."""
    return [] if isinstance(spark, MemoryFiles) else spark.streams.active


def _query_id(ckpt: Checkpoint) -> str | None:
    """The checkpoint's query id; None when its ``metadata`` file is damaged (05 names it)."""
    try:
        return ckpt.query_id
    except RunbookError:
        return None
