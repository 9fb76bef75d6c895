"""The verification after Spark's rewriter: the new batch committed, the provider it pins read
back from the newest offsets entry, and every store compared row by row with what the plan says
it must hold (the rows before, without the dropped keys' rows), by key, value and partition.

Each rewritten store is read once and compared with the count and checksums the plan took of the
rows it must hold; only a store that differs is compared row by row (:mod:`state_runbooks.core.
state_diff`, the one comparison every runbook uses).
"""
from __future__ import annotations

from state_runbooks.common.spark_settings import PROVIDER_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import state_units
from state_runbooks.core.state_diff import UnitDiff, diff_frames
from state_runbooks.core.state_reader import read_unit
from state_runbooks.safety.requirements import pinned_kind

from .plan import Plan, key_width_cut, without_dropped


def compare_rows(ckpt: Checkpoint, target: Checkpoint, plan: Plan) -> list[UnitDiff]:
    """Every store of ``target`` at the plan's new batch against ``ckpt`` at the plan's batch
    without the dropped keys (the plan took the figures of those rows already)."""
    planned = {s.label: s for s in plan.stores}
    out = []
    for unit in state_units(ckpt):
        store = planned[unit.label]
        after = read_unit(target, unit, options={"batchId": plan.new_batch_id})
        before = read_unit(ckpt, unit, plan.batch_id)
        keys = plan.dropped_keys.get(unit.operator_id)
        expected = before if keys is None else without_dropped(
            before, keys, key_width_cut(ckpt, unit), plan.dropped_key_counts.get(unit.operator_id))
        out.append(diff_frames(ckpt.spark, unit.label, expected, after, store.columns,
                               expected_figures=store.after))
    return out


def verification_lines(target: Checkpoint, plan: Plan, provider_class: str,
                       checks: list[UnitDiff], dropping: bool) -> tuple[bool, list[str]]:
    """The verdicts, one line each; the first value says whether all of them hold."""
    lines = []
    last, newest = target.last_committed_batch_id, target.offset_batch_ids[-1]
    committed = last == plan.new_batch_id == newest
    lines.append(f"{'verified' if committed else 'NOT verified'}: batch {last} committed "
                 f"(expected {plan.new_batch_id}, the last batch before was {plan.batch_id})")
    conf = target.offsets(newest).conf
    pinned = conf.get(PROVIDER_CONF)
    provider_ok = pinned == provider_class
    lines.append(f"{'verified' if provider_ok else 'NOT verified'}: the newest offsets entry "
                 f"(offsets/{newest}) pins {pinned_kind(conf)} ({pinned})")
    rows_ok = True
    for c in checks:
        rows_ok = rows_ok and c.equal
        what = "the rows before without the dropped keys' rows" if dropping else "the rows before"
        lines.append(f"{'verified' if c.equal else 'NOT verified'}: {c.label}: {c.found} rows, "
                     f"{'equal to' if c.equal else 'DIFFERENT from'} {what} ({c.expected}), "
                     f"every row's key, value and partition checksummed"
                     + ("" if c.equal else f"; row by row: {c.missing} missing, {c.extra} "
                                            "unexpected"))
    return committed and provider_ok and rows_ok, lines
