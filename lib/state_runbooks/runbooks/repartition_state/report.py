"""What the checks, the forecast and the outcome look like to the reader, the alternatives where
this Spark cannot repartition, and the run summary's keys and findings.
"""
from __future__ import annotations

from state_runbooks.common.formatting import source_offsets_lines
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.safety import requirements
from state_runbooks.safety.safekeeping import Outcome

from .apply import Repartitioned
from .checks import Checks
from .demo import Continued
from .forecast import UnitScan

_REQUIREMENT_TITLES = {
    "spark_version": "Spark 4.2 or later",
    "api": "the repartition API in this session",
    "committed": "the last batch is committed",
    "new_count": "a count other than the current one",
    "provider": "a provider Spark's repartition supports",
    "operators": "operators Spark's repartition supports",
    "stopped": "the query is stopped",
}


def requirement_lines(checks: Checks, skip: tuple[str, ...] = (),
                      only: tuple[str, ...] | None = None) -> list[str]:
    """One line per requirement (``skip`` some, or show ``only`` some), then the verdict (not
    with ``only``)."""
    return requirements.requirement_lines(checks, _REQUIREMENT_TITLES, skip, only)


def _counts(counts: list[int], limit: int = 16) -> str:
    shown = ", ".join(map(str, counts[:limit]))
    return f"[{shown}{', ...' if len(counts) > limit else ''}]"


def forecast_lines(scans: list[UnitScan] | None, before: int, after: int) -> list[str]:
    """Rows per partition now and after, per unit, and whether the new count spreads them."""
    if scans is None:
        return ["no forecast: a query wrote to the checkpoint while its state was read (step 3 "
                "says what it wrote); stop it first"]
    lines = []
    for s in scans:
        skew = f"{s.skew:.2f}" if s.skew is not None else "n/a"
        lines.append(f"{s.label}: {s.rows} rows; now on {before} partitions {_counts(s.per_partition)}"
                     f", largest/mean {skew}")
        if not s.rows:
            lines.append("  no rows: nothing to spread")
        elif s.after is None:
            lines.append("  no forecast: no placement rule reproduces where Spark put these rows "
                         f"({', '.join(f'{k}: {v} misplaced' for k, v in s.misplaced.items()) or 'no key'})")
        else:
            lines.append(f"  placement: pmod(hash({s.rule}), n) reproduces the partition of every "
                         f"row now; after, on {after}: {_counts(s.after)}, largest/mean "
                         f"{s.skew_after:.2f}")
            lines.append("  " + _helps(s))
    return lines


def _helps(s: UnitScan) -> str:
    now, then = max(s.per_partition), max(s.after)
    if then < now:
        return (f"helps: the largest partition goes from {now} to {then} rows "
                f"({then / now:.0%} of today's)")
    return (f"does not help this store: its largest partition keeps {then} rows (one key, or keys "
            "that hash together, stay in one partition whatever the count)")


def alternatives_lines(ckpt: Checkpoint, checks: Checks) -> list[str]:
    """One screen for a session without Spark's offline repartition: the other ways, changing
    nothing here."""
    why = "; ".join(r.seen for r in checks.requirements if r.name in ("spark_version", "api")
                    and not r.ok)
    last = ckpt.last_committed_batch_id
    n = checks.num_partitions_after
    lines = [f"Spark's offline repartition is not available here ({why}). Nothing was changed.",
             "The ways to run this query on another partition count:",
             "(a) run this runbook from a classic session with Spark 4.2 or later that reaches the "
             "checkpoint (spark_master local[N], spark://..., yarn; on Databricks a cluster in "
             "dedicated access mode): the state is rewritten and the query continues on it.",
             f"(b) start a new checkpoint with spark.sql.shuffle.partitions={n}: no input is "
             f"skipped if the new query starts after the last committed batch {last} "
             f"(offsets/{last}):" if last is not None else
             f"(b) start a new checkpoint with spark.sql.shuffle.partitions={n}."]
    if last is not None:
        lines += source_offsets_lines(ckpt.offsets(last).sources)
        first = ckpt.offset_batch_ids[0]
        lines += [
            "    Its state starts empty. To rebuild it, start the new query from older offsets "
            f"(the oldest logged: offsets/{first}) far enough back to cover the state's reach "
            "(the watermark delay and window length, the deduplication horizon); the sources "
            "must still hold that input, and the sink sees those rows again.",
            "(c) keep the count: 03 Inspect state shows whether the state is skewed at all, and "
            "06 Monitor state whether it keeps growing."]
    return lines


def summarize(summary, checks: Checks, out: Outcome | None,
              scans: list[UnitScan] | None = None) -> None:
    """The runbook's keys and findings in the run summary (``out``: the repartition, or the undo,
    this run did; None when it did neither)."""
    undo = out is not None and out.mode == "undo"
    applied = bool(out and out.applied and not undo)
    auto_undone = bool(applied and getattr(out, "auto_undone", False))
    summary.details.update({
        "num_partitions_before": checks.num_partitions_before,
        "num_partitions_after": checks.num_partitions_after,
        "requirements": {r.name: {"ok": r.ok, "overridden": r.overridden, "seen": r.seen}
                         for r in checks.requirements},
        "forecast": [{"unit": s.label, "rows": s.rows, "rows_per_partition": s.per_partition,
                      "rows_per_partition_after": s.after} for s in scans or []],
        "applied": applied and not auto_undone,
        "backup_dir": out.backup_dir if applied or (undo and out.applied) else None,
        "journal_path": out.journal_path if applied or (undo and out.applied) else None,
        "rows_equal": getattr(out, "rows_equal", None) if applied else None,
        "auto_undone": auto_undone,
        "undone": bool(undo and out.applied),
    })
    if out and out.refused and not out.dry_run:
        code = "repartition_unavailable" if checks.spark_cannot and not undo else \
            f"{out.mode}_refused"
        summary.add_finding("warning", code, out.refused)
        summary.change_failed = f"{out.mode} refused: {out.refused}"
    elif not checks.ok and not undo:
        summary.add_finding("info", "repartition_not_possible_now", checks.refusal())
    if undo and out.applied:
        summary.add_finding("info" if out.verified else "critical", "repartition_undone",
                            out.lines[-1])
        if not out.verified:
            summary.change_failed = f"undo not verified: {out.lines[-1]}"
    elif applied and out.verified:
        summary.add_finding("info", "repartition_applied",
                            f"state on {checks.num_partitions_after} partitions, rows equal; "
                            f"journal {out.journal_path}")
    elif applied:
        summary.add_finding("warning" if auto_undone else "critical", "repartition_not_verified",
                            "; ".join(line for line in out.lines if "NOT verified" in line)
                            + ("; undone on its own" if auto_undone else ""))
        summary.change_failed = ("repartition not verified"
                                 + ("; undone on its own" if auto_undone else ""))
    elif out and out.dry_run and checks.ok:
        summary.add_finding("info", "repartition_planned",
                            f"dry run: {checks.num_partitions_before} -> "
                            f"{checks.num_partitions_after} partitions possible; nothing changed")


def what_this_showed(checks: Checks, scans: list[UnitScan], done: Repartitioned,
                     continued: Continued, undone: Outcome, same_bytes: bool,
                     files: int) -> list[str]:
    """The demo's lessons, each with the figures of this run: the placement rule and the
    forecast (``scans``), the requirements (``checks``), the repartition and its verification
    (``done``), the query continued on the new count (``continued``), and the undo (``undone``;
    ``same_bytes``: the checkpoint's ``files`` checksums equal the ones taken before)."""
    n0, n1 = checks.num_partitions_before, checks.num_partitions_after
    rows = sum(s.rows for s in scans)
    placed = [s for s in scans if s.after is not None]
    if len(scans) == 1 and placed:
        s = scans[0]
        rule = (f"Spark's rule pmod(hash({s.rule}), n) placed all {rows} state rows where they "
                f"were on {n0} partitions, so the layout on {n1} was computed before anything "
                f"changed: {_counts(s.per_partition)} -> {_counts(s.after)}")
    else:
        rule = (f"Spark's rule pmod(hash(key), n) placed the rows of {len(placed)} of "
                f"{len(scans)} stores ({rows} rows) where they were on {n0} partitions, so "
                f"their layout on {n1} was computed before anything changed")
    unmet = [r.name for r in checks.requirements if not r.ok]
    held = (f"{len(checks.requirements) - len(unmet)} of {len(checks.requirements)} requirements "
            "held before Spark was called")
    if unmet == ["stopped"]:
        held += (f'; only "{_REQUIREMENT_TITLES["stopped"]}" did not, and the demo went on with '
                 "force=True: it is seconds old")
    elif unmet:
        held += "; not met: " + ", ".join(f'"{_REQUIREMENT_TITLES[n]}"' for n in unmet)
    lines = [rule, held]
    after = sum(s.rows for s in done.after) if done.after else None
    if done.verified and done.rows_equal:
        lines.append(f"the state moved from {n0} to {n1} partitions with every one of its "
                     f"{after} rows (checksums of every key and value equal), journaled "
                     "and backed up first")
    else:
        lines.append(f"the repartition from {n0} to {n1} partitions was NOT verified"
                     + (" and was undone on its own" if done.auto_undone else ""))
    parts = ", ".join(map(str, sorted(continued.partitions)))
    lines.append(f"the restarted query ran on {parts} partitions, the count now pinned in the "
                 "checkpoint, and its state "
                 + ("equals that of a copy never repartitioned" if continued.same_state else
                    "DIFFERS from that of a copy never repartitioned"))
    lines.append(f"undo, from the journal, put back all {files} files as they were, byte for byte"
                 if undone.verified and same_bytes else
                 f"undo did NOT give back the {files} files as they were")
    return lines
