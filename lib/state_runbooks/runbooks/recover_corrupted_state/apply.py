"""Rollback and undo, on the shared safekeeping machinery (:mod:`state_runbooks.safety.safekeeping`).
Rollback (dry run unless asked): copy everything that will be touched into a backup folder, move
(never delete) the planned files, write a JSON journal (sizes and SHA-256 of every move), and
verify that the state loads at the target, the last committed batch. ``undo`` puts the checkpoint
back byte for byte; files written since the rollback are moved aside, never deleted, and an undo
stopped halfway resumes.

On Spark Connect outside Databricks nothing can be moved: the apply step refuses before changing
anything and prints the plan.
"""
from __future__ import annotations

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs.base import sidecar_of
from state_runbooks.core.state_files import is_schema_file
from state_runbooks.core.state_loads import load_batch
from state_runbooks.safety import safekeeping
from state_runbooks.safety.activity import QUIET_MINUTES, check_activity
from state_runbooks.safety.safekeeping import (
    Change,
    Outcome,
    active_refusal,
    cannot_modify,
    files_to_keep,
    open_backup,
    safekeep,
    stopped_outcome,
    stops_here,
    write_journal,
)
from state_runbooks.safety.watch import LOG_FOLDERS, differences, refuse_if

from .plan import REPLAY_FROM_START, Plan, plan_lines, state_moves

MODES = ("diagnose", "rollback", "undo")
BACKUP_MARK = ".recovery-"  # default backup folder: <checkpoint>.recovery-<UTC time>, a sibling
ROLLBACK = Change("rollback", BACKUP_MARK, "recover_corrupted_state")


# -- rollback and undo -----------------------------------------------------------------------------
def default_backup_dir(ckpt: Checkpoint, now: float | None = None) -> str:
    return safekeeping.default_backup_dir(ckpt, ROLLBACK, now)


def rollback(ckpt: Checkpoint, plan: Plan, dry_run: bool = True, backup_dir: str = "",
             force: bool = False, quiet_minutes: float = QUIET_MINUTES,
             diagnosed: dict | None = None) -> Outcome:
    """Apply a plan: back up, move aside, journal, verify. A dry run only says what it would do.

    Refused when the offsets or commits changed since the plan (a query ran: new entries after
    the target, or planned ones gone), or since ``diagnosed`` (the listing the diagnosis took,
    ``diag.inventory``) when given; each move is checked first for a live writer, and the first
    sign of one stops the rollback and puts back what it moved (``Outcome.stopped``)."""
    out = Outcome("rollback", dry_run)
    if plan.target_batch_id is None or not plan.moves:
        out.lines.append(f"nothing to do: {plan.note}")
        return out
    activity = check_activity(ckpt, quiet_minutes)
    out.lines.append(f"activity check: {activity.seen}")
    out.refused = cannot_modify(ckpt, "rollback")
    if activity.looks_active and not force and not out.refused:
        out.refused = active_refusal(activity)
    backup_dir = backup_dir or default_backup_dir(ckpt)
    out.backup_dir = backup_dir
    if dry_run:
        out.lines.append(f"dry run: nothing changed. With dry_run=False this copies and then moves "
                         f"{len(plan.moves)} files (with sidecars) to {backup_dir}")
    if stops_here(ckpt, out, plan_lines(plan, limit=len(plan.moves))):
        return out
    raw = ckpt.fs.raw()
    backup = open_backup(ckpt, backup_dir)
    out.backup_dir = backup.root
    inventory = raw.walk()
    out.refused = refuse_if(_not_in_plan(plan, inventory, diagnosed), "the diagnosis")
    if out.refused:
        out.lines.append(f"refused: {out.refused}")
        return out
    moved, copies = files_to_keep(inventory, plan.moves)
    copies += _rewritten_by_restart(ckpt, inventory, plan, moved)
    journal, out.journal_path = safekeep(
        ckpt, backup, ROLLBACK, inventory, moved, copies,
        {"action": f"rollback to batch {plan.target_batch_id}",
         "target_batch_id": plan.target_batch_id})
    if stopped_outcome(out, journal):
        return out
    if plan.target_batch_id == REPLAY_FROM_START and raw.is_dir("state"):
        left = raw.walk("state")
        if left:
            raise RunbookError(f"state/ still holds {len(left)} files after the moves (e.g. "
                               f"{next(iter(left))}): did a query write meanwhile? See "
                               f"{out.journal_path}")
        raw.move_to("state", backup, "moved-empty-folders/state")
        journal["moved_empty_folders"] = ["state"]
    journal["status"] = "applied"
    ckpt.refresh()
    journal["verification"] = _verify_rollback(ckpt, plan.target_batch_id, plan.moves)
    out.verified = journal["verification"]["ok"]
    write_journal(backup, journal)
    out.applied = True
    out.lines.append(f"moved {len(moved)} files (with sidecars) to {backup.root}/moved after "
                     f"copying them to {backup.root}/copy; journal {out.journal_path}")
    out.lines += journal["verification"]["lines"]
    return out


def _rewritten_by_restart(ckpt: Checkpoint, inventory: dict, plan: Plan,
                          moved: list[str]) -> list[str]:
    """State files the plan leaves in place although they belong to batches after its target (a
    log repair rolls back the logs only): the restart writes those versions again, and the SSTs
    only they use may then be cleaned up, so they are copied for an undo."""
    if plan.target_batch_id is None or plan.target_batch_id < 0:
        return []
    later = [rel for rel in state_moves(ckpt, inventory, plan.target_batch_id + 1)
             if rel not in moved]
    return later + [sidecar_of(rel) for rel in later if sidecar_of(rel) in inventory]


def _not_in_plan(plan: Plan, inventory: dict, diagnosed: dict | None) -> list[str]:
    """How the logs differ from what the plan (and the diagnosis' listing) knew: entries after
    the target that it does not move, planned entries that are gone."""
    planned = {rel for rel in plan.moves if rel.startswith(("offsets/", "commits/"))}
    now = {rel for rel in inventory if rel.startswith(("offsets/", "commits/"))
           and rel.split("/", 1)[1].isdigit()}
    signs = [f"{rel} appeared" for rel in sorted(now - planned - set(plan.leaves))
             if int(rel.split("/", 1)[1]) > plan.target_batch_id]
    signs += [f"{rel} went away" for rel in sorted(planned - now)]
    if diagnosed is not None:
        signs += [s for s in differences(diagnosed, inventory, LOG_FOLDERS) if s not in signs]
    return signs


def _verify_rollback(ckpt: Checkpoint, target: int, moves: list[str] = ()) -> dict:
    last = ckpt.last_committed_batch_id
    lines = []
    schemas = [rel for rel in moves if is_schema_file(rel)]
    if schemas and last == target:
        # Spark's reader needs the schema file to load the state; the restart writes it again
        # from the query's plan, so here only the logs can be checked.
        lines.append(f"verified: the last committed batch is {last}; {schemas[0]} was moved "
                     "aside and the restart writes it again from the query, so the state load "
                     "is proven by that restart, not here")
        return {"ok": True, "last_committed_batch_id": last, "loads": None, "lines": lines}
    if target == REPLAY_FROM_START:
        ok = last is None and not ckpt.offset_batch_ids
        lines.append("verified: no offsets and no commits left: the query starts from batch 0"
                     if ok else f"NOT verified: the checkpoint still has commits up to {last}")
        return {"ok": ok, "last_committed_batch_id": last, "loads": None, "lines": lines}
    loads, why = load_batch(ckpt, target) if last == target else (False, "")
    ok = last == target and loads
    lines.append(f"verified: the last committed batch is {last} and its state loads" if ok else
                 f"NOT verified: last committed batch {last} (expected {target}); loads: {loads} "
                 f"{why}")
    return {"ok": ok, "last_committed_batch_id": last, "loads": loads, "lines": lines}


def find_journal(ckpt: Checkpoint, journal_path: str = "") -> str:
    """The journal to undo: ``journal_path`` (a journal file or its backup folder), else the
    newest ``<checkpoint>.recovery-*/journal.json`` next to the checkpoint."""
    return safekeeping.find_journal(ckpt, ROLLBACK, journal_path)


def read_journal(spark, journal_uri: str) -> dict:
    return safekeeping.read_journal(spark, journal_uri, ROLLBACK)


def undo(ckpt: Checkpoint, journal_path: str = "", dry_run: bool = True, force: bool = False,
         quiet_minutes: float = QUIET_MINUTES) -> Outcome:
    """Put the checkpoint back as the journal's rollback found it, byte for byte.

    Files written since the rollback (a restarted query's offsets, commits and state) are moved
    aside into ``<backup>/undo-<time>/displaced`` first; then the moved files come back (checked
    against their SHA-256), and the backed-up metadata files are restored where they changed."""
    return safekeeping.undo(ckpt, ROLLBACK, journal_path, dry_run, force,
                            check_activity(ckpt, quiet_minutes))


def check_mode(mode: str) -> str:
    return safekeeping.check_mode(mode, MODES)
