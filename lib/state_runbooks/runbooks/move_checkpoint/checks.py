"""What a move requires, each requirement checked on the checkpoint and shown before anything is
written: the last batch committed, the state unchanged by the job (Spark's own check), the
sources (one that moved, a number that matches, a log these runbooks write), where the moved
source starts, where the result goes, and a stopped query."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.named_locations import elsewhere
from state_runbooks.safety import requirements as shared
from state_runbooks.safety.activity import QUIET_MINUTES, check_activity
from state_runbooks.safety.requirements import Requirement, RequirementList

from .start import NewStart, plan_start
from .what_moves import Moves

MOVES = ("source", "location")


def check_move_kind(move: str) -> str:
    move = (move or "").strip().lower()
    if move not in MOVES:
        raise RunbookError(f"move={move!r} is not one of {', '.join(MOVES)}: source (the query "
                           "reads another source from now on) or location (the checkpoint goes "
                           "to another folder)")
    return move


@dataclass(frozen=True)
class Checks(RequirementList):
    """A move's requirements, with what the plan needs: the move, where the result goes, the
    sources that move and where each starts."""
    TITLES: ClassVar[dict[str, str]] = {
        "committed": "the last batch committed, none in flight",
        "state": "the state as the job keeps it (Spark's restart check)",
        "sources": "the sources that move",
        "start": "where each moved source starts",
        "whole": "a whole checkpoint at the place it names",
        "output": "where the result goes",
        "stopped": "the query stopped",
    }
    move: str
    output_path: str  # qualified; "" in place
    moves: Moves | None = field(default=None, repr=False)
    starts: dict = field(default_factory=dict)  # position -> NewStart

    @property
    def in_place(self) -> bool:
        return not self.output_path

    @property
    def movable(self) -> bool:
        """Every requirement met but, perhaps, a stopped query (which force=True lets through):
        the move can be planned and shown."""
        return not any(r.blocks for r in self.requirements if r.name != "stopped")


def _committed(ckpt: Checkpoint) -> Requirement:
    last, newest = ckpt.last_committed_batch_id, (ckpt.offset_batch_ids or [None])[-1]
    if last is None:
        return Requirement("committed", False, "no batch is committed: the query has no state "
                                               "to carry; start it on a new checkpoint")
    if newest != last:
        return Requirement("committed", False,
                           f"batch {newest} is in flight (offsets/{newest}, no commits/{newest}): "
                           "restart the query as it was to finish it, or roll it back with 05 "
                           "first")
    return Requirement("committed", True, f"batch {last} is the last, committed")


def _state(moves: Moves, move: str) -> Requirement:
    if move == "location":
        return Requirement("state", True, "checked after the copy: Spark restarts the job on "
                                          "the result for a batch (the verification)")
    check = moves.spark_check
    if check is None or not check.available:
        return Requirement("state", False, f"unknown: {check.reason if check else 'not run'}; "
                           "without Spark's check a move could carry state the job cannot load")
    if check.error_class:
        return Requirement("state", False,
                           f"Spark's restart check raises {check.error_class}: the job changes "
                           "the state too, so run 10 (migrate state) first, then move")
    return Requirement("state", True, "Spark's restart check passes: the job keeps every "
                                      "operator and store schema as they are")


def _sources(moves: Moves, move: str) -> Requirement:
    differs = moves.count_differs
    if differs is not None:
        return Requirement("sources", False,
                           f"the checkpoint logged {differs.old.split(':')[0]} source(s) and the "
                           f"job reads {differs.new.split(':')[0]} (a source added or removed, "
                           "e.g. by a union): Spark matches offsets by position, so this is a new "
                           "query to it; start it on a new checkpoint (or name sources, offsets "
                           "log format 2)")
    if move == "location":
        changed = [s.label for s in moves.sources if s.verdict.verdict in ("fails", "changes")]
        if changed:
            return Requirement("sources", False,
                               f"{', '.join(changed)} read(s) something else in the job: move "
                               "the location with the job as it ran, then move=source")
        return Requirement("sources", True, "the job reads what the checkpoint logged")
    if moves.named:
        return Requirement("sources", False,
                           "the offsets log is format 2 (named sources): Spark's own source "
                           "evolution moves a source by its name; rehearse the job with 08 "
                           "(a renamed source starts from its own starting options)")
    moving = moves.moving
    if not moving:
        return Requirement("sources", False,
                           "no source moved: the job reads what the checkpoint logged (name "
                           "one with source=<position> to start it again anyway)")
    return Requirement("sources", True, "; ".join(
        f"{s.label}: {s.old.describe()} -> {s.new.describe()} ({s.verdict.verdict} at restart)"
        for s in moving))


def _starts(spark, moves: Moves, start_at: str) -> tuple[dict, Requirement]:
    starts: dict[int, NewStart] = {}
    try:
        for s in moves.moving:
            starts[s.position] = plan_start(spark, s.old, s.new, start_at)
    except RunbookError as exc:
        return {}, Requirement("start", False, str(exc))
    if not starts:
        return {}, Requirement("start", False, "no source moves")
    return starts, Requirement("start", True, "; ".join(
        f"source {p}: {s.says}" for p, s in starts.items()))


def _whole(ckpt: Checkpoint, outside: list) -> Requirement:
    """The schema files operator metadata v2 names (``outside``: those naming another place)
    must exist where the checkpoint is: a partial copy (only some folders) cannot be moved."""
    missing = [n.relative for n in outside if n.relative and not ckpt.fs.exists(n.relative)]
    if missing:
        return Requirement("whole", False, f"a partial copy: {missing[0]} (named by "
                           f"{outside[0].file}) is not here; copy the whole checkpoint folder")
    return Requirement("whole", True, f"every file the checkpoint names is in it"
                       + (f" ({len(outside)} path(s) name the place it was copied from)"
                          if outside else ""))


def check_requirements(spark, ckpt: Checkpoint, moves: Moves, move: str, start_at: str = "",
                       output_path: str = "", force: bool = False,
                       quiet_minutes: float = QUIET_MINUTES) -> Checks:
    """Every requirement of the move, checked."""
    move = check_move_kind(move)
    activity = check_activity(ckpt, quiet_minutes)
    inventory = ckpt.fs.raw().walk()
    reqs = [_committed(ckpt), _state(moves, move), _sources(moves, move)]
    starts = {}
    if move == "source":
        starts, start = _starts(spark, moves, start_at) if reqs[2].ok else (
            {}, Requirement("start", False, "no source moves"))
        reqs.append(start)
    outside = elsewhere(ckpt.fs)
    reqs.append(_whole(ckpt, outside))
    output, requirement = shared.output_location(ckpt, output_path, f"{move} move")
    if not output and requirement.ok:
        requirement = Requirement("output", True, "in place: backed up and journaled first, "
                                                  "the files replaced moved aside")
    if move == "location" and not output and not outside:
        requirement = Requirement("output", False,
                                  "in place, and nothing names another location: give the new "
                                  "folder as output_path")
    reqs.append(requirement)
    reqs.append(shared.stopped(activity, force))
    return Checks(move, output, moves, starts, requirements=tuple(reqs), inventory=inventory)
