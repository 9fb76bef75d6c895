"""What a reader sees, and the summary a scheduler gets."""
from __future__ import annotations

from state_runbooks.common.formatting import format_bytes

from .check import Check

MARK = {"same": "same", "accepted": "ok", "fails": "FAILS", "ignored": "IGNORED",
        "semantics": "CHANGES", "unknown": "?"}


def side_by_side_lines(check: Check, width: int = 44) -> list[str]:
    """Old and new per aspect; pinned settings the job leaves as they are count in one line."""
    rows = check.comparison.rows
    same_settings = [r for r in rows if r.aspect.startswith("setting ") and r.verdict == "same"]
    lines = [f"{'':9} {'aspect':<40} {'checkpoint (old)':<{width}} changed query (new)"]
    for r in rows:
        if r in same_settings:
            continue
        old = r.old if len(r.old) <= width - 1 else r.old[:width - 4] + "..."
        lines.append(f"{MARK[r.verdict]:<9} {r.aspect:<40} {old:<{width}} {r.new}")
    if same_settings:
        lines.append(f"{'same':<9} {len(same_settings)} more settings the checkpoint pins, "
                     "the job's code does not change")
    return lines


def verdict_lines(check: Check) -> list[str]:
    """One line per difference: the verdict, Spark's rule behind it and what to do."""
    out = []
    for r in check.comparison.differences():
        head = {"fails": f"fails with {r.error_class}", "ignored": "ignored by Spark",
                "semantics": "restarts, not as intended", "accepted": "accepted",
                "unknown": "not decidable here"}[r.verdict]
        out.append(f"{r.aspect}: {head}. Rule: {r.rule or 'none'}. {r.action}".rstrip())
    return out or ["no differences: the changed query restarts as the old one would"]


def prediction_line(check: Check) -> str:
    c = check.comparison
    how = "Spark's own check" if c.by_spark_check else "the comparison above"
    if c.predicted_error_class:
        return f"predicted ({how}): fails with {c.predicted_error_class}: {c.predicted_message}"
    return f"predicted ({how}): restarts"


def rehearsal_lines(check: Check) -> list[str]:
    r = check.rehearsal
    if r is None:
        return ["rehearsal: not asked (rehearse=False): the prediction stands"]
    lines = []
    if r.copy is not None:
        lines.append(f"copy: {len(r.copy.files)} of {r.copy.checkpoint_files} files, "
                     f"{format_bytes(r.copy.copy_bytes)} of {format_bytes(r.copy.checkpoint_bytes)}"
                     f" ({100 * r.copy.copy_bytes / max(r.copy.checkpoint_bytes, 1):.0f}%): what "
                     f"batch {r.copy.batch_id} needs to run again")
    if r.conclusive and r.ran:
        parts = ", ".join(map(str, r.shuffle_partitions)) or "-"
        lines.append(f"rehearsal: batch {r.batch_id} ran with the changed query ({r.input_rows} "
                     f"input rows; stateful operators on {parts} partitions)")
    elif r.conclusive:
        lines.append(f"rehearsal: Spark failed batch {r.batch_id} with {r.error_class}: "
                     f"{r.message}")
    else:
        lines.append(f"rehearsal: {r.note}" + (f" ({r.error_class}: {r.message})"
                                              if r.error_class or r.message else ""))
    if r.copy is not None and r.ran is not None or r.note.startswith("the batch"):
        lines.append("the copy was removed" if r.removed else "the copy could NOT be removed")
    if check.disagreement:
        lines.append(f"the prediction and the rehearsal differ: {check.disagreement}")
    elif check.rehearsed:
        lines.append("the rehearsal agrees with the prediction")
    return lines


def ignored_lines(check: Check) -> list[str]:
    """Every setting Spark replaces, with the partitions the rehearsal ran on as proof."""
    out = []
    for s in check.settings:
        if s.ignored:
            seen = ""
            if s.key == "spark.sql.shuffle.partitions" and check.rehearsal and \
                    check.rehearsal.shuffle_partitions:
                seen = (f" (the rehearsal ran on {check.rehearsal.shuffle_partitions[0]} "
                        "partitions)")
            out.append(f"{s.key}: the job sets {s.job_value}, Spark uses the pinned {s.pinned}"
                       f"{seen}; {s.action()}")
    return out


def verdict_line(check: Check) -> str:
    ignored = check.ignored_settings
    tail = (f"; ignored settings: {', '.join(ignored)}" if ignored else "")
    cls = f" with {check.error_class}" if check.error_class else ""
    return f"{check.status.upper()}: {check.restart}{cls}{tail}"


def summary_details(check: Check) -> dict:
    return {"restart": check.restart, "error_class": check.error_class,
            "ignored_settings": check.ignored_settings, "rehearsed": check.rehearsed,
            "predicted": {"restart": check.comparison.predicted_restart,
                          "error_class": check.comparison.predicted_error_class,
                          "by_spark_check": check.comparison.by_spark_check},
            "rehearsal": None if check.rehearsal is None else {
                "ran": check.rehearsal.ran, "conclusive": check.rehearsal.conclusive,
                "error_class": check.rehearsal.error_class, "message": check.rehearsal.message,
                "batch_id": check.rehearsal.batch_id,
                "copy_bytes": check.rehearsal.copy.copy_bytes if check.rehearsal.copy else None,
                "checkpoint_bytes": (check.rehearsal.copy.checkpoint_bytes
                                     if check.rehearsal.copy else None),
                "note": check.rehearsal.note},
            "disagreement": check.disagreement,
            "differences": [{"aspect": r.aspect, "old": r.old, "new": r.new,
                             "verdict": r.verdict, "error_class": r.error_class,
                             "action": r.action} for r in check.comparison.differences()]}


def summarize(summary, check: Check) -> None:
    """The runbook's keys and one finding per difference (status: the worst of them, or
    critical when the restart fails)."""
    summary.details.update(summary_details(check))
    for r in check.comparison.differences():
        severity = r.severity
        if r.verdict == "fails" and check.restart != "fails":
            severity = "info"  # the rehearsal showed Spark accepts it
        summary.add_finding(severity, f"change_{r.verdict}",
                            f"{r.aspect}: {r.old} -> {r.new}; {r.action}")
    if check.restart == "fails" and not any(f.severity == "critical" for f in summary.findings):
        summary.add_finding("critical", "restart_fails",
                            f"{check.error_class}: {check.rehearsal.message if check.rehearsed else check.comparison.predicted_message}")
    if check.disagreement:
        summary.add_finding("info", "prediction_differs", check.disagreement)


def what_this_showed(changes: list, files: int, unchanged: bool) -> list[str]:
    """The demo's lessons, each with the figures of this run: per change of the demo job
    (``changes``: its ``DemoChange`` list) what Spark does with it and why, then the rehearsals
    against their predictions and the checkpoint's ``files`` (``unchanged``: their checksums
    equal the ones taken before)."""
    lines = []
    for c in changes:
        check = c.check
        state = [r for r in check.comparison.rows if r.aspect.endswith((": key", ": value"))]
        failing = [r for r in check.comparison.differences() if r.verdict == "fails"]
        ignored = [s for s in check.settings if s.ignored]
        if check.restart == "fails":
            lines.append(f"{c.description}: {_change(failing[0]) if failing else 'refused'}; "
                         f"Spark refuses the restart with {check.error_class}")
        elif ignored:
            s = ignored[0]
            ran = (check.rehearsal.shuffle_partitions if check.rehearsed
                   and s.key == "spark.sql.shuffle.partitions" else [])
            key = "" if s.key in c.description else f" of {s.key}"
            lines.append(f"{c.description}: it restarts, but with the value{key} the checkpoint "
                         f"pins, {s.pinned}, not the job's {s.job_value}"
                         + (f"; the rehearsal ran on {', '.join(map(str, ran))} partitions"
                            if ran else "") + f" ({check.status})")
        elif check.status != "ok":
            changed = [r.aspect for r in check.comparison.differences()
                       if r.verdict == "semantics"]
            lines.append(f"{c.description}: it restarts, but not as intended "
                         f"({', '.join(changed) or check.status})")
        else:
            kept = (state and all(r.verdict == "same" for r in state))
            lines.append(f"{c.description}: "
                         + ("the state's key and value schemas stay the same, so " if kept else "")
                         + f"it {check.restart} as intended ({check.status})")
    agreed = [c for c in changes if c.check.rehearsed and not c.check.disagreement]
    batches = sorted({c.check.rehearsal.batch_id for c in agreed})
    share = (f"all {len(changes)}" if len(agreed) == len(changes) else
             f"{len(agreed)} of {len(changes)}")
    lines.append(f"{share} predictions agreed with their rehearsal "
                 f"(batch {', '.join(map(str, batches)) or '-'} run again from its logged offsets "
                 "on a scratch copy); the checkpoint's "
                 + (f"{files} files stayed the same, byte for byte" if unchanged else
                    f"{files} files did NOT all stay the same"))
    return lines


def _change(r) -> str:
    """One difference as a phrase: a store's key or value, or any other aspect."""
    label, _, part = r.aspect.rpartition(": ")
    if part in ("key", "value"):
        return f"the state's {part} in {label} goes from ({r.old}) to ({r.new})"
    return f"{r.aspect} goes from {r.old} to {r.new}"
