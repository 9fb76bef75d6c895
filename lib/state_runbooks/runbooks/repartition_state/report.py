"""What the checks, the forecast and the outcome look like to the reader, the alternatives where
this Spark cannot repartition, and the run summary's keys and findings.
"""
from __future__ import annotations

from state_runbooks.common.spark_settings import SHUFFLE_PARTITIONS_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.safety.change import new_checkpoint_lines, summarize_change
from state_runbooks.safety.safekeeping import Outcome

from .apply import REPARTITION, Repartitioned
from .checks import Checks
from .demo import DemoResult
from .forecast import UnitScan


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
    return ([f"Spark's offline repartition is not available here ({why}). Nothing was changed.",
             "The ways to run this query on another partition count:",
             "(a) run this runbook from a classic session with a Spark it is verified on that "
             "reaches the checkpoint (spark_master local[N], spark://..., yarn; on Databricks a "
             "cluster in dedicated access mode): the state is rewritten and the query continues "
             "on it."]
            + new_checkpoint_lines(ckpt, "(b)", f"with {SHUFFLE_PARTITIONS_CONF}="
                                                f"{checks.num_partitions_after}")
            + ["(c) keep the count: 03 Inspect state shows whether the state is skewed at all, "
               "and 06 Monitor state whether it keeps growing."])


def summarize(summary, out: Outcome) -> None:
    """The runbook's keys and findings in the run summary (``out``: the repartition this run did
    or planned, with the checks and the forecast it acted on; or the undo). After an undo the
    counts describe the state it restored."""
    undo = out.mode == "undo"
    applied = bool(out.applied and not undo)
    checks, scans = (out.checks, out.before) if isinstance(out, Repartitioned) else (None, None)
    if undo:
        restored = getattr(out, "journal", None) or {}
        before, after = (restored.get("num_partitions_after"),
                         restored.get("num_partitions_before"))
    else:
        before, after = checks.num_partitions_before, checks.num_partitions_after
    summary.details.update({
        "num_partitions_before": before, "num_partitions_after": after,
        "forecast": [{"unit": s.label, "rows": s.rows, "rows_per_partition": s.per_partition,
                      "rows_per_partition_after": s.after} for s in scans or []],
        "rows_equal": getattr(out, "rows_equal", None) if applied else None,
    })
    summarize_change(summary, REPARTITION, None if undo else checks, out,
                     bool(checks and checks.spark_cannot),
                     f"state on {after} partitions, rows equal; journal "
                     f"{out.journal_path}")


def what_this_showed(result: DemoResult) -> list[str]:
    """The demo's lessons, each with the figures of this run: the placement rule and the
    forecast, the requirements (both from the step the demo started from), the repartition and
    its verification, the query continued on the new count, and the undo."""
    checks, scans = result.planned.checks, result.planned.before
    done, continued, undone = result.done, result.continued, result.undone
    files = result.files
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
        held += (f'; only "{Checks.TITLES["stopped"]}" did not, and the demo went on with '
                 "force=True: it is seconds old")
    elif unmet:
        held += "; not met: " + ", ".join(f'"{Checks.TITLES[n]}"' for n in unmet)
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
    lines.append(f"undo, from the journal, put back all {files} files (sidecars included) as "
                 "they were, byte for byte"
                 if undone.verified and result.same_bytes else
                 f"undo did NOT give back the {files} files as they were")
    return lines
