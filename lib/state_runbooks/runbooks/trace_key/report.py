"""What a reader of the trace sees: where the key lives, its history, the verdict, the summary's
keys, and what the demo showed."""
from __future__ import annotations

from .demo import DemoTraces, first_window_words
from .history import UnitTrace
from .trace import Trace
from .verdict import unit_status


def _how_read(t: UnitTrace) -> str:
    """How many partitions were read, from what, and why not fewer."""
    n, whole = t.placement.num_partitions, t.whole_batches
    batches = t.last_batch - t.first_batch + 1
    how = (f"its state at batch {t.first_batch}, then Spark's change feed of the batches after it"
           if t.read_by == "change feed" else "its state at each batch")
    if t.partitions_read == 1 and not t.view_why:
        return f"1 of {n} partitions read (a view of its files alone): {how}"
    if t.partitions_read == 1:
        return f"1 of {n} partitions read a batch, from its snapshots ({t.view_why})"
    if t.placement.partition_id is not None and len(whole) < batches:
        return (f"1 of {n} partitions read a batch, all {n} at {len(whole)} of the {batches} "
                f"batches ({whole[0]}..{whole[-1]}: the partition keeps no snapshot at or before "
                f"them, and {t.view_why})")
    return f"all {n} partitions read: {how}"


def placement_lines(trace: Trace) -> list[str]:
    lines = [f"{t.label}: {t.placement.why}; {_how_read(t)}" for t in trace.traces]
    lines += [f"{label}: not traced: {why}" for label, why in trace.skipped.items()]
    lines += [f"DISAGREE: {d}" for d in trace.disagreements()]
    return lines


def history_lines(trace: Trace, limit: int = 30) -> list[str]:
    lines = []
    for t in trace.traces:
        start = t.by_batch.get(t.first_batch, {})
        lines.append(f"{t.label}, batch {t.first_batch}: "
                     + ("; ".join(f"{k} = {'; '.join(v)}" for k, v in start.items())
                        if start else "not in the state"))
        changes = [c.line() for c in t.changes]
        lines += [f"  {c}" for c in changes[:limit]]
        if len(changes) > limit:
            lines.append(f"  ... and {len(changes) - limit} more changes")
        if not changes:
            lines.append(f"  no change in batches {t.first_batch + 1}..{t.last_batch}")
    return lines


def verdict_lines(trace: Trace) -> list[str]:
    return [unit_status(t).line for t in trace.traces]


def summarize(summary, trace: Trace) -> None:
    status = trace.status
    summary.details.update({
        "key_where": trace.key_where, "key_status": status.status, "unit": status.unit,
        "first_batch": status.first_batch, "last_batch": status.last_batch,
        "evicted_at_batch": status.evicted_at_batch, "partition_id": status.partition_id,
        "partitions_read": trace.partitions_read,
        "read_by": {t.label: t.read_by for t in trace.traces},
        "batches_read_whole": sum(len(t.whole_batches) for t in trace.traces),
        "history": [{"unit": t.label, "batch_id": c.batch_id, "change": c.change, "key": c.key,
                     "before": c.before, "after": c.after, "watermark_ms": c.watermark_ms,
                     "reason": c.reason or None} for t in trace.traces for c in t.changes],
        "not_traced": trace.skipped})
    for d in trace.disagreements():
        summary.add_finding("warning", "placement_disagrees", d)
    summary.add_finding("info", f"key_{status.status}", status.line)


def what_this_showed(result: DemoTraces) -> list[str]:
    """The demo's closing bullets, computed from its traces."""
    present, evicted, never = result.present, result.evicted, result.never_seen
    p, e, n = present.status, evicted.status, never.status
    return [
        f"a key of a live window is present ({p.line.split(': ', 1)[1]})",
        f"an early window is gone: {e.line.split(': ', 1)[1]}, as Spark's reader shows at every "
        "batch",
        f"{first_window_words()}",
        f"a key that never arrived is never seen, and the trace says so from "
        f"{never.partitions_read} partition, the one Spark's rule gives"
        if never.partitions_read == 1 else
        "a key that never arrived is never seen, read from every partition",
        f"each trace read {present.partitions_read} of {present.traces[0].placement.num_partitions}"
        f" partitions where key_where fixed the key ({n.status} included)",
    ]
