"""The one procedure every runbook that changes a checkpoint follows (05's rollback, 07's
repartition, 09's rewrite, 10's migration), in this order:

1. the checks (each requirement shown; a dry run stops after saying what it would do);
2. the state the change plans from, read at the batch the checks saw committed: a read a live
   writer races is refused with what it wrote (:func:`read_for_plan`);
3. the checks still hold: no batch ran since they listed the checkpoint (:func:`logs_moved`);
4. in place: every file journaled, the metadata files copied and the files it moves aside moved
   (never deleted), each move after a look for a live writer (:mod:`.safekeeping`); at a new
   location: nothing of the checkpoint is touched, the location is marked as made here;
5. the whole checkpoint listed again just before the change itself: any sign of a writer stops it;
6. the change itself (the runbook's Spark call), timed;
7. its verification (the runbook's), and a journal that records what the change wrote (so that
   an undo right after it is not refused for the change's own batch);
8. not verified: undone on its own (in place from the journal, byte for byte; a new location
   removed), and said so.

A runbook supplies only what is its own (:class:`Steps`): what it does, in words, its Spark call
and its verification. Undo (:func:`undo_change`) and the findings a summary gets
(:func:`summarize_change`) are here too, for all of them.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable, Protocol, TypeVar

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.formatting import source_offsets_lines
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import open_fs

from . import safekeeping
from .activity import QUIET_MINUTES, check_activity
from .requirements import Requirement, RequirementList
from .safekeeping import Change, Outcome
from .watch import log_changes, log_listing, signs_line

T = TypeVar("T")
C = TypeVar("C", bound=RequirementList)


# -- 2. and 3.: the state read, and the checks still holding ------------------------------------
def last_committed(ckpt: Checkpoint, checks) -> int | None:
    """The last batch committed when the checks listed the checkpoint (their ``inventory``),
    else as listed now."""
    inventory = getattr(checks, "inventory", None)
    if inventory is None:
        return ckpt.last_committed_batch_id
    found = [int(rel.split("/", 1)[1]) for rel in inventory
             if rel.startswith("commits/") and rel.split("/", 1)[1].isdigit()]
    return max(found, default=None)


def read_for_plan(ckpt: Checkpoint, checks: C, read: Callable[[], T]) -> tuple[T | None, C]:
    """``read()``, and the checks; a read that fails because a live writer moved the logs under
    it (it committed or purged a batch the read looked for) gives None, and the checks'
    ``stopped`` requirement then refuses with that evidence instead of the read's error."""
    try:
        return read(), checks
    except RunbookError:
        inventory = getattr(checks, "inventory", None)
        moved = log_changes(ckpt, inventory) if inventory is not None else []
        if not moved:
            raise
        seen = ("the query looks active: the checkpoint's logs changed while its state was read "
                f"({signs_line(_files_only(moved))}). Stop the query, wait, then run again")
        live = Requirement("stopped", False, seen)
        requirements = tuple(live if r.name == "stopped" else r for r in checks.requirements)
        return None, dataclasses.replace(checks, requirements=requirements)


def _files_only(signs: list[str]) -> list[str]:
    """The signs without Hadoop's ``.crc`` sidecars where the file itself is named too."""
    named = [s for s in signs if "/." not in s.split(" ", 1)[0]]
    return named or signs


def logs_moved(ckpt: Checkpoint, inventory: dict, verb: str) -> str | None:
    """The refusal when a batch ran since the checks listed the checkpoint (``inventory``): its
    logs moved, with what appeared as the evidence; None when they did not."""
    moved = log_changes(ckpt, inventory)
    if not moved:
        return None
    return (f"the query looks active: its offsets or commits changed since the requirements "
            f"were checked ({signs_line(_files_only(moved))}): stop it, check again (run the "
            f"notebook from the top), then {verb}; nothing was changed")


# -- the procedure -------------------------------------------------------------------------------
class Steps(Protocol):
    """What a runbook supplies to change a checkpoint through :func:`apply_change`."""
    change: Change

    def does(self) -> str:
        """What the change does, completing "With dry_run=False this ... then" (e.g. "has
        Spark rewrite the state of batch 3 on 4 partitions as a new batch")."""

    def journal(self) -> dict:
        """The change's own keys for its journal (the action, the figures before)."""

    def call(self, out: Outcome, journal: dict | None) -> str | None:
        """Make the change (the Spark call); its lines go to ``out``, anything an undo needs
        to the ``journal`` (in place). Returns the first line of what failed, else None."""

    def verify(self, out: Outcome, inventory: dict) -> tuple[bool, list[str]]:
        """Whether the result is what the change promised, and the lines that say so
        (``inventory``: the checkpoint as the change found it)."""


class Stopwatch:
    """Where an apply's time went, step by step (``Outcome.seconds``)."""

    def __init__(self, seconds: dict):
        self.seconds, self.started = seconds, time.perf_counter()

    def lap(self, step: str) -> None:
        self.seconds[step] = round(time.perf_counter() - self.started, 2)
        self.started = time.perf_counter()


def apply_change(ckpt: Checkpoint, steps: Steps, checks: RequirementList, out: Outcome, *,
                 backup_dir: str = "", quiet_minutes: float = QUIET_MINUTES,
                 new_location=None, moves: list[str] | None = None,
                 extra_copies: Callable[[dict], list[str]] | None = None,
                 undo_when_not_verified: bool = True,
                 manual_steps: list[str] | None = None) -> Outcome:
    """The procedure (see the module's docstring) for ``steps`` on ``ckpt``, after ``checks``.

    ``out``: the runbook's outcome (``out.dry_run`` says whether to stop after the plan);
    ``new_location``: the file access of a new checkpoint location to write instead of changing
    ``ckpt`` (None: in place); ``moves``: files to move aside before the call (a rollback's);
    ``extra_copies(inventory)``: more files to copy for an undo; ``manual_steps``: what to do by
    hand, printed where this session cannot change files."""
    change, moves = steps.change, list(moves or [])
    clock = Stopwatch(getattr(out, "seconds", {}))
    out.refused = out.refused or checks.refusal()
    in_place = new_location is None
    backup_dir = backup_dir or (safekeeping.default_backup_dir(ckpt, change) if in_place else "")
    out.backup_dir = backup_dir or None
    if out.dry_run:
        keep = ((f"copies and then moves {len(moves)} files (with sidecars) to {backup_dir}"
                 if moves else f"copies the checkpoint's metadata files and journals every file "
                 f"to {backup_dir}") if in_place else
                f"writes to {new_location.root} (the checkpoint is only read)")
        out.lines.append(f"dry run: nothing changed. With dry_run=False this {keep}, then "
                         f"{steps.does()}, and verifies it"
                         + (" (undone on its own if not verified)" if undo_when_not_verified
                            else ""))
    if safekeeping.stops_here(ckpt, out, manual_steps or []):
        return out
    inventory = getattr(checks, "inventory", None)
    inventory = inventory if inventory is not None else ckpt.fs.raw().walk()
    out.refused = logs_moved(ckpt, inventory, change.noun)
    if out.refused:
        safekeeping.stops_here(ckpt, out, [])
        return out
    journal = backup = None
    if in_place:
        backup = safekeeping.open_backup(ckpt, backup_dir)
        out.backup_dir = backup.root
        moved, copies = safekeeping.files_to_keep(inventory, moves)
        copies += extra_copies(inventory) if extra_copies else []
        journal, out.journal_path = safekeeping.safekeep(
            ckpt, backup, change, inventory, moved, copies, steps.journal())
        if safekeeping.stopped_outcome(out, journal):
            return out
        out.lines.append(("moved " + f"{len(moved)} files (with sidecars) to {backup.root}/moved "
                          "after copying them to " if moved else f"backed up: {len(copies)} "
                          "metadata files copied to ") + f"{backup.root}/copy, {len(inventory)} "
                         f"files journaled in {out.journal_path}")
        clock.lap("backup")
    else:
        new_location.mark_made(f"{change.runbook}: a new checkpoint location of {ckpt.root}")
    if not moves:  # moves were each watched; else the whole checkpoint, just before the change
        signs = safekeeping.live_writer_signs(ckpt, inventory)
        if signs:
            return _stopped_before_the_change(out, journal, backup, signs, new_location)
    failed = steps.call(out, journal)
    clock.lap("change")
    out.applied = True
    if failed:
        out.verified = False
        verification = [f"NOT verified: Spark's {change.noun} failed: {failed}"]
    else:
        out.verified, verification = steps.verify(out, inventory)
    out.verification = verification
    out.lines += verification
    clock.lap("verification")
    if journal is not None:
        journal["status"] = "applied"
        journal["verification"] = {"ok": out.verified, "lines": verification}
        journal["written"] = _written(ckpt, inventory)
        safekeeping.write_journal(backup, journal)
    if not out.verified and undo_when_not_verified:
        _undo_on_its_own(ckpt, change, out, new_location, quiet_minutes)
    return out


def _stopped_before_the_change(out: Outcome, journal, backup, signs, new_location) -> Outcome:
    out.stopped = signs_line(signs)
    out.refused = (f"stopped before the change at the first sign of a live writer "
                   f"({out.stopped}): nothing was changed"
                   + (f" in the checkpoint (the backup folder {backup.root} holds only copies "
                      "and the journal)" if backup is not None else ""))
    if journal is not None:
        journal["status"] = "stopped"
        journal["stopped"] = {"signs": out.stopped, "moved_before": 0, "put_back": True,
                              "lines": []}
        safekeeping.write_journal(backup, journal)
    if new_location is not None:
        new_location.remove_tree()
    out.lines.append(f"refused: {out.refused}")
    return out


def _written(ckpt: Checkpoint, inventory: dict) -> dict:
    """The log entries the change added or rewrote (path -> [size, modified ms]): its own
    batch, or a moved source's offsets."""
    now = log_listing(ckpt.fs.raw())
    return {rel: [e.size, e.modified_ms] for rel, e in now.items()
            if rel not in inventory
            or (inventory[rel].size, inventory[rel].modified_ms) != (e.size, e.modified_ms)}


def _undo_on_its_own(ckpt: Checkpoint, change: Change, out: Outcome, new_location,
                     quiet_minutes: float) -> None:
    if new_location is not None:
        removed = new_location.remove_tree()
        out.auto_undone = removed
        out.lines.append(f"undone on its own: {new_location.root} removed" if removed else
                         f"NOT undone: {new_location.root} could not be removed")
        return
    undone = safekeeping.undo(ckpt, change, out.journal_path, dry_run=False, force=True,
                              activity=check_activity(ckpt, quiet_minutes))
    out.auto_undone = bool(undone.applied and undone.verified)
    out.stopped = undone.stopped
    out.lines.append(("undone on its own: " if undone.applied else "NOT undone: ")
                     + undone.lines[-1])


# -- undo --------------------------------------------------------------------------------------
def undo_change(ckpt: Checkpoint, change: Change, journal_path: str = "", output_path: str = "",
                dry_run: bool = True, force: bool = False,
                quiet_minutes: float = QUIET_MINUTES) -> Outcome:
    """Take a change back. In place: the checkpoint as the journal found it, byte for byte (the
    files written since go aside, never deleted); the change's own writes are not read as a
    live query. A new location (``output_path``): removed, after checking it holds this query.
    With no journal to find (none given, none beside the checkpoint): nothing to undo, said."""
    if output_path:
        return _remove_new_location(ckpt, change, output_path, dry_run, force, quiet_minutes)
    try:
        uri = safekeeping.find_journal(ckpt, change, journal_path)
    except RunbookError:
        if journal_path:
            raise
        out = Outcome("undo", dry_run)
        out.lines.append(f"nothing to undo: no {change.noun} journal beside {ckpt.root} (a "
                         f"{change.noun} that was refused or moved nothing writes none)")
        return out
    journal = safekeeping.read_journal(ckpt.spark, uri, change)
    activity = check_activity(ckpt, quiet_minutes, own_writes=journal.get("written"))
    return safekeeping.undo(ckpt, change, uri, dry_run, force, activity)


def _remove_new_location(ckpt: Checkpoint, change: Change, output_path: str, dry_run: bool,
                         force: bool, quiet_minutes: float) -> Outcome:
    out = Outcome("undo", dry_run)
    new = open_fs(ckpt.spark, output_path).raw()
    if not new.exists():
        out.lines.append(f"nothing to undo: {new.root} does not exist")
        return out
    other = Checkpoint(ckpt.spark, new.root)
    if other.query_id != ckpt.query_id or other.root == ckpt.root:
        raise RunbookError(f"{new.root} is not a {change.noun} of {ckpt.root} (another query id, "
                           "or the checkpoint itself): nothing removed")
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
    out.verified = new.remove_tree()
    out.lines.append(f"verified: {new.root} removed; the original {ckpt.root} was never changed"
                     if out.verified else f"NOT verified: {new.root} is still there")
    return out


# -- the way without the change -------------------------------------------------------------------
def new_checkpoint_lines(ckpt: Checkpoint, label: str, with_what: str) -> list[str]:
    """The way every changing runbook offers where it cannot (or should not) change the
    checkpoint: the query on a new checkpoint ``with_what`` it needs, started from the offsets
    the old one logged so that no input is skipped, and what that costs (the state starts
    empty; rebuilding it means replaying the source over the state's horizon)."""
    last = ckpt.last_committed_batch_id
    if last is None:
        return [f"{label} start the query on a new checkpoint {with_what}."]
    first = ckpt.offset_batch_ids[0]
    return ([f"{label} start the query on a new checkpoint {with_what}: no input is skipped if "
             f"it starts after the last committed batch {last} (offsets/{last}):"]
            + source_offsets_lines(ckpt.offsets(last).by_source)
            + ["    Its state starts empty. To rebuild it, start the new query from older offsets "
               f"(the oldest logged: offsets/{first}), replaying the source over the state's "
               "horizon (the watermark delay and window length, the deduplication's reach); the "
               "sources must still hold that input, and the sink sees those rows again."])


# -- the summary ---------------------------------------------------------------------------------
def summarize_change(summary, change: Change, checks: RequirementList | None, out: Outcome | None,
                     spark_cannot: bool = False, applied_text: str = "") -> None:
    """The keys and findings every change gives a run summary (``out``: the change, or the undo,
    this run made; None when it made neither): refused, not possible now, applied and verified
    (``applied_text`` says what), applied and not verified, undone, planned."""
    noun = change.noun
    undo = out is not None and out.mode == "undo"
    applied = bool(out and out.applied and not undo)
    auto_undone = bool(applied and getattr(out, "auto_undone", False))
    summary.details.update({
        "applied": applied and bool(out.verified) and not auto_undone,
        "backup_dir": out.backup_dir if applied or (undo and out.applied) else None,
        "journal_path": out.journal_path if applied or (undo and out.applied) else None,
        "auto_undone": auto_undone,
        "undone": bool(undo and out.applied),
        "requirements": None if checks is None else {
            r.name: {"ok": r.ok, "overridden": r.overridden, "seen": r.seen}
            for r in checks.requirements},
    })
    if out and out.refused and not out.dry_run:
        code = f"{noun}_unavailable" if spark_cannot and not undo else f"{out.mode}_refused"
        summary.add_finding("warning", code, out.refused)
        summary.change_failed = f"{out.mode} refused: {out.refused}"
    elif checks is not None and not checks.ok and not undo:
        summary.add_finding("info", f"{noun}_not_possible_now", checks.refusal())
    elif out and out.refused:  # a dry run that would be refused now
        summary.add_finding("info", f"{noun}_not_possible_now", out.refused)
    if undo and out.applied:
        summary.add_finding("info" if out.verified else "critical", f"{noun}_undone",
                            out.lines[-1])
        if not out.verified:
            summary.change_failed = f"undo not verified: {out.lines[-1]}"
    elif undo and out is not None and out.lines and out.lines[-1].startswith("nothing to undo"):
        summary.add_finding("info", "nothing_to_undo", out.lines[-1])
    elif applied and out.verified:
        summary.add_finding("info", f"{noun}_applied", applied_text or f"{noun} applied")
    elif applied:
        summary.add_finding("warning" if auto_undone else "critical", f"{noun}_not_verified",
                            "; ".join(line for line in out.lines if "NOT" in line)
                            + ("; undone on its own" if auto_undone else ""))
        summary.change_failed = (f"{noun} not verified"
                                 + ("; undone on its own" if auto_undone else ""))
    elif out and out.dry_run and checks is not None and checks.ok:
        summary.add_finding("info", f"{noun}_planned", f"dry run: the {noun} is possible; "
                            "nothing changed")
