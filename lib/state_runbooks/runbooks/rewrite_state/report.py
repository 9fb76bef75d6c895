"""What the checks, the plan and the outcome look like to the reader, the alternatives where this
Spark cannot rewrite, and the run summary's keys and findings.
"""
from __future__ import annotations

from state_runbooks.common.spark_settings import (
    COMPRESSION_CODEC_CONF,
    ENCODING_CONF,
    PROVIDER_CONF,
    ROCKSDB_FORMAT_CONF,
    SHUFFLE_PARTITIONS_CONF,
)
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import operator_model
from state_runbooks.safety.change import new_checkpoint_lines, summarize_change
from state_runbooks.safety.safekeeping import Outcome

from .apply import REWRITE, Rewritten
from .checks import Checks
from .demo import DEDUP_ROWS_PER_BATCH, DemoResult
from .plan import Plan

_PINNED = ((PROVIDER_CONF, "provider"),
           (SHUFFLE_PARTITIONS_CONF, "state partitions"),
           (COMPRESSION_CODEC_CONF, "compression"),
           (ROCKSDB_FORMAT_CONF, "RocksDB format"),
           (ENCODING_CONF, "row encoding"))


def pinned_lines(ckpt: Checkpoint) -> list[str]:
    """The operators and their stores, and what the newest offsets entry pins for the state."""
    lines = []
    for op in ckpt.operators():
        family = operator_model(ckpt, op.operator_id).family
        stores = ", ".join(s.store_name for s in op.stores)
        lines.append(f"operator {op.operator_id}: {op.operator_name} ({family}), stores: {stores}")
    conf = ckpt.pinned_conf
    pinned = "; ".join(f"{label} {conf[key].rsplit('.', 1)[-1]}" for key, label in _PINNED
                       if key in conf)
    lines.append(f"pinned by offsets/{ckpt.offset_batch_ids[-1]}: {pinned or 'nothing'}")
    return lines


def plan_lines(checks: Checks, plan: Plan | None) -> list[str]:
    """Provider before and after, where the result goes, and rows per store now and after."""
    if plan is None and checks.spark_cannot:
        return [f"provider: {checks.provider_before} now; no plan: Spark's rewriter cannot "
                "rewrite this checkpoint here (step 2 says why)"]
    if plan is None:
        return [f"provider: {checks.provider_before} now; no plan: the query looks active, so "
                "its state is not read (step 3 says why); stop it first"]
    where = (f"a new checkpoint at {checks.output_path} (the original untouched)"
             if checks.output_path else "this checkpoint, as a new batch")
    lines = [f"provider: {checks.provider_before} now, {checks.provider_after} after; batch "
             f"{plan.batch_id} rewritten as batch {plan.new_batch_id} into {where}"]
    if plan.drop_keys_where:
        lines.append(f"drop: every row of the keys where {plan.drop_keys_where} (in every store "
                     "of the operator where it matches)")
    for s in plan.stores:
        line = f"{s.label}: {s.rows} rows now, {s.rows_after} after"
        if plan.drop_keys_where:
            matched = ("the condition does not apply here" if s.matched is None else
                       f"the condition holds on {s.matched}")
            line += f", {s.dropped} dropped ({matched})"
        lines.append(line)
        lines += [f"  e.g. {e}" for e in s.examples]
    return lines


def alternatives_lines(ckpt: Checkpoint, checks: Checks) -> list[str]:
    """One screen for a checkpoint this session cannot rewrite: the other ways, changing
    nothing here."""
    why = "; ".join(r.seen for r in checks.requirements
                    if r.name in ("spark_version", "rewriter", "operators") and not r.ok)
    return ([f"Spark's state rewriter cannot do this here ({why}). Nothing was changed.",
             "The other ways:",
             "(a) run this runbook from a classic session (local[N], spark://..., yarn; on "
             "Databricks a cluster in dedicated access mode) with a Spark it is verified on."]
            + new_checkpoint_lines(ckpt, "(b) drain and switch:", "with the new provider "
                                   f"({PROVIDER_CONF})")
            + ["(c) keep the state: 03 Inspect state shows what it holds and 06 Monitor state "
               "whether it keeps growing."])


def summarize(summary, out: Outcome) -> None:
    """The runbook's keys and findings in the run summary (``out``: the rewrite this run did or
    planned, with the checks and the plan it acted on; or the undo). After an undo the rows and
    the provider describe the state it restored."""
    undo = out.mode == "undo"
    applied = bool(out.applied and not undo)
    checks, plan = (out.checks, out.plan) if isinstance(out, Rewritten) else (None, None)
    dropping = bool(plan and plan.drop_keys_where)
    rows_ok = getattr(out, "rows_ok", None) if applied else None
    if undo:
        restored = getattr(out, "journal", None) or {}
        summary.details.update({
            "output_path": None, "provider_before": restored.get("provider_after"),
            "provider_after": restored.get("provider_before"),
            "rows_before": restored.get("rows_after"), "rows_after": restored.get("rows_before"),
            "rows_dropped": None, "drop_keys_where": None, "rows_equal": None,
            "rows_as_planned": None})
    else:
        summary.details.update({
            "output_path": checks.output_path or None,
            "provider_before": checks.provider_before,
            "provider_after": checks.provider_after,
            "rows_before": plan.rows_before if plan else None,
            "rows_after": plan.rows_after if plan else None,
            "rows_dropped": plan.rows_dropped if plan else None,
            "drop_keys_where": plan.drop_keys_where if plan else None,
            "rows_equal": rows_ok if not dropping else None,
            "rows_as_planned": rows_ok if dropping else None})
    if not out.applied and out.lines and out.lines[-1].startswith("nothing to do"):
        summary.add_finding("info", "nothing_to_rewrite", out.lines[-1])
    summarize_change(summary, REWRITE, None if undo else checks, out,
                     bool(checks and checks.spark_cannot),
                     f"state rewritten with {checks.provider_after}"
                     + (f", keys where {plan.drop_keys_where} dropped" if dropping else "")
                     + ", every store verified row by row; "
                     + (f"at {checks.output_path}" if checks.output_path else
                        f"journal {out.journal_path}") if checks else "")


def again_lines(result: DemoResult) -> list[str]:
    """The dropped ids arriving again, on the rewritten deduplication and on its copy never
    rewritten: the same input reaches each as a different batch id, since the rewrite took one
    (its new batch carries no input)."""
    here, there = (c.progress[0]["batchId"] if c.progress else None
                   for c in (result.again, result.never))
    same = ("as the same batch on both" if here == there else
            f"as batch {here} here (batch {result.dropped.plan.new_batch_id} is the rewrite) and "
            f"as batch {there} on the copy never rewritten")
    return [f"the source's next rows bring ids 0..{DEDUP_ROWS_PER_BATCH - 1} again, {same}: "
            f"{len(result.again.output)} rows come through here, {len(result.never.output)} on "
            "the copy",
            "  e.g. " + ", ".join(result.again.output[:3])]


def what_this_showed(result: DemoResult) -> list[str]:
    """The demo's lessons, each with the figures of this run: the move and the query continued
    on it beside the copy never rewritten; the drop, what its query let through again (against
    the copy never rewritten), and the undo."""
    moved = result.moved
    checks, plan = moved.checks, moved.plan  # the move as applied, whatever the steps planned
    there, here, dropped = result.there, result.here, result.dropped
    dedup_plan, files = dropped.plan, result.files
    before, after = checks.provider_before, checks.provider_after
    rows = sum(plan.rows_before.values())
    where = "a new checkpoint" if checks.output_path else "this checkpoint"
    lines = [f"the state moved from {before} to {after} with all {rows} rows, verified row by row, "
             f"as batch {plan.new_batch_id} of {where} whose newest offsets entry pins {after}"
             if moved.verified and moved.rows_ok else
             f"the move from {before} to {after} was NOT verified"
             + (" and was undone on its own" if moved.auto_undone else "")]
    ran = result.providers
    lines.append(f"{len(there.progress)} more batches wrote the same {len(there.output)} rows on "
                 f"{ran[0]} as on the copy never rewritten, still on {ran[1]}: the provider "
                 "changed, the results did not" if there.output == here.output else
                 f"{len(there.progress)} more batches wrote DIFFERENT rows on {ran[0]} "
                 f"({len(there.output)}) and on the copy never rewritten, on {ran[1]} "
                 f"({len(here.output)})")
    kept, gone = sum(dedup_plan.rows_after.values()), sum(dedup_plan.rows_dropped.values())
    keys = sum(dedup_plan.dropped_key_counts.values())
    stores = len(dedup_plan.stores)
    lines.append(f"dropping the keys where {dedup_plan.drop_keys_where} removed whole keys: "
                 f"{keys} keys with all their rows in every store of the operator ({stores} "
                 f"store{'s' if stores != 1 else ''} here), {gone} of the deduplication's "
                 f"{gone + kept} rows; the other {kept} "
                 + ("verified row by row" if dropped.verified and dropped.rows_ok else
                    "NOT verified"))
    lines.append(f"without a watermark a deduplication never forgets an id: when the dropped ids "
                 f"came again, {len(result.again.output)} rows came through after the drop "
                 f"and {len(result.never.output)} on the copy never rewritten")
    lines.append(f"undo, from the journal, put back all {files} files of the deduplication "
                 "(sidecars included) as they were, byte for byte"
                 if result.undone.verified and result.same_bytes else
                 f"undo did NOT give back the {files} files as they were")
    return lines
