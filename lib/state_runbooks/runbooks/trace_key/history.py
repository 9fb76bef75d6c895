"""One key's history in one unit: the rows ``key_where`` matches at every batch of the range,
read by Spark's reader (one partition a batch where the key's partition is known and a snapshot
of it is at or before the batch), a small job a batch; then, key by key, what each batch did: inserted, updated (value before and after), deleted,
with the watermark the batch applied and why Spark removes such a row."""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError, spark_errors
from state_runbooks.common.formatting import format_utc, row_text
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import StateUnit

from .locate import Placement, read_at, snapshot_batches

# Why Spark removes a unit's rows, by the unit's expiry rule (core/operators.py).
_EVENT_TIME_RULES = ("watermark_key", "window_end", "session_end", "expires_at", "join_side")
_REASONS = {"timeout": "its group state timed out", "ttl": "its time to live ran out",
            "timer": "its timer fired", "processor": "the processor's own code removed it",
            "never": "removed", "unknown": "removed"}


@dataclass
class Change:
    batch_id: int
    change: str  # inserted, updated, deleted
    key: str
    before: str | None
    after: str | None
    watermark_ms: int  # the watermark the batch applied
    reason: str = ""

    def line(self) -> str:
        what = {"inserted": f"inserted {self.after}",
                "updated": f"updated {self.before} -> {self.after}",
                "deleted": f"deleted (was {self.before}): {self.reason}"}[self.change]
        return (f"batch {self.batch_id} (watermark {format_utc(self.watermark_ms) or 'none'}): "
                f"{self.key} {what}")


@dataclass
class UnitTrace:
    unit: StateUnit
    placement: Placement
    first_batch: int
    last_batch: int
    partitions_read: int  # the most read at one batch
    whole_batches: list[int] = field(default_factory=list)  # read in every partition: no snapshot
    by_batch: dict = field(default_factory=dict)  # batch -> {key text: value text}
    changes: list[Change] = field(default_factory=list)
    seen_partitions: set = field(default_factory=set)  # the reader's partition_id of the rows
    skipped: str = ""  # why this unit was not traced (key_where does not resolve on it)

    @property
    def label(self) -> str:
        return self.unit.label


def _value_columns(df) -> list[str]:
    return [c for c in df.columns if c not in ("key", "partition_id", "_batch")]


def trace_unit(ckpt: Checkpoint, unit: StateUnit, key_where: str, placement: Placement,
               first: int, last: int) -> UnitTrace:
    """The rows ``key_where`` matches at each batch ``first`` .. ``last``. A job a batch: one
    union of a hundred reads costs Spark's planner more than the reads themselves
    (tests/benchmarks/README.md)."""
    snapshots = snapshot_batches(ckpt, unit, placement.partition_id)
    out = UnitTrace(unit, placement, first, last, 1,
                    by_batch={b: {} for b in range(first, last + 1)})
    for batch in range(first, last + 1):
        df, one = read_at(ckpt, unit, batch, placement.partition_id, snapshots)
        if not one:
            out.whole_batches.append(batch)
        with spark_errors(f"reading {unit.label} at batch {batch}"):
            rows = df.where(key_where).collect()
        values = _value_columns(df)
        for r in rows:
            key, value = row_text(r["key"]), row_text({c: r[c] for c in values})
            out.by_batch[batch].setdefault(key, []).append(value)
            out.seen_partitions.add(r["partition_id"])
    if out.whole_batches:
        out.partitions_read = placement.num_partitions
    out.changes = _changes(ckpt, unit, out.by_batch)
    return out


def _text(values: list[str] | None) -> str | None:
    return None if not values else (values[0] if len(values) == 1 else "; ".join(sorted(values)))


def _changes(ckpt: Checkpoint, unit: StateUnit, by_batch: dict) -> list[Change]:
    out = []
    batches = sorted(by_batch)
    keys = sorted({k for rows in by_batch.values() for k in rows})
    logged = set(ckpt.offset_batch_ids) if keys else set()
    marks = {b: ckpt.offsets(b).watermark_ms if b in logged else 0 for b in batches}
    for key in keys:
        before = None
        for b in batches:
            now = _text(by_batch[b].get(key))
            mark = marks[b]
            if before is None and now is not None and b != batches[0]:
                out.append(Change(b, "inserted", key, None, now, mark))
            elif before is not None and now is None:
                out.append(Change(b, "deleted", key, before, None, mark, _reason(unit, mark)))
            elif before is not None and now != before:
                out.append(Change(b, "updated", key, before, now, mark))
            before = now
    return sorted(out, key=lambda c: (c.batch_id, c.key))


def _reason(unit: StateUnit, watermark_ms: int) -> str:
    rule = unit.expiry.rule
    if rule in _EVENT_TIME_RULES:
        return (f"evicted: the watermark {format_utc(watermark_ms)} that batch applied passed it"
                if watermark_ms else "removed before any watermark (not an eviction)")
    return _REASONS.get(rule, "removed")


def check_range(ckpt: Checkpoint, unit: StateUnit, from_batch: int, to_batch: int) -> tuple:
    """``from_batch`` .. ``to_batch`` (-1: the ends of the retained range), checked against it."""
    lo, hi = ckpt.retained_batch_range(unit.operator_id)
    first = lo if from_batch == -1 else from_batch
    last = hi if to_batch == -1 else to_batch
    if not (lo <= first <= last <= hi):
        raise RunbookError(f"batches {first}..{last} are not within the retained range {lo}..{hi}: "
                           "pass from_batch and to_batch in it, or -1 for its ends")
    return first, last
