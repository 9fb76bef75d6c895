"""What the reader sees and the run summary: the counts per category, the per-key table, and the
findings of the summary.
"""
from __future__ import annotations

from .classification import CATEGORIES
from .demo import DemoResult
from .spec import JoinSpec
from .verdicts import Diagnosis, KeyVerdict, ShownKeys, common_day


def _batches(diagnosis: Diagnosis) -> str:
    return f"batches {diagnosis.history_start}..{diagnosis.batch_id} ({diagnosis.method})"


def counts_title(diagnosis: Diagnosis) -> str:
    """The plot's title: the counts are over the whole history read, not one batch."""
    return f"Join keys per category over {_batches(diagnosis)}"


def counts_lines(diagnosis: Diagnosis) -> list[str]:
    lines = [f"{diagnosis.total_keys:,} join keys in the state history of {_batches(diagnosis)}:"]
    for category, n in diagnosis.counts.items():
        if category == "never_seen":
            continue
        lines.append(f"  {category:<24} {n:>8,}  {CATEGORIES[category]}")
    return lines


def times_line(verdicts: list[KeyVerdict]) -> str:
    """Said once above the table and the explanations: the zone, and the date the times share."""
    day = common_day(verdicts)
    return (f"Times are UTC, all on {day}: the table and the sentences show the time of day."
            if day else "Times are UTC.")


def verdicts_table(verdicts: list[KeyVerdict], spec: JoinSpec):
    """The per-key table: key, category, each side's rows and times (of day, when they share a
    date: :func:`times_line`), the gap."""
    import pandas as pd

    day = common_day(verdicts)

    def side(s: dict) -> str:
        if not s["times"]:
            return "-"
        flag = " matched" if s["matched"] else ""
        where = (f"{s['rows_now']} now" if s["rows_now"] else f"evicted b{s['removed_batch']}")
        return f"{', '.join(t[11:] if day else t for t in s['times'])} ({where}{flag})"

    return pd.DataFrame([{
        "key": v.key if isinstance(v.key, str) else tuple(v.key),
        "category": v.category,
        f"left {spec.left.time_column}": side(v.evidence["left"]),
        f"right {spec.right.time_column}": side(v.evidence["right"]),
        "gap_s": ("-" if v.evidence.get("gap_seconds") is None
                  else f"{v.evidence['gap_seconds']:+g}"),
    } for v in verdicts])


def summarize(summary, shown: ShownKeys) -> None:
    """Fill the summary: the common keys of this runbook and one finding per kind of mismatch,
    with the verdicts of the keys shown."""
    diagnosis, verdicts = shown.diagnosis, shown.verdicts
    counts = dict(diagnosis.counts)
    counts["never_seen"] = sum(v.category == "never_seen" for v in verdicts)
    advice = {
        "evicted_by_watermark": ("warning", "keys waited for the other side until the watermark "
                                 "evicted them: widen the watermark delay or the time range, or "
                                 "check the other side's source"),
        "outside_time_bounds": ("warning", "keys have both sides but too far apart in time: widen "
                                "the time range if the data is right"),
        "unmatched_within_bounds": ("warning", "keys have both sides within the bounds given but "
                                    "were not matched: check the join condition"),
        "never_seen": ("warning", "keys asked about never reached the join state: check the "
                       "upstream filter, late data and the key's format"),
        "waiting_for_right": ("info", "keys wait for a right row"),
        "waiting_for_left": ("info", "keys wait for a left row"),
    }
    for category, (severity, text) in advice.items():
        if counts.get(category):
            summary.add_finding(severity, category, f"{counts[category]:,} {text} "
                                "(runbooks/join-missing-rows.md)")
    summary.details.update({
        "batch_id": diagnosis.batch_id,
        "operator_id": diagnosis.spec.operator_id,
        "method": diagnosis.method,
        "categories": counts,
        "verdicts": [v.to_dict() for v in verdicts],
    })


def what_this_showed(demo: DemoResult) -> list[str]:
    """The demo's lessons, each with the figures of this run: the keys the join matched and
    those still waiting in its state (the diagnosis), the time bounds read from the watermark's
    evictions and the keys outside them (its spec), a waiting key's deadline, and an evicted key
    against one that never arrived, as the demo's examples (verdicts with evidence) show them."""
    diagnosis, spec, examples = demo.diagnosis, demo.diagnosis.spec, demo.examples
    counts = diagnosis.counts
    first = {}
    for v in examples:
        first.setdefault(v.category, v)
    lines = [f"{counts.get('joined', 0):,} of the {diagnosis.total_keys:,} join keys in batches "
             f"{diagnosis.history_start}..{diagnosis.batch_id} joined (Spark marked their rows "
             f"matched); {counts.get('waiting_for_right', 0):,} keys with only a left row and "
             f"{counts.get('waiting_for_left', 0):,} with only a right row still wait in the "
             "state for the other side"]
    b = spec.bounds
    bounds = (f"the checkpoint holds no join condition, yet the rows the watermark evicted and "
              f"kept put its bounds at {b.lower:g} s and {b.upper:g} s" if b is not None else
              f"with the bounds given, {spec.lower_bound_seconds:g} s and "
              f"{spec.upper_bound_seconds:g} s")
    outside = first.get("outside_time_bounds")
    gap = outside.evidence.get("gap_seconds") if outside else None
    lines.append(f"{bounds}; {counts.get('outside_time_bounds', 0):,} keys had both sides but no "
                 "pair within them" + (f", {_key(outside)} with its sides {abs(gap):g} s apart"
                                       if gap is not None else ""))
    waiting = first.get("waiting_for_right") or first.get("waiting_for_left")
    deadline = waiting.evidence.get("expires_when_watermark_passes") if waiting else None
    if deadline:
        left = waiting.category == "waiting_for_right"
        side, column = ((waiting.evidence["left"], spec.left.time_column) if left else
                        (waiting.evidence["right"], spec.right.time_column))
        bound = spec.lower_bound_seconds if left else spec.upper_bound_seconds
        lines.append(f"a waiting row is not lost yet: {_key(waiting)} ({column} "
                     f"{side['times'][-1][11:]}, plus the {bound:g} s bound) still joins if its "
                     f"match comes before the watermark passes {deadline[11:]}; then Spark "
                     "evicts it")
    evicted, never = first.get("evicted_by_watermark"), first.get("never_seen")
    if evicted is not None and never is not None:
        side = evicted.evidence["left"] if evicted.evidence["left"]["times"] else \
            evicted.evidence["right"]
        n = counts.get("evicted_by_watermark", 0)
        lines.append(f"{_key(evicted)}, evicted by the watermark in batch "
                     f"{side['removed_batch']}, and {_key(never)}, which never reached the join, "
                     "are both absent from the state now: only the history from the "
                     f"{diagnosis.method} told them apart ({n:,} keys evicted)")
    return lines


def _key(v: KeyVerdict) -> str:
    return v.key if isinstance(v.key, str) else "(" + ", ".join(map(str, v.key)) + ")"
