"""Rewrite, safely: check, back up and journal when writing in place (the shared safekeeping
machinery), look for a live writer just before Spark's call, call Spark's rewriter, verify every
store row by row, and undo on its own when the verification fails.

In place, the rewrite is a new batch of the checkpoint: Spark only adds files (the new batch's
offsets entry and commit, a snapshot of every store partition), so undo moves them aside and the
checkpoint is back byte for byte. At a new location the checkpoint is only read: the location gets
its logs and the rewritten state; undo removes it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError, first_line
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import open_fs
from state_runbooks.safety import safekeeping
from state_runbooks.safety.activity import QUIET_MINUTES, check_activity
from state_runbooks.safety.change import logs_moved
from state_runbooks.safety.safekeeping import (
    Change,
    Outcome,
    files_to_keep,
    live_writer_signs,
    open_backup,
    safekeep,
    write_journal,
)
from state_runbooks.safety.watch import differences, signs_line

from . import location
from .checks import Checks, check_requirements, rocksdb_class
from .plan import Plan, plan_unless_active
from .rewriter import run_rewriter
from .transforms import make_transform
from .verify import compare_rows, verification_lines

MODES = ("rewrite", "undo")
BACKUP_MARK = ".rewrite-"  # default backup folder: <checkpoint>.rewrite-<UTC time>
REWRITE = Change("rewrite", BACKUP_MARK, "rewrite_state")


@dataclass
class Rewritten(Outcome):
    provider_before: str | None = None
    provider_after: str | None = None
    output_path: str | None = None  # the new location; None: in place
    rows_ok: bool | None = None  # every store as planned, row by row
    auto_undone: bool = False  # the verification failed (or Spark did) and undo ran
    verification: list[str] = field(default_factory=list)
    seconds: dict = field(default_factory=dict)  # step -> wall seconds


def check_mode(mode: str) -> str:
    return safekeeping.check_mode(mode, MODES)


def _lap(started: float) -> float:
    return round(time.perf_counter() - started, 2)


def rewrite(ckpt: Checkpoint, target_provider: str = "", drop_keys_where: str = "",
            output_path: str = "", dry_run: bool = True, backup_dir: str = "",
            force: bool = False, quiet_minutes: float = QUIET_MINUTES,
            checks: Checks | None = None, plan: Plan | None = None) -> Rewritten:
    """Rewrite the checkpoint's state as a new batch (dry run unless asked). ``checks`` and
    ``plan`` are taken here unless given: a notebook shows them first and passes them on."""
    started = time.perf_counter()
    checks = checks or check_requirements(ckpt, target_provider, drop_keys_where, output_path,
                                          force, quiet_minutes)
    out = Rewritten("rewrite", dry_run, provider_before=checks.provider_before,
                    provider_after=checks.provider_after, output_path=checks.output_path or None)
    out.refused = checks.refusal()
    where = checks.output_path or "the checkpoint, as a new batch"
    backup_dir = "" if checks.output_path else (
        backup_dir or safekeeping.default_backup_dir(ckpt, REWRITE))
    out.backup_dir = backup_dir or None
    batch = ckpt.last_committed_batch_id
    if dry_run:
        safety = (f"copies the checkpoint's metadata files and journals every file to "
                  f"{backup_dir}, " if backup_dir else
                  "writes the checkpoint's logs there (the original is only read), ")
        out.lines.append(f"dry run: nothing changed. With dry_run=False this {safety}has Spark "
                         f"rewrite the state of batch {batch} into {where} with "
                         f"{checks.provider_after}, and verifies every store row by row (undone "
                         "on its own if not verified)")
    if safekeeping.stops_here(ckpt, out, []):
        return out
    inventory = checks.inventory if checks.inventory is not None else ckpt.fs.raw().walk()
    out.refused = logs_moved(ckpt, inventory, "rewrite")
    if out.refused:
        safekeeping.stops_here(ckpt, out, [])
        return out
    if plan is None:
        plan, checks = plan_unless_active(ckpt, checks, drop_keys_where)
        if plan is None:  # a live writer moved the logs under the plan's read
            out.refused = checks.refusal()
            safekeeping.stops_here(ckpt, out, [])
            return out
    out.seconds["checks and plan"] = _lap(started)
    started = time.perf_counter()
    journal = backup = None
    if not checks.output_path:
        backup = open_backup(ckpt, backup_dir)
        out.backup_dir = backup.root
        _, copies = files_to_keep(inventory, [])
        journal, out.journal_path = safekeep(
            ckpt, backup, REWRITE, inventory, [], copies,
            {"action": _action(checks, plan), "provider_before": checks.provider_before,
             "provider_after": checks.provider_after, "drop_keys_where": plan.drop_keys_where,
             "batch_id_before": batch, "new_batch_id": plan.new_batch_id,
             "rows_before": plan.rows_before, "rows_dropped": plan.rows_dropped})
        out.lines.append(f"backed up: {len(copies)} metadata files copied to {backup.root}/copy, "
                         f"{len(inventory)} files journaled in {out.journal_path}")
        out.seconds["backup"] = _lap(started)
    # Just before Spark's call, the whole checkpoint again: any file a query wrote (or its
    # maintenance deleted) since the listing the checks took stops the rewrite here.
    signs = live_writer_signs(ckpt, inventory)
    if signs:
        out.stopped = signs_line(signs)
        out.refused = (f"stopped before Spark's call at the first sign of a live writer "
                       f"({out.stopped}): nothing was changed")
        if journal is not None:
            journal["status"] = "stopped"
            journal["stopped"] = {"signs": out.stopped, "moved_before": 0, "put_back": True,
                                  "lines": []}
            write_journal(backup, journal)
        out.lines.append(f"refused: {out.refused}")
        return out
    started = time.perf_counter()
    spark_failed = _call_spark(ckpt, checks, plan, inventory, out)
    out.seconds["spark"] = _lap(started)
    started = time.perf_counter()
    out.applied = True
    target = Checkpoint(ckpt.spark, checks.output_path) if checks.output_path else ckpt.refresh()
    if spark_failed:
        out.verified = False
        out.verification = [f"NOT verified: the rewrite failed: {spark_failed}"]
    else:
        out.verified = _verify(ckpt, target, checks, plan, inventory, journal, out)
    out.seconds["verification"] = _lap(started)
    out.lines += out.verification
    if journal is not None:
        journal["status"] = "applied"
        journal["verification"] = {"ok": out.verified, "lines": out.verification}
        write_journal(backup, journal)
    if not out.verified:
        _undo_failed(ckpt, checks, out, quiet_minutes)
    return out


def _action(checks: Checks, plan: Plan) -> str:
    parts = []
    if checks.provider_after != checks.provider_before:
        parts.append(f"move from {checks.provider_before} to {checks.provider_after}")
    if plan.drop_keys_where:
        parts.append(f"drop the keys where {plan.drop_keys_where}")
    if checks.output_path:
        parts.append(f"write to {checks.output_path}")
    return "; ".join(parts)


def _call_spark(ckpt: Checkpoint, checks: Checks, plan: Plan, inventory: dict,
                out: Rewritten) -> str | None:
    """The new batch's offsets entry, Spark's rewriter, the new batch's commit; the first line
    of what failed, else None."""
    spark = ckpt.spark
    moving = checks.provider_after != checks.provider_before
    entry = location.offsets_entry(ckpt, plan.batch_id, rocksdb_class() if moving else None)
    target = checks.output_path or ckpt.root
    staging = None
    try:
        if checks.output_path:
            copied = location.prepare_new_location(ckpt, target, inventory, plan.batch_id,
                                                   plan.new_batch_id, entry)
            out.lines.append(f"written to {target}: {copied} log and metadata files of the "
                             f"checkpoint, and offsets/{plan.new_batch_id} pinning "
                             f"{checks.provider_after}")
        else:
            ckpt.fs.raw().write_bytes(f"offsets/{plan.new_batch_id}", entry)
        read = ckpt.root
        if checks.provider_before == "hdfs":
            staging = location.prepare_staging(ckpt, inventory, plan.batch_id,
                                               location.offsets_entry(ckpt, plan.batch_id,
                                                                      rocksdb_class()))
            read = staging
        ran = run_rewriter(spark, read, plan.batch_id, target, plan.new_batch_id,
                           make_transform(ckpt, plan, checks.provider_before))
        location.commit_new_batch(ckpt, target, plan.batch_id, plan.new_batch_id)
        called = f" (the transform ran for {len(ran.stores)} stores)" if ran.stores else ""
        out.lines.append(f"Spark's rewriter wrote batch {plan.new_batch_id} from batch "
                         f"{plan.batch_id}{called}, committed")
        return None
    except Exception as exc:  # noqa: BLE001 - Py4J wraps whatever Spark raised
        return first_line(exc)
    finally:
        if staging is not None:
            location.remove_folder(spark, staging)


def _verify(ckpt: Checkpoint, target: Checkpoint, checks: Checks, plan: Plan, inventory: dict,
            journal: dict | None, out: Rewritten) -> bool:
    lines = out.verification
    stores = compare_rows(ckpt, target, plan)
    ok, found = verification_lines(
        target, plan, rocksdb_class() if checks.provider_after == "rocksdb" else
        ckpt.provider_class, stores, bool(plan.dropped_keys))
    out.rows_ok = all(c.ok for c in stores)
    lines += found
    if journal is not None:
        changed = safekeeping.unchanged_since(ckpt, journal)
        what = "no file that was there before changed (Spark only added files)"
    else:
        changed = differences(inventory, ckpt.fs.raw().walk())
        what = f"the original checkpoint is untouched ({len(inventory)} files as listed before)"
    lines.append(f"verified: {what}" if not changed else
                 f"NOT verified: {len(changed)} files of the checkpoint changed (e.g. {changed[0]})")
    return ok and not changed


def _undo_failed(ckpt: Checkpoint, checks: Checks, out: Rewritten, quiet_minutes: float) -> None:
    if checks.output_path:
        removed = location.remove_folder(ckpt.spark, checks.output_path)
        out.auto_undone = removed
        out.lines.append(f"undone on its own: {checks.output_path} removed" if removed else
                         f"NOT undone: {checks.output_path} could not be removed")
        return
    undone = safekeeping.undo(ckpt, REWRITE, out.journal_path, dry_run=False, force=True,
                              activity=check_activity(ckpt, quiet_minutes))
    out.auto_undone = bool(undone.applied and undone.verified)
    out.stopped = undone.stopped
    out.lines.append(("undone on its own: " if undone.applied else "NOT undone: ")
                     + undone.lines[-1])


def undo(ckpt: Checkpoint, journal_path: str = "", output_path: str = "", dry_run: bool = True,
         force: bool = False, quiet_minutes: float = QUIET_MINUTES) -> Outcome:
    """In place: put the checkpoint back as the rewrite found it, byte for byte (the files Spark
    wrote, and those of a query restarted since, go aside into the backup folder, never deleted).
    A new location (``output_path``): remove it, after checking it holds this query."""
    if not output_path:
        return safekeeping.undo(ckpt, REWRITE, journal_path, dry_run, force,
                                check_activity(ckpt, quiet_minutes))
    out = Outcome("undo", dry_run)
    new = open_fs(ckpt.spark, output_path).raw()
    if not new.exists():
        raise RunbookError(f"output_path {new.root} does not exist: nothing to undo")
    other = Checkpoint(ckpt.spark, new.root)
    if other.query_id != ckpt.query_id or other.root == ckpt.root:
        raise RunbookError(f"{new.root} is not a rewrite of {ckpt.root} (another query id, or "
                           "the checkpoint itself): nothing removed")
    activity = check_activity(other, quiet_minutes)
    if activity.looks_active and not force:
        out.refused = safekeeping.active_refusal(activity)
        out.lines.append(f"refused: {out.refused}")
        return out
    if dry_run:
        out.lines.append(f"dry run: with dry_run=False this removes {new.root} (the original "
                         f"{ckpt.root} was never changed)")
        return out
    out.applied = True
    out.verified = location.remove_folder(ckpt.spark, new.root) and not new.exists()
    out.lines.append(f"verified: {new.root} removed; the original {ckpt.root} was never changed"
                     if out.verified else f"NOT verified: {new.root} is still there")
    return out
