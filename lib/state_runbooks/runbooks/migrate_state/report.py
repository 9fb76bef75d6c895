"""What the schema change, the mapping, the plan and the outcome look like to the reader, the
other ways where this session cannot migrate, the run summary's keys and findings, and what the
demo showed."""
from __future__ import annotations

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.safety.change import new_checkpoint_lines, summarize_change
from state_runbooks.safety.safekeeping import Outcome

from .apply import MIGRATE, Migrated
from .checks import Checks
from .demo import DemoResult
from .plan import Plan
from .schema_change import SchemaChange


def spark_lines(change: SchemaChange) -> list[str]:
    """What Spark's restart check says of the changed query on the checkpoint as it is."""
    probe = change.spark_check
    if probe is None or not probe.available:
        why = probe.reason if probe else "not asked"
        return [f"Spark's restart check could not run here ({why})"]
    if probe.error_class is None:
        return ["Spark's restart check passes: the changed query restarts on this checkpoint as "
                "it is"]
    return [f"Spark's restart check raises {probe.error_class}: {probe.message}"]


def schema_lines(change: SchemaChange) -> list[str]:
    """Every store, old and new key and value."""
    return [line for store in change.stores for line in store.schema_lines()]


def mapping_lines(change: SchemaChange) -> list[str]:
    """Where every field of a changed store comes from, what is dropped, what is refused."""
    lines = []
    for store in change.changed:
        for part in (store.key, store.value):
            if not part.changed:
                continue
            lines += [f"{store.label} {s.line()} ({s.kind})" for s in part.sources]
            lines += [f"{store.label} {name} dropped (the changed query does not keep it)"
                      for name in part.dropped]
    problems = change.all_problems()
    lines += [f"REFUSED: {p}" for p in problems]
    return lines or ["no store changes: nothing to map"]


def plan_lines(checks: Checks | None, plan: Plan | None) -> list[str]:
    """Rows per store now and after, a few rows before and after, rows that change partition."""
    if plan is None:
        return ["no plan: " + ((checks.refusal() or "the state was not read") if checks else
                               "not asked")]
    where = (f"a new checkpoint at {checks.output_path} (the original untouched)"
             if checks and checks.output_path else "this checkpoint, as a new batch")
    lines = [f"batch {plan.batch_id} migrated as batch {plan.new_batch_id} into {where}"]
    for s in plan.stores:
        if not s.changed:
            lines.append(f"{s.label}: {s.rows} rows, unchanged")
            continue
        moved = f"; {s.moved} move to another partition (their key changes)" if s.moved else ""
        lines.append(f"{s.label}: {s.rows} rows now, {s.expected.rows} after{moved}")
        lines += [f"  before: {before}\n  after:  {after}" for before, after in s.examples]
    lines += [f"REFUSED: {p}" for p in plan.problems]
    return lines


def alternatives_lines(ckpt: Checkpoint, checks: Checks) -> list[str]:
    """One screen for a checkpoint this session cannot migrate: the other ways, changing
    nothing here."""
    why = "; ".join(r.seen for r in checks.requirements
                    if r.name in ("spark_version", "rewriter", "planning", "operators")
                    and not r.ok)
    return ([f"The migration cannot run here ({why}). Nothing was changed.",
             "The other ways:",
             "(a) run this runbook from a classic session (local[N], spark://..., yarn; on "
             "Databricks a cluster in dedicated access mode) with a Spark it is verified on."]
            + new_checkpoint_lines(ckpt, "(b) a new checkpoint:", "for the changed query"))


def summarize(summary, out: Outcome) -> None:
    """The runbook's keys and findings in the run summary (``out``: the migration this run did
    or planned, with the checks, the schema change and the plan it acted on; or the undo)."""
    undo = out.mode == "undo"
    migrated = out if isinstance(out, Migrated) else None
    checks, change, plan = ((migrated.checks, migrated.change, migrated.plan) if migrated else
                            (None, None, None))
    stores = {}
    for store in (change.stores if change and not undo else []):
        planned = plan.store(store.label) if plan else None
        stores[store.label] = {
            "changed": store.changed,
            "schema_before": {"key": store.key_before, "value": store.value_before},
            "schema_after": {"key": store.key_after, "value": store.value_after},
            "rows_before": planned.rows if planned else None,
            "rows_after": planned.expected.rows if planned else None,
            "fields": [{"field": s.field, "source": s.source, "kind": s.kind}
                       for s in store.key.sources + store.value.sources],
            "dropped": store.key.dropped + store.value.dropped}
    summary.details.update({
        "output_path": (checks.output_path or None) if checks and not undo else None,
        "spark_restart_check": change.spark_refuses or "passes" if change and
        change.spark_check and change.spark_check.available and not undo else None,
        "stores": stores,
        "restart_check_after": migrated.restart_check if migrated else None,
        "verified": out.verified if out.applied else None})
    summarize_change(summary, MIGRATE, None if undo else checks, out,
                     bool(checks and checks.spark_cannot),
                     "state migrated to the changed query's schema; Spark's restart check "
                     "passes on it and every store was read back as planned; "
                     + (f"at {checks.output_path}" if checks and checks.output_path else
                        f"journal {out.journal_path}"))


def demo_lines(result: DemoResult) -> list[str]:
    """What each step of the demo found."""
    def verdicts(out) -> list[str]:
        return [f"  {line}" for line in out.lines if line.startswith(("verified", "NOT"))]
    return ([f"at a new location ({result.migrated.output_path}):"] + verdicts(result.migrated)
            + [f"  the original checkpoint unchanged: {result.original_untouched}",
               f"the changed query continued there for {result.batches} batches, and from "
               f"scratch over the same input: {result.keys} keys, {result.same_as_scratch} with "
               f"the same state, {result.only_filled_differ} differing in the filled field "
               "alone", "in place on a copy, with backup and journal:"]
            + verdicts(result.in_place)
            + [f"  undone: the same bytes as before ({result.undone_same_bytes}, "
               f"{result.files} files)"])


def what_this_showed(result: DemoResult) -> list[str]:
    """The demo's closing bullets, computed from its one result."""
    change, plan, moved = result.change, result.plan, result.migrated
    store = change.changed[0]
    fills = [s for s in store.value.sources + store.key.sources if s.kind == "fill"]
    kept = [s for s in store.value.sources + store.key.sources if s.kind != "fill"]
    planned = plan.store(store.label)
    in_place = "verified" if result.in_place.verified else "NOT verified"
    lines = [
        f"the changed query adds {', '.join(s.field for s in fills)} to the state of "
        f"{store.label}: Spark's restart check refuses it on the checkpoint as it is "
        f"({change.spark_refuses})",
        f"the migration maps every old row: {', '.join(s.field for s in kept)} carried over, "
        f"{', '.join(s.line() for s in fills)}; {planned.rows} rows before, "
        f"{planned.expected.rows} after",
        "applied at a new location: Spark's restart check of the changed query passes there "
        f"({moved.restart_check}), every store read back equal to the plan "
        f"({', '.join(d.line('planned', 'read back') for d in moved.stores)}), and the original "
        f"is untouched ({result.original_untouched})",
        f"the changed query continued there for {result.batches} batches: "
        f"{result.same_as_scratch} of {result.keys} keys hold exactly the state a run from "
        f"scratch over the same input holds; the other {result.keys - result.same_as_scratch} "
        f"differ only in the filled field ({', '.join(s.field for s in fills)}), "
        f"{result.still_filled} of them because no event reached them after the migration: "
        "they still hold the fill where the run from scratch holds their events before it (a "
        "window with events on both sides holds those after it only, the same here because "
        "the demo's amounts grow with time)",
        f"in place, with backup and journal ({in_place}), then undone: the same bytes as "
        f"before ({result.undone_same_bytes}, {result.files} files, sidecars included)",
    ]
    return lines
