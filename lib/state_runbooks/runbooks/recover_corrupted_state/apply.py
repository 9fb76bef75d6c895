"""Rollback and undo, through the procedure every change follows (:mod:`state_runbooks.safety.
change`). Rollback (dry run unless asked): copy everything that will be touched into a backup
folder, move (never delete) the planned files, write a JSON journal (sizes and SHA-256 of every
move), and verify that the state loads at the target, the last committed batch. ``undo`` puts the
checkpoint back byte for byte; files written since the rollback are moved aside, never deleted,
and an undo stopped halfway resumes.

On Spark Connect outside Databricks nothing can be moved: the apply step refuses before changing
anything and prints the plan.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import open_fs
from state_runbooks.core.fs.base import sidecar_of
from state_runbooks.core.state_files import is_schema_file
from state_runbooks.core.state_loads import load_batch
from state_runbooks.safety import requirements as shared
from state_runbooks.safety.activity import QUIET_MINUTES, check_activity
from state_runbooks.safety.change import apply_change, undo_change
from state_runbooks.safety.requirements import Requirement, RequirementList
from state_runbooks.safety.safekeeping import Change, Outcome, cannot_modify
from state_runbooks.safety.watch import LOG_FOLDERS, differences, refuse_if

from .plan import REPLAY_FROM_START, Plan, plan_lines, state_moves

ROLLBACK = Change("rollback", ".recovery-", "recover_corrupted_state",
                  ("diagnose", "rollback", "undo"))


@dataclass(frozen=True)
class Checks(RequirementList):
    """What a rollback requires, checked just before it."""
    TITLES: ClassVar[dict[str, str]] = {
        "files": "this session can move the checkpoint's files",
        "stopped": "the query is stopped",
        "plan_current": "the logs are as the diagnosis and the plan saw them",
    }
    FIRST: ClassVar[tuple[str, ...]] = ("files", "stopped", "plan_current")


def check_rollback(ckpt: Checkpoint, plan: Plan, force: bool = False,
                   quiet_minutes: float = QUIET_MINUTES, diagnosed: dict | None = None) -> Checks:
    """The rollback's requirements: a session that can move files, no live query (unless
    forced), and the logs as the plan (and ``diagnosed``, the diagnosis' listing) saw them."""
    activity = check_activity(ckpt, quiet_minutes)
    inventory = ckpt.fs.raw().walk()
    stale = refuse_if(_not_in_plan(plan, inventory, diagnosed), "the diagnosis")
    moving = cannot_modify(ckpt, "rollback")
    files = Requirement("files", moving is None, moving or "classic session, or Databricks' "
                                                           "dbutils.fs")
    return Checks(requirements=(files, shared.stopped(activity, force),
                                Requirement("plan_current", stale is None,
                                            stale or "no batch ran since")),
                  inventory=inventory)


class _Rollback:
    """What 05 tells the procedure: the moves are the change; then the state must load."""
    change = ROLLBACK

    def __init__(self, ckpt: Checkpoint, plan: Plan):
        self.ckpt, self.plan = ckpt, plan

    def does(self) -> str:
        return (f"leaves batch {self.plan.target_batch_id} the last committed one"
                if self.plan.target_batch_id != REPLAY_FROM_START else
                "leaves no batch, so that the query starts again from its sources")

    def journal(self) -> dict:
        return {"action": f"rollback to batch {self.plan.target_batch_id}",
                "target_batch_id": self.plan.target_batch_id}

    def call(self, out: Outcome, journal: dict | None) -> str | None:
        raw = self.ckpt.fs.raw()
        if self.plan.target_batch_id == REPLAY_FROM_START and raw.is_dir("state"):
            left = raw.walk("state")
            if left:
                raise RunbookError(f"state/ still holds {len(left)} files after the moves (e.g. "
                                   f"{next(iter(left))}): did a query write meanwhile? See "
                                   f"{out.journal_path}")
            raw.move_to("state", _backup(self.ckpt, journal), "moved-empty-folders/state")
            journal["moved_empty_folders"] = ["state"]
        return None

    def verify(self, out: Outcome, inventory: dict) -> tuple[bool, list[str]]:
        self.ckpt.refresh()
        result = _verify_rollback(self.ckpt, self.plan.target_batch_id, self.plan.moves)
        return result["ok"], result["lines"]


def _backup(ckpt: Checkpoint, journal: dict):
    return open_fs(ckpt.spark, journal["backup_dir"]).raw()


def rollback(ckpt: Checkpoint, plan: Plan, dry_run: bool = True, backup_dir: str = "",
             force: bool = False, quiet_minutes: float = QUIET_MINUTES,
             diagnosed: dict | None = None) -> Outcome:
    """Apply a plan through the procedure every change follows: back up, move aside (each move
    watched for a live writer), journal, verify that the state loads at the target. A dry run
    only says what it would do.

    Refused when the offsets or commits changed since the plan (a query ran: new entries after
    the target, or planned ones gone), or since ``diagnosed`` (the listing the diagnosis took,
    ``diag.inventory``) when given; the first sign of a live writer during the moves stops the
    rollback and puts back what it moved (``Outcome.stopped``)."""
    out = Outcome("rollback", dry_run)
    if plan.target_batch_id is None or not plan.moves:
        out.lines.append(f"nothing to do: {plan.note}")
        return out
    checks = check_rollback(ckpt, plan, force, quiet_minutes, diagnosed)
    seen = checks.get("stopped").seen
    out.lines.append("activity check: " + (seen[seen.find("(") + 1:-1] if checks.get(
        "stopped").ok else seen))
    return apply_change(ckpt, _Rollback(ckpt, plan), checks, out, backup_dir=backup_dir,
                        quiet_minutes=quiet_minutes, moves=plan.moves,
                        extra_copies=lambda inventory: _rewritten_by_restart(
                            ckpt, inventory, plan, [m for m in plan.moves if m in inventory]),
                        undo_when_not_verified=False,
                        manual_steps=plan_lines(plan, limit=len(plan.moves)))


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


def undo(ckpt: Checkpoint, journal_path: str = "", dry_run: bool = True, force: bool = False,
         quiet_minutes: float = QUIET_MINUTES) -> Outcome:
    """Put the checkpoint back as the journal's rollback found it, byte for byte.

    Files written since the rollback (a restarted query's offsets, commits and state) are moved
    aside into ``<backup>/undo-<time>/displaced`` first; then the moved files come back (checked
    against their SHA-256), and the backed-up metadata files are restored where they changed.
    With no journal beside the checkpoint (a rollback that moved nothing writes none): nothing to
    undo, said."""
    return undo_change(ckpt, ROLLBACK, journal_path, "", dry_run, force, quiet_minutes)
