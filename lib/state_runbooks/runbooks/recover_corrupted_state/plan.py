"""The rollback plan: what a rollback to a batch moves aside (offsets and commits after it, state
files of later versions, SST files only those versions use). Nothing is planned on evidence short
of Spark failing to load the state.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import STATE_FILE_PATTERN, Checkpoint
from state_runbooks.core.fs.base import is_checksum_file

from state_runbooks.safety.diagnosis.diagnose import Diagnosis
from state_runbooks.safety.diagnosis.structure import log_batch_id, zip_ssts

REPLAY_FROM_START = -1  # a resolved rollback target: before the first batch (re-run everything)


# -- the plan --------------------------------------------------------------------------------------
@dataclass
class Plan:
    target_batch_id: int | None  # REPLAY_FROM_START: before batch 0; None: no rollback possible
    moves: list[str]  # files to move aside, relative (their .crc sidecars go with them)
    note: str = ""
    # log entries after the target that the plan leaves where they are on purpose (a damaged
    # commit's offsets entry: the batch runs again), so that they are not taken for a live writer
    leaves: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        return {"target_batch_id": self.target_batch_id, "moves": list(self.moves)}


def plan_rollback(ckpt: Checkpoint, diag: Diagnosis, target_batch_id: int = -1) -> Plan:
    """What a rollback to ``target_batch_id`` moves (-1: the last good batch found)."""
    c, g = diag.last_committed_batch_id, diag.last_good_batch_id
    if diag.unconfirmed:  # the query writes, and no two listings agreed: nothing is known
        return Plan(None, [], "nothing planned: the query looks active and no damage was seen "
                              "twice; stop the query and diagnose again")
    unknown = [p for p in diag.problems if p.damage == "unknown"]
    if unknown:  # a log this runbook cannot read: no plan can be judged safe
        return Plan(None, [], f"nothing planned: {unknown[0].path} is in a format these runbooks "
                              "do not read (see its finding)")
    repair = log_repair(diag)
    if repair is not None:
        if target_batch_id not in (-1, repair.target_batch_id):
            raise RunbookError(f"target_batch_id={target_batch_id}: a damaged log file stops the "
                               f"restart first ({repair.note}); pass -1")
        return repair
    if c is None or diag.retained is None or not diag.operators:
        return Plan(None, [], "nothing to roll back: no committed batch with state")
    if diag.reader_limits and not diag.state_does_not_load:
        if target_batch_id != -1:
            raise RunbookError(f"target_batch_id={target_batch_id}: no rollback on state Spark's "
                               "reader cannot read and nothing shows damaged: restart the query "
                               "as it is, or pass -1")
        return Plan(None, [], "no rollback planned: Spark's reader cannot read part of this "
                              "state, and nothing shows that Spark's store cannot load it")
    lo = diag.retained[0]
    if target_batch_id == -1:
        if g is None:
            if not diag.can_replay_from_start:
                return Plan(None, [], f"no retained batch loads and batch 0 is gone (retained "
                                      f"{lo}..{c}): start a new checkpoint, option (b)")
            target = REPLAY_FROM_START
        else:
            target = g
        if target == c:
            # The committed state loads: a batch in flight is Spark's to re-run, over the same
            # offsets it logged (a sink sees the same batch again). Moving its entry aside would
            # let Spark plan that batch anew, so nothing moves.
            in_flight = [f"offsets/{b}" for b in ckpt.offset_batch_ids if b > c]
            return Plan(c, [], "nothing to move: the committed state loads"
                        + (f"; Spark re-runs batch {c + 1} (in flight) on restart"
                           if in_flight else ""), in_flight)
    else:
        if not lo <= target_batch_id <= c:
            raise RunbookError(f"target_batch_id={target_batch_id} is outside the retained range "
                               f"{lo}..{c}: pass -1 (the last good batch) or a batch in that range")
        if g is None or target_batch_id > g:
            raise RunbookError(f"target_batch_id={target_batch_id}: the state of that batch does "
                               f"not load (last good batch: {g if g is not None else 'none'}); "
                               "pass -1 or an older batch")
        target = target_batch_id
    # The files the diagnosis listed, when it diagnosed this checkpoint: no second listing.
    inventory = (diag.inventory if diag.inventory and diag.root == ckpt.root
                 else ckpt.fs.raw().walk())
    moves = [f"commits/{b}" for b in reversed(ckpt.commit_batch_ids) if b > target]
    moves += [f"offsets/{b}" for b in reversed(ckpt.offset_batch_ids) if b > target]
    if target == REPLAY_FROM_START:
        # Spark refuses to start a query on a state folder that is not empty
        # (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY): everything in state/ goes, and then the
        # state/ folder itself (rollback moves it once only empty folders are left).
        moves += [rel for rel in inventory if rel.startswith("state/") and not is_checksum_file(rel)]
    else:
        moves += state_moves(ckpt, inventory, target + 1)
    moves += _orphan_sidecars(inventory, target)
    note = ("nothing to move: the checkpoint already ends at the target batch" if not moves
            else f"{len(moves)} files to move aside")
    return Plan(target, moves, note)


def log_repair(diag: Diagnosis) -> Plan | None:
    """The minimal repair of damaged log and metadata files (log_damage), or None when there is
    none to make: first those a restart fails on, then (when the state loads) those Spark keeps
    damaged. A metadata file cannot be moved back into shape: it gets no plan, its finding says
    which query id to write."""
    critical = [p for p in diag.problems if p.critical]
    for p in critical:
        if not p.moves:
            return Plan(None, [], f"{p.path}: {p.problem}")
    if not critical and diag.state_does_not_load:
        return None
    fixes = critical or [p for p in diag.problems if p.critical is False and p.moves]
    if not fixes:
        return None
    if any(p.target_batch_id is None for p in fixes):
        return Plan(None, [], f"{fixes[0].path}: {fixes[0].problem} (no earlier committed batch: "
                              "start a new checkpoint)")
    moves = list(dict.fromkeys(m for p in fixes for m in p.moves))
    target = min(p.target_batch_id for p in fixes)
    leaves = [rel for rel in diag.inventory or {} if rel not in moves
              and (batch := log_batch_id(rel)) is not None and batch > target]
    return Plan(target, moves, f"{len(moves)} damaged log file(s) to move aside: "
                + "; ".join(f"{p.path} ({p.problem.split(';', 1)[0]})" for p in fixes), leaves)


def state_moves(ckpt: Checkpoint, inventory: dict, keep_version: int) -> list[str]:
    """State files of versions after ``keep_version``, and SSTs only such versions use."""
    raw = ckpt.fs.raw()
    later = [f for f in ckpt.state_files() if f.version > keep_version]
    moves = [f.path for f in later]
    kept_zips = [f for f in ckpt.state_files() if f.kind == "zip" and f.version <= keep_version]
    if any(f.kind == "zip" for f in later):
        kept_ssts = set()
        for f in kept_zips:
            folder = f.path.rsplit("/", 1)[0]
            kept_ssts |= {f"{folder}/SSTs/{n}" for n, _ in (zip_ssts(raw, f.path) or [])}
        exclusive = set()
        for f in later:
            if f.kind == "zip":
                folder = f.path.rsplit("/", 1)[0]
                exclusive |= {f"{folder}/SSTs/{n}" for n, _ in (zip_ssts(raw, f.path) or [])}
        moves += sorted(rel for rel in exclusive - kept_ssts if rel in inventory)
    return moves


def _orphan_sidecars(inventory: dict, target: int) -> list[str]:
    """Sidecars left behind by a lost file of a later batch (``.5.delta.crc`` without
    ``5.delta``): the restarted query writes that file and its sidecar again, so the old one
    goes aside too, to keep undo exact."""
    out = []
    for rel in inventory:
        if not is_checksum_file(rel):
            continue
        folder, _, name = rel.rpartition("/")
        data = f"{folder}/{name[1:-4]}"
        if data in inventory:
            continue
        log = log_batch_id(data)
        state = STATE_FILE_PATTERN.match(data.rsplit("/", 1)[-1]) if data.startswith("state/") else None
        if (log is not None and log > target) or (state and int(state.group(1)) > target + 1):
            out.append(rel)
    return out


def plan_lines(plan: Plan, limit: int = 12) -> list[str]:
    if plan.target_batch_id is None:
        return [plan.note]
    target = ("before batch 0 (replay everything)" if plan.target_batch_id == REPLAY_FROM_START
              else f"batch {plan.target_batch_id}")
    lines = [f"target: {target}; {plan.note}"]
    shown = plan.moves if len(plan.moves) <= limit else plan.moves[:limit]
    lines += [f"  move {rel}" for rel in shown]
    if len(plan.moves) > limit:
        lines.append(f"  ... and {len(plan.moves) - limit} more")
    if plan.moves:
        lines.append("  (each with its .crc sidecar, where there is one)")
    return lines
