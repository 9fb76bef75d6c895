"""What the reader sees and the run summary: the counts per category, the per-key table, and the
findings of the summary.
"""
from __future__ import annotations

from .classification import CATEGORIES
from .spec import JoinSpec
from .verdicts import Diagnosis, Verdict


def counts_lines(diagnosis: Diagnosis) -> list[str]:
    total = diagnosis.total_keys
    lines = [f"{total:,} join keys in the state history of batches {diagnosis.history_start}.."
             f"{diagnosis.batch_id} ({diagnosis.method}):"]
    for category, n in diagnosis.counts.items():
        if category == "never_seen":
            continue
        lines.append(f"  {category:<24} {n:>8,}  {CATEGORIES[category]}")
    return lines


def verdicts_table(verdicts: list[Verdict], spec: JoinSpec):
    """The per-key table: key, category, each side's rows and times, the gap, removals."""
    import pandas as pd

    def side(s: dict) -> str:
        if not s["times"]:
            return "-"
        flag = " matched" if s["matched"] else ""
        where = (f"{s['rows_now']} now" if s["rows_now"] else f"evicted b{s['removed_batch']}")
        return f"{', '.join(t[11:] for t in s['times'])} ({where}{flag})"

    return pd.DataFrame([{
        "key": v.key if isinstance(v.key, str) else tuple(v.key),
        "category": v.category,
        f"left {spec.left.time_column}": side(v.evidence["left"]),
        f"right {spec.right.time_column}": side(v.evidence["right"]),
        "gap_s": ("-" if v.evidence.get("gap_seconds") is None
                  else f"{v.evidence['gap_seconds']:+g}"),
    } for v in verdicts])


def summarize(summary, diagnosis: Diagnosis, verdicts: list[Verdict]) -> None:
    """Fill the summary: the common keys of this runbook and one finding per kind of mismatch."""
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
