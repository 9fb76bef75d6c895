"""What a reader sees, and the summary a scheduler gets."""
from __future__ import annotations

from state_runbooks.common.formatting import format_bytes
from state_runbooks.common.spark_settings import SHUFFLE_PARTITIONS_CONF
from state_runbooks.core.state_schemas import KEY_NOT_COMPATIBLE, VALUE_NOT_COMPATIBLE

from .check import Check
from .demo import DemoResult

MARK = {"same": "same", "accepted": "ok", "changes": "CHANGES", "ignored": "IGNORED",
        "fails": "FAILS", "unknown": "UNKNOWN"}
HEAD = {"fails": "fails", "ignored": "ignored by Spark", "changes": "restarts, not as intended",
        "accepted": "accepted", "unknown": "not decidable here"}
PLAYBOOK = "runbooks/query-change.md"
MIGRATE_PLAYBOOK = "runbooks/migrate-state.md"  # 10: the state carried through a schema change
SCHEMA_ERRORS = (KEY_NOT_COMPATIBLE, VALUE_NOT_COMPATIBLE)


def side_by_side_lines(check: Check, width: int = 44) -> list[str]:
    """Old and new per aspect; pinned settings the job leaves as they are count in one line."""
    rows = check.comparison.rows
    same_settings = [r for r in rows if r.aspect.startswith("setting ") and r.verdict == "same"]
    shown = [r for r in rows if r not in same_settings]
    aspect = min(max((len(r.aspect) for r in shown), default=6), 60)
    lines = [f"{'':9} {'aspect':<{aspect}} {'checkpoint (old)':<{width}} changed query (new)"]
    for r in shown:
        old = r.old if len(r.old) <= width - 1 else r.old[:width - 4] + "..."
        lines.append(f"{MARK[r.verdict]:<9} {r.aspect:<{aspect}} {old:<{width}} {r.new}")
    if same_settings:
        lines.append(f"{'same':<9} {len(same_settings)} more settings the checkpoint pins, "
                     "the job's code does not change")
    return lines


def verdict_lines(check: Check) -> list[str]:
    """One line per difference: the grade, Spark's rule behind it, what Spark says and what to
    do."""
    out = []
    for r in check.comparison.differences():
        head = HEAD[r.verdict] + (f" with {r.error_class}" if r.verdict == "fails" and
                                  r.error_class else "")
        said = f" Spark: {r.message.rstrip('. ')}." if r.message else ""
        out.append(f"{r.aspect}: {head}. Rule: {r.rule or 'none'}.{said} {r.action}".rstrip())
    return out or ["no differences: the changed query restarts as the old one would"]


def prediction_line(check: Check) -> str:
    """What Spark's own check and the comparison say, before any rehearsal."""
    how = ("Spark's own check and the comparison" if check.probe.available else
           f"the comparison alone (Spark's own check cannot run here: {check.probe.reason})")
    restart, error_class = check.prediction
    if restart == "fails":
        first = next(r for r in check.comparison.failing() if not r.aspect.startswith("rehearsal"))
        said = first.message or f"{first.aspect}: {first.old} -> {first.new}"
        return f"before the rehearsal, {how}: fails" + (f" with {error_class}" if error_class
                                                          else "") + f": {said}"
    undecided = [r.aspect for r in check.comparison.rows if r.verdict == "unknown"]
    if undecided or not check.probe.available:
        return (f"before the rehearsal, {how}: no failure found, but not everything could be "
                "checked" + (f" ({', '.join(undecided)})" if undecided else ""))
    return f"before the rehearsal, {how}: restarts"


def checks_lines(check: Check) -> list[str]:
    """What the verdict stands on: each check that ran, each that could not."""
    return ([f"checked: {c}" for c in check.verdict.checked]
            + [f"NOT checked: {c}" for c in check.verdict.not_checked])


def rehearsal_lines(check: Check) -> list[str]:
    r = check.rehearsal
    if r is None:
        return ["rehearsal: not asked (rehearse=False)"]
    lines = []
    if r.copy is not None:
        lines.append(f"copy: {len(r.copy.files)} of {r.copy.checkpoint_files} files, "
                     f"{format_bytes(r.copy.copy_bytes)} of {format_bytes(r.copy.checkpoint_bytes)}"
                     f" ({100 * r.copy.copy_bytes / max(r.copy.checkpoint_bytes, 1):.0f}%): what "
                     f"batch {r.copy.batch_id} needs to run again")
    if r.ran:
        parts = ", ".join(map(str, r.shuffle_partitions)) or "-"
        lines.append(f"rehearsal: batch {r.batch_id} ran with the changed query ({r.input_rows} "
                     f"input rows; stateful operators on {parts} partitions)")
    elif r.ran is False:
        lines.append(f"rehearsal: Spark failed batch {r.batch_id} with {r.error_class}: "
                     f"{r.message}")
    else:
        lines.append(f"rehearsal: {r.note}")
    if r.attempted:
        lines.append("the copy was removed" if r.removed else "the copy could NOT be removed")
    if check.disagreement:
        lines.append(f"the other checks and the rehearsal differ ({check.disagreement}): "
                     "every failure counts")
    elif check.rehearsed:
        lines.append("the rehearsal agrees with the other checks")
    return lines


def ignored_lines(check: Check) -> list[str]:
    """Every setting Spark replaces, with the partitions the rehearsal ran on as proof."""
    out = []
    for s in check.settings:
        if s.ignored:
            seen = ""
            if s.key == SHUFFLE_PARTITIONS_CONF and check.rehearsal and \
                    check.rehearsal.shuffle_partitions:
                seen = (f" (the rehearsal ran on {check.rehearsal.shuffle_partitions[0]} "
                        "partitions)")
            out.append(f"{s.key}: the job sets {s.job_value}, Spark uses the pinned {s.pinned}"
                       f"{seen}; {s.action()}")
    return out


def verdict_line(check: Check) -> str:
    """The verdict in one line, with what to do next where it is not a clean restart."""
    v = check.verdict
    if v.restart == "fails":
        cause = f" with {v.error_class}" if v.error_class else ""
        said = f": {v.message.rstrip('. ')}" if v.message else ""
        migrate = (f"; or carry the state into the new schema with 10 Migrate state "
                   f"({MIGRATE_PLAYBOOK})" if v.error_class in SCHEMA_ERRORS else "")
        return (f"{v.status.upper()}: fails{cause}{said}. Keep the change off this checkpoint, "
                f"or see {PLAYBOOK} for the ways to carry on{migrate}")
    if v.restart == "unknown":
        undecided = [r.aspect for r in check.comparison.rows if r.verdict == "unknown"]
        missing = [n.split(":")[0] for n in v.not_checked] + undecided
        return (f"{v.status.upper()}: unknown: not checked here: {', '.join(missing)} (the "
                "checks above say why; a classic session with access to the checkpoint runs "
                "them all)")
    ignored = check.ignored_settings
    tail = f"; ignored settings: {', '.join(ignored)}" if ignored else ""
    return f"{v.status.upper()}: restarts{tail}"


def summary_details(check: Check) -> dict:
    r = check.rehearsal
    return {"restart": check.restart, "error_class": check.error_class,
            "message": check.verdict.message,
            "checked": check.verdict.checked, "not_checked": check.verdict.not_checked,
            "ignored_settings": check.ignored_settings, "rehearsed": check.rehearsed,
            "rehearsal": None if r is None else {
                "ran": r.ran, "error_class": r.error_class, "message": r.message,
                "batch_id": r.batch_id, "note": r.note,
                "copy_bytes": r.copy.copy_bytes if r.copy else None,
                "checkpoint_bytes": r.copy.checkpoint_bytes if r.copy else None},
            "disagreement": check.disagreement,
            "differences": [{"aspect": d.aspect, "old": d.old, "new": d.new,
                             "verdict": d.verdict, "error_class": d.error_class,
                             "message": d.message, "action": d.action}
                            for d in check.comparison.differences()]}


def summarize(summary, check: Check) -> None:
    """The runbook's keys and one finding per difference; the verdict's own finding where it is
    not a clean restart (status: the worst of them)."""
    summary.details.update(summary_details(check))
    for r in check.comparison.differences():
        summary.add_finding(r.severity, f"change_{r.verdict}",
                            f"{r.aspect}: {r.old} -> {r.new}; {r.action}")
    if check.restart == "fails" and not any(f.severity == "critical" for f in summary.findings):
        summary.add_finding("critical", "restart_fails",
                            f"{check.error_class}: {check.verdict.message}")
    if check.restart == "unknown":
        summary.add_finding("warning", "restart_unknown",
                            "not every check ran: " + "; ".join(check.verdict.not_checked))
    if check.disagreement:
        summary.add_finding("info", "prediction_differs", check.disagreement)


def what_this_showed(result: DemoResult) -> list[str]:
    """The demo's lessons, each with the figures of this run: per change of the demo job what
    Spark does with it and why, then the rehearsals against the other checks and the
    checkpoint's files (unchanged: their checksums equal the ones taken before)."""
    changes, files, unchanged = result.changes, result.files, result.unchanged
    lines = []
    for c in changes:
        check = c.check
        state = [r for r in check.comparison.rows if r.aspect.endswith((": key", ": value"))]
        failing = [r for r in check.comparison.failing() if not r.aspect.startswith("rehearsal")]
        ignored = [s for s in check.settings if s.ignored]
        if check.restart == "fails":
            lines.append(f"{c.description}: {_change(failing[0]) if failing else 'refused'}; "
                         f"Spark refuses the restart with {check.error_class}")
        elif check.restart == "unknown":
            lines.append(f"{c.description}: unknown, because not every check ran here ("
                         + "; ".join(n.split(":")[0] for n in check.verdict.not_checked) + ")")
        elif ignored:
            s = ignored[0]
            ran = (check.rehearsal.shuffle_partitions if check.rehearsed
                   and s.key == SHUFFLE_PARTITIONS_CONF else [])
            key = "" if s.key in c.description else f" of {s.key}"
            lines.append(f"{c.description}: it restarts, but with the value{key} the checkpoint "
                         f"pins, {s.pinned}, not the job's {s.job_value}"
                         + (f"; the rehearsal ran on {', '.join(map(str, ran))} partitions"
                            if ran else "") + f" ({check.status})")
        elif check.status != "ok":
            changed = [r.aspect for r in check.comparison.differences()
                       if r.verdict == "changes"]
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
    lines.append(f"{share} rehearsals agreed with Spark's own check "
                 f"(batch {', '.join(map(str, batches)) or '-'} run again from its logged offsets "
                 "on a scratch copy); the checkpoint's "
                 + (f"{files} files (sidecars included) stayed the same, byte for byte" if unchanged else
                    f"{files} files did NOT all stay the same"))
    return lines


def _change(r) -> str:
    """One difference as a phrase: a store's key or value, or any other aspect."""
    label, _, part = r.aspect.rpartition(": ")
    if part in ("key", "value"):
        return f"the state's {part} in {label} goes from ({r.old}) to ({r.new})"
    return f"{r.aspect} goes from {r.old} to {r.new}"
