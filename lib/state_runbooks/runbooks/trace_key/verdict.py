"""What the trace says of the key, in one line a person reads, and the summary's figures."""
from __future__ import annotations

from dataclasses import dataclass

from .history import UnitTrace

STATUSES = ("present", "evicted", "removed", "never_seen")  # the first that applies decides


@dataclass(frozen=True)
class KeyStatus:
    status: str
    unit: str | None  # the unit that decides
    first_batch: int | None  # the first batch of the range whose state holds it
    last_batch: int | None  # the last one
    evicted_at_batch: int | None  # the first batch whose state no longer holds it
    partition_id: int | None
    line: str


def unit_status(trace: UnitTrace) -> KeyStatus:
    held = [b for b in sorted(trace.by_batch) if trace.by_batch[b]]
    partition = (trace.placement.partition_id if trace.placement.partition_id is not None
                 else (min(trace.seen_partitions) if len(trace.seen_partitions) == 1 else None))
    span = f"batches {trace.first_batch}..{trace.last_batch}"
    if not held:
        where = (f" (partition {partition}, the one Spark's rule gives)" if partition is not None
                 else "")
        return KeyStatus("never_seen", trace.label, None, None, None, partition,
                         f"{trace.label}: never in the state of {span}{where}")
    first, last = held[0], held[-1]
    if last == trace.last_batch:
        updates = sum(c.change == "updated" for c in trace.changes)
        return KeyStatus("present", trace.label, first, last, None, partition,
                         f"{trace.label}: present at batch {last} (in state since batch {first} "
                         f"of {span}, partition {partition}), updated {updates} times")
    gone = last + 1
    deleted = [c for c in trace.changes if c.change == "deleted" and c.batch_id == gone]
    evicted = bool(deleted) and deleted[0].reason.startswith("evicted")
    why = deleted[0].reason if deleted else "removed"
    return KeyStatus("evicted" if evicted else "removed", trace.label, first, last, gone,
                     partition,
                     f"{trace.label}: gone at batch {gone} ({why}); it was in state batches "
                     f"{first}..{last}, partition {partition}")


def overall(statuses: list[KeyStatus]) -> KeyStatus:
    """The key's status over every unit traced: present anywhere, else evicted, removed, never
    seen."""
    for status in STATUSES:
        found = [s for s in statuses if s.status == status]
        if found:
            return found[0]
    return KeyStatus("never_seen", None, None, None, None, None, "no unit was traced")
