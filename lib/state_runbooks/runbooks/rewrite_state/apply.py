"""Rewrite through the one procedure every change follows (:mod:`state_runbooks.safety.change`):
this module says what the rewrite is, calls Spark's rewriter and verifies the result.

In place, the rewrite is a new batch of the checkpoint: Spark only adds files (the new batch's
offsets entry and commit, a snapshot of every store partition), so undo moves them aside and the
checkpoint is back byte for byte. At a new location the checkpoint is only read: the location gets
its logs and the rewritten state; undo removes it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.common.errors import first_line
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import open_fs
from state_runbooks.safety import new_batch as location
from state_runbooks.safety.activity import QUIET_MINUTES
from state_runbooks.safety.change import apply_change, last_committed, undo_change
from state_runbooks.safety.requirements import rocksdb_class
from state_runbooks.safety.safekeeping import Change, Outcome, RewriteOutcome, changed_files
from state_runbooks.safety.state_rewriter import run_rewriter

from .checks import Checks, check_requirements
from .plan import Plan, plan_unless_active
from .transforms import make_transform
from .verify import compare_rows, verification_lines

REWRITE = Change("rewrite", ".rewrite-", "rewrite_state", ("rewrite", "undo"))


@dataclass
class Rewritten(RewriteOutcome):
    """What a rewrite did (or, in a dry run, would do), with what it acted on: the runbook's one
    result, which the summary reads."""
    rows_ok: bool | None = None  # every store as planned, row by row
    checks: Checks | None = field(default=None, repr=False)  # the requirements, as checked
    plan: Plan | None = field(default=None, repr=False)  # None: the state could not be read


class _Rewrite:
    """What 09 tells the procedure: the change, Spark's call, its verification."""
    change = REWRITE

    def __init__(self, ckpt: Checkpoint, checks: Checks, plan: Plan, new_location):
        self.ckpt, self.checks, self.plan, self.new = ckpt, checks, plan, new_location

    def does(self) -> str:
        where = self.checks.output_path or "the checkpoint, as a new batch"
        batch = self.plan.batch_id if self.plan else last_committed(self.ckpt, self.checks)
        return (f"has Spark rewrite the state of batch {batch} into {where} with "
                f"{self.checks.provider_after}, checking every store row by row")

    def journal(self) -> dict:
        checks, plan = self.checks, self.plan
        return {"action": _action(checks, plan), "provider_before": checks.provider_before,
                "provider_after": checks.provider_after, "drop_keys_where": plan.drop_keys_where,
                "batch_id_before": plan.batch_id, "new_batch_id": plan.new_batch_id,
                "rows_before": plan.rows_before, "rows_after": plan.rows_after,
                "rows_dropped": plan.rows_dropped}

    def call(self, out: Outcome, journal: dict | None) -> str | None:
        """The new batch's offsets entry, Spark's rewriter, the new batch's commit."""
        ckpt, checks, plan = self.ckpt, self.checks, self.plan
        moving = checks.provider_after != checks.provider_before
        entry = location.offsets_entry(ckpt, plan.batch_id, rocksdb_class() if moving else None)
        target = self.new if self.new is not None else ckpt.fs.raw()
        try:
            if self.new is not None:
                copied = location.prepare_new_location(ckpt, self.new, self.checks.inventory,
                                                       plan.batch_id, plan.new_batch_id, entry)
                out.lines.append(f"written to {self.new.root}: {copied} log and metadata files "
                                 f"of the checkpoint, and offsets/{plan.new_batch_id} pinning "
                                 f"{checks.provider_after}")
            else:
                target.write_bytes(f"offsets/{plan.new_batch_id}", entry)
            with location.read_location(ckpt, checks.inventory, plan.batch_id,
                                        checks.provider_before, rocksdb_class()) as read:
                ran = run_rewriter(ckpt.spark, read, plan.batch_id, target.root,
                                   plan.new_batch_id,
                                   make_transform(ckpt, plan, checks.provider_before))
            location.commit_new_batch(ckpt, target, plan.batch_id, plan.new_batch_id)
            called = f" (the transform ran for {len(ran.stores)} stores)" if ran.stores else ""
            out.lines.append(f"Spark's rewriter wrote batch {plan.new_batch_id} from batch "
                             f"{plan.batch_id}{called}, committed")
            return None
        except Exception as exc:  # noqa: BLE001 - Py4J wraps whatever Spark raised
            return first_line(exc)

    def verify(self, out: Rewritten, inventory: dict) -> tuple[bool, list[str]]:
        ckpt, checks, plan = self.ckpt, self.checks, self.plan
        target = Checkpoint(ckpt.spark, self.new.root) if self.new is not None else ckpt.refresh()
        stores = compare_rows(ckpt, target, plan)
        provider = rocksdb_class() if checks.provider_after == "rocksdb" else ckpt.provider_class
        ok, lines = verification_lines(target, plan, provider, stores, bool(plan.dropped_keys))
        out.rows_ok = all(s.equal for s in stores)
        changed = changed_files(ckpt, inventory)
        what = ("no file that was there before changed (Spark only added files)"
                if self.new is None else
                f"the original checkpoint is untouched ({len(inventory)} files, sidecars "
                f"included, as listed before)")
        lines.append(f"verified: {what}" if not changed else
                     f"NOT verified: {len(changed)} files of the checkpoint changed (e.g. "
                     f"{changed[0]})")
        return ok and not changed, lines


def _action(checks: Checks, plan: Plan) -> str:
    parts = []
    if checks.provider_after != checks.provider_before:
        parts.append(f"move from {checks.provider_before} to {checks.provider_after}")
    if plan.drop_keys_where:
        parts.append(f"drop the keys where {plan.drop_keys_where}")
    if checks.output_path:
        parts.append(f"write to {checks.output_path}")
    return "; ".join(parts)


def rewrite(ckpt: Checkpoint, target_provider: str = "", drop_keys_where: str = "",
            output_path: str = "", dry_run: bool = True, backup_dir: str = "",
            force: bool = False, quiet_minutes: float = QUIET_MINUTES,
            checks: Checks | None = None, plan: Plan | None = None,
            allow_empty_state: bool = False) -> Rewritten:
    """Rewrite the checkpoint's state as a new batch (dry run unless asked). ``checks`` and
    ``plan`` are taken here unless given: a notebook shows them first and passes them on."""
    checks = checks or check_requirements(ckpt, target_provider, drop_keys_where, output_path,
                                          force, quiet_minutes)
    if plan is None and checks.refusal() is None:
        plan, checks = plan_unless_active(ckpt, checks, drop_keys_where, allow_empty_state)
    out = Rewritten("rewrite", dry_run, provider_before=checks.provider_before,
                    provider_after=checks.provider_after, output_path=checks.output_path or None,
                    checks=checks, plan=plan)
    if plan is not None and checks.refusal() is None and plan.nothing_to_do(checks):
        out.lines.append(f"nothing to do: drop_keys_where={plan.drop_keys_where!r} matches no "
                         "key, and nothing else is asked; nothing was changed (no new batch, no "
                         "backup)")
        return out
    if plan is None:
        out.refused = checks.refusal() or "no plan: the state could not be read"
    new_location = open_fs(ckpt.spark, checks.output_path).raw() if checks.output_path else None
    return apply_change(ckpt, _Rewrite(ckpt, checks, plan, new_location), checks, out,
                        backup_dir=backup_dir, quiet_minutes=quiet_minutes,
                        new_location=new_location)


def undo(ckpt: Checkpoint, journal_path: str = "", output_path: str = "", dry_run: bool = True,
         force: bool = False, quiet_minutes: float = QUIET_MINUTES) -> Outcome:
    """In place: put the checkpoint back as the rewrite found it, byte for byte (the files Spark
    wrote, and those of a query restarted since, go aside into the backup folder, never deleted).
    A new location (``output_path``): remove it, after checking it holds this query."""
    return undo_change(ckpt, REWRITE, journal_path, output_path, dry_run, force, quiet_minutes)
