"""One key's history in one unit: the rows ``key_where`` matches at every batch of the range, as
Spark's reader shows them: the state at the first batch replayed through Spark's change feed of
the batches after it (one job), or, where Spark serves no feed for the unit, a small job a
batch. Both read only the key's partition where it is known and a view of it can be made (else
one partition a batch from its snapshots). Then, key by key, what each batch did: inserted,
updated (value before and after), deleted, with the watermark the batch applied and why Spark
removes such a row."""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError, spark_errors
from state_runbooks.common.formatting import format_utc, row_text
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import StateUnit
from state_runbooks.core.state_reader import change_feed, load_unit

from .locate import Placement, has_changes, partition_root, read_at, snapshot_batches

# Units with a row a key (the change feed's puts and deletes replay them); a list or a map state
# variable's rows are its elements, and timers have no value: those are read a batch at a time.
FEED_KINDS = ("store", "join_count", "join_rows", "value")
FEED_CHANGES = ("update", "delete")

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
    read_by: str = "each batch"  # or "change feed"
    view_why: str = ""  # why the key's partition could not be read from a view of it
    whole_batches: list[int] = field(default_factory=list)  # read in every partition: no snapshot
    by_batch: dict = field(default_factory=dict)  # batch -> {key text: value text}
    changes: list[Change] = field(default_factory=list)
    seen_partitions: set = field(default_factory=set)  # the partitions whose state held the rows
    skipped: str = ""  # why this unit was not traced (key_where does not resolve on it)

    @property
    def label(self) -> str:
        return self.unit.label


def _value_columns(df) -> list[str]:
    return [c for c in df.columns if c not in ("key", "partition_id", "_batch")]


def trace_unit(ckpt: Checkpoint, unit: StateUnit, key_where: str, placement: Placement,
               first: int, last: int) -> UnitTrace:
    """The rows ``key_where`` matches at each batch ``first`` .. ``last``, and their changes."""
    out = UnitTrace(unit, placement, first, last, 1,
                    by_batch={b: {} for b in range(first, last + 1)})
    with partition_root(ckpt, unit, placement) as (view, why):
        out.view_why = why
        if not _replay_change_feed(ckpt, unit, key_where, view, out):
            _read_each_batch(ckpt, unit, key_where, view, out)
    if out.whole_batches or placement.partition_id is None:
        out.partitions_read = placement.num_partitions
    out.changes = _changes(ckpt, unit, out.by_batch)
    return out


def _add(out: UnitTrace, by_key: dict, row, values: list[str], view: str | None) -> None:
    """The row's value text added under its key text; its partition noted (a view's rows are the
    key's partition's, whatever number the reader gives them)."""
    by_key.setdefault(row_text(row["key"]), []).append(row_text({c: row[c] for c in values}))
    out.seen_partitions.add(out.placement.partition_id if view else row["partition_id"])


def _replay_change_feed(ckpt: Checkpoint, unit: StateUnit, key_where: str, view: str | None,
                        out: UnitTrace) -> bool:
    """The state at the first batch, then each batch's puts and deletes from Spark's change feed.
    The feed has no partition option: it reads the view of the key's partition, or every
    partition where the key's partition is not known (else a batch at a time reads the one
    partition from its snapshots). False (nothing filled) where Spark serves no feed for the unit:
    a partition without the changes of every batch (RocksDB without changelog checkpointing), a
    unit of several rows a key, a change it does not name as a put or a delete."""
    first, last, partition = out.first_batch, out.last_batch, out.placement.partition_id
    if unit.kind not in FEED_KINDS or first == last or (view is None and partition is not None) \
            or not has_changes(ckpt, unit, partition, first + 1, last):
        return False
    from pyspark.sql import functions as F

    start = load_unit(ckpt, unit, {"batchId": first}, view)
    values = _value_columns(start)
    columns = ["batch_id", "change_type", "key", "partition_id", *values]
    with spark_errors(f"reading {unit.label} at batch {first} and its change feed after it"):
        feed = change_feed(ckpt, unit.operator_id, unit.options, first + 1, last, view)
        if not set(columns) <= set(feed.columns):
            return False
        at_first = start.select(F.lit(first).cast("long").alias("batch_id"),
                                F.lit("update").alias("change_type"), *columns[2:])
        rows = at_first.unionByName(feed.select(*columns)).where(key_where).collect()
    if any(r["change_type"] not in FEED_CHANGES for r in rows):
        return False
    by_batch: dict = {}
    for r in rows:  # Spark's order within a batch: a key put then deleted ends deleted
        by_batch.setdefault(r["batch_id"], []).append(r)
    state: dict = {}
    for batch in range(first, last + 1):
        for r in by_batch.get(batch, []):
            state.pop(row_text(r["key"]), None)
            if r["change_type"] == "update":
                _add(out, state, r, values, view)
        out.by_batch[batch] = {k: list(v) for k, v in state.items()}
    out.read_by = "change feed"
    return True


def _read_each_batch(ckpt: Checkpoint, unit: StateUnit, key_where: str, view: str | None,
                     out: UnitTrace) -> None:
    """A job a batch: one union of a hundred reads costs Spark's planner more than the reads
    themselves (tests/benchmarks/README.md)."""
    partition = out.placement.partition_id
    snapshots = [] if view else snapshot_batches(ckpt, unit, partition)
    for batch in range(out.first_batch, out.last_batch + 1):
        df, one = read_at(ckpt, unit, batch, partition, snapshots, view)
        if not one:
            out.whole_batches.append(batch)
        with spark_errors(f"reading {unit.label} at batch {batch}"):
            rows = df.where(key_where).collect()
        values = _value_columns(df)
        for r in rows:
            _add(out, out.by_batch[batch], r, values, view)


def _text(values: list[str] | None) -> str | None:
    return None if not values else (values[0] if len(values) == 1 else "; ".join(sorted(values)))


def _changes(ckpt: Checkpoint, unit: StateUnit, by_batch: dict) -> list[Change]:
    out = []
    batches = sorted(by_batch)
    keys = sorted({k for rows in by_batch.values() for k in rows})
    marks: dict = {}  # the watermark a batch applied, read where something changed

    def mark_of(batch: int) -> int:
        if batch not in marks:
            logged = ckpt.fs.exists(f"offsets/{batch}")
            marks[batch] = ckpt.offsets(batch).watermark_ms if logged else 0
        return marks[batch]

    for key in keys:
        before = None
        for b in batches:
            now = _text(by_batch[b].get(key))
            mark = mark_of(b) if now != before else 0
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
