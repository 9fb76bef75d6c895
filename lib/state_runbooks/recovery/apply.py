"""Rollback and undo. Rollback (dry run unless asked): copy everything that will be touched into a
backup folder, move (never delete) the planned files, write a JSON journal (sizes and SHA-256 of
every move), and verify that the state loads at the target, the last committed batch. ``undo``
puts the checkpoint back byte for byte; files written since the rollback are moved aside, never
deleted, and an undo stopped halfway resumes.

Every file operation goes through :func:`~state_runbooks.file_access.open_fs`: Hadoop's FileSystem
on classic sessions (any file system Spark reaches; on ``file:`` the ``.crc`` sidecars are moved
explicitly, as plain files), Databricks' ``dbutils.fs`` on Spark Connect. Elsewhere on Spark
Connect nothing can be moved: the apply step refuses before changing anything and prints the plan.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from ..checkpoint import Checkpoint
from ..errors import RunbookError, first_line
from ..file_access import open_fs
from .activity import QUIET_MINUTES, check_activity
from .loads import load_batch
from .plan import Plan, REPLAY_FROM_START, plan_lines
from .structure import FS, is_metadata_file, sidecar_of


MODES = ("diagnose", "rollback", "undo")
BACKUP_MARK = ".recovery-"  # default backup folder: <checkpoint>.recovery-<UTC time>, a sibling
JOURNAL_NAME = "journal.json"


# -- rollback and undo -----------------------------------------------------------------------------
@dataclass
class Outcome:
    mode: str
    dry_run: bool
    applied: bool = False
    refused: str | None = None
    backup_dir: str | None = None
    journal_path: str | None = None
    lines: list[str] = field(default_factory=list)
    verified: bool | None = None


def cannot_modify(ckpt: Checkpoint, mode: str) -> str | None:
    """Why this session cannot move the checkpoint's files (Spark Connect outside Databricks has
    no way to rename a file), else None. Checked before anything changes: never half-apply."""
    if getattr(ckpt.fs, "can_modify", True):
        return None
    return (f"this Spark Connect session cannot move files (no Databricks dbutils.fs): run the "
            f"apply step (mode=\"{mode}\", dry_run=False) on a classic session that reaches "
            f"{ckpt.root}; nothing was changed")


def _stops_here(ckpt: Checkpoint, out: Outcome, steps: list[str]) -> bool:
    """Whether a dry run or a refusal ends here, with its last lines said; a session that cannot
    move files also prints the exact steps, to run on a classic session."""
    if out.dry_run:
        if out.refused:
            out.lines.append(f"and would be refused now: {out.refused}")
        return True
    if out.refused:
        out.lines.append(f"refused: {out.refused}")
        if cannot_modify(ckpt, out.mode):
            out.lines += steps
        return True
    return False


def default_backup_dir(ckpt: Checkpoint, now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    return f"{ckpt.root}{BACKUP_MARK}{stamp}"


def _backup_fs(ckpt: Checkpoint, backup_dir: str) -> FS:
    backup = open_fs(ckpt.spark, backup_dir).raw()
    if backup.root == ckpt.root or backup.root.startswith(ckpt.root + "/"):
        raise RunbookError(f"backup_dir {backup.root} is inside the checkpoint: pick a folder "
                           "outside it (empty: a sibling named after the checkpoint)")
    if not backup.same_file_system(ckpt.fs.raw()):
        raise RunbookError(f"backup_dir {backup.root} is not on the checkpoint's file system "
                           f"({ckpt.root}): moves are renames, so pick a folder there")
    if backup.exists() and backup.list():
        raise RunbookError(f"backup_dir {backup.root} is not empty: pick a new folder (or leave "
                           "backup_dir empty for a fresh one)")
    return backup


def _write_journal(backup: FS, journal: dict, name: str = JOURNAL_NAME) -> str:
    backup.write_bytes(name, (json.dumps(journal, indent=1) + "\n").encode("utf-8"), overwrite=True)
    return backup.uri(name)


def rollback(ckpt: Checkpoint, plan: Plan, dry_run: bool = True, backup_dir: str = "",
             force: bool = False, quiet_minutes: float = QUIET_MINUTES) -> Outcome:
    """Apply a plan: back up, move aside, journal, verify. A dry run only says what it would do."""
    out = Outcome("rollback", dry_run)
    if plan.target_batch_id is None or not plan.moves:
        out.lines.append(f"nothing to do: {plan.note}")
        return out
    activity = check_activity(ckpt, quiet_minutes)
    out.lines.append(f"activity check: {activity.seen}")
    out.refused = cannot_modify(ckpt, "rollback")
    if activity.looks_active and not force and not out.refused:
        out.refused = ("the query looks active: " + "; ".join(activity.reasons) + ". Stop it, "
                       "wait, or pass force=True when you know it is stopped")
    backup_dir = backup_dir or default_backup_dir(ckpt)
    out.backup_dir = backup_dir
    if dry_run:
        out.lines.append(f"dry run: nothing changed. With dry_run=False this copies and then moves "
                         f"{len(plan.moves)} files (with sidecars) to {backup_dir}")
    if _stops_here(ckpt, out, plan_lines(plan, limit=len(plan.moves))):
        return out
    raw = ckpt.fs.raw()
    backup = _backup_fs(ckpt, backup_dir)
    out.backup_dir = backup.root
    inventory = raw.walk()
    moved = [rel for rel in plan.moves if rel in inventory]
    moved += [sidecar_of(rel) for rel in moved if sidecar_of(rel) in inventory]
    kept_copies = [rel for rel in inventory if is_metadata_file(rel) and rel not in moved]
    journal = {
        "format": 1, "runbook": "recover_corrupted_state", "checkpoint": ckpt.root,
        "backup_dir": backup.root, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "target_batch_id": plan.target_batch_id,
        "last_committed_batch_id_before": ckpt.last_committed_batch_id, "status": "started",
        "moves": [_record(raw, inventory, rel, moved_to=f"moved/{rel}") for rel in moved],
        "copies": [_record(raw, inventory, rel) for rel in kept_copies],
        "manifest": [{"path": rel, "size": e.size, "modified_ms": e.modified_ms}
                     for rel, e in inventory.items()],
    }
    out.journal_path = _write_journal(backup, journal)
    for item in journal["moves"] + journal["copies"]:  # 1. copy everything that will be touched
        raw.copy_to(item["path"], backup, item["copy"])
        if backup.sha256(item["copy"]) != item["sha256"]:
            raise RunbookError(f"the backup copy of {item['path']} differs from the original: "
                               f"nothing was moved; see {out.journal_path}")
    for item in journal["moves"]:  # 2. move (never delete)
        raw.move_to(item["path"], backup, item["moved_to"])
        item["moved"] = True
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
    journal["verification"] = _verify_rollback(ckpt, plan.target_batch_id)
    out.verified = journal["verification"]["ok"]
    _write_journal(backup, journal)
    out.applied = True
    out.lines.append(f"moved {len(moved)} files (with sidecars) to {backup.root}/moved after "
                     f"copying them to {backup.root}/copy; journal {out.journal_path}")
    out.lines += journal["verification"]["lines"]
    return out


def _record(raw: FS, inventory: dict, rel: str, moved_to: str | None = None) -> dict:
    item = {"path": rel, "size": inventory[rel].size, "sha256": raw.sha256(rel),
            "copy": f"copy/{rel}"}
    if moved_to:
        item["moved_to"] = moved_to
    return item


def _verify_rollback(ckpt: Checkpoint, target: int) -> dict:
    last = ckpt.last_committed_batch_id
    lines = []
    if target == REPLAY_FROM_START:
        ok = last is None and not ckpt.offset_batch_ids
        lines.append(f"verified: no offsets and no commits left: the query starts from batch 0"
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
    if journal_path:
        fs = open_fs(ckpt.spark, journal_path).raw()
        if fs.is_dir():
            return fs.uri(JOURNAL_NAME) if fs.exists(JOURNAL_NAME) else _no_journal(fs.root)
        if not fs.exists():
            _no_journal(fs.root)
        return fs.root
    parent, name = ckpt.root.rsplit("/", 1)
    siblings = open_fs(ckpt.spark, parent).raw()
    candidates = sorted((e.name for e in siblings.list()
                         if e.is_dir and e.name.startswith(name + BACKUP_MARK)
                         and siblings.exists(f"{e.name}/{JOURNAL_NAME}")), reverse=True)
    if not candidates:
        raise RunbookError(f"no rollback journal next to the checkpoint ({parent}/{name}"
                           f"{BACKUP_MARK}*/{JOURNAL_NAME}): pass journal_path")
    return siblings.uri(f"{candidates[0]}/{JOURNAL_NAME}")


def _no_journal(path: str):
    raise RunbookError(f"journal_path {path} has no {JOURNAL_NAME}: pass the journal file or the "
                       "backup folder of a rollback")


def read_journal(spark, journal_uri: str) -> dict:
    folder, name = journal_uri.rsplit("/", 1)
    try:
        return json.loads(open_fs(spark, folder).raw().read_text(name))
    except (ValueError, KeyError) as exc:
        raise RunbookError(f"{journal_uri} is not a rollback journal: {exc}") from None


def undo(ckpt: Checkpoint, journal_path: str = "", dry_run: bool = True, force: bool = False,
         quiet_minutes: float = QUIET_MINUTES) -> Outcome:
    """Put the checkpoint back as the journal's rollback found it, byte for byte.

    Files written since the rollback (a restarted query's offsets, commits and state) are moved
    aside into ``<backup>/undo-<time>/displaced`` first; then the moved files come back (checked
    against their SHA-256), and the backed-up metadata files are restored where they changed."""
    out = Outcome("undo", dry_run)
    uri = find_journal(ckpt, journal_path)
    journal = read_journal(ckpt.spark, uri)
    out.journal_path, out.backup_dir = uri, journal.get("backup_dir")
    if journal.get("checkpoint") != ckpt.root:
        raise RunbookError(f"journal {uri} is for {journal.get('checkpoint')}, not {ckpt.root}")
    if journal.get("status") == "undone":
        raise RunbookError(f"journal {uri} was already undone ({journal['undo']['at']}): nothing "
                           "to undo")
    raw = ckpt.fs.raw()
    backup = open_fs(ckpt.spark, journal["backup_dir"]).raw()
    manifest = {m["path"]: m for m in journal["manifest"]}
    moves = {m["path"]: m for m in journal["moves"]}
    copies = {m["path"]: m for m in journal["copies"]}
    current = raw.walk()
    # An undo stopped halfway already put some moved files back: they stay where they are.
    back = ({rel for rel, m in moves.items() if rel in current
             and current[rel].size == m["size"] and not backup.exists(m["moved_to"])}
            if journal.get("status") == "undo_started" else set())
    displace = [rel for rel, e in current.items() if rel not in back and (
                rel not in manifest or rel in moves or e.size != manifest[rel]["size"]
                or e.modified_ms != manifest[rel]["modified_ms"])]
    restore_copies = [rel for rel in copies if rel in displace or rel not in current]
    lost = [rel for rel in manifest if rel not in moves and rel not in copies
            and (rel not in current or rel in displace)]
    activity = check_activity(ckpt, quiet_minutes)
    out.lines.append(f"activity check: {activity.seen}")
    out.refused = cannot_modify(ckpt, "undo")
    if out.refused:
        pass
    elif activity.looks_active and not force:
        out.refused = ("the query looks active: " + "; ".join(activity.reasons) + ". Stop it, "
                       "wait, or pass force=True when you know it is stopped")
    elif lost and not force:
        out.refused = (f"{len(lost)} files of the checkpoint as the rollback found it changed or "
                       f"vanished since and have no backup (e.g. {lost[0]}); pass force=True to "
                       "undo the rest anyway")
    out.lines.append(f"journal {uri}: rollback to batch {journal['target_batch_id']} moved "
                     f"{len(moves)} files")
    out.lines.append(f"{len(displace)} files written since then go aside, {len(moves)} moved files "
                     f"come back, {len(restore_copies)} metadata files are restored from the copy")
    if lost:
        out.lines.append(f"{len(lost)} files of the original checkpoint changed or vanished and "
                         f"have no backup (e.g. {lost[0]}): undo cannot bring those back")
    if dry_run:
        out.lines.insert(0, "dry run: nothing changed")
    steps = ([f"  move aside {rel}" for rel in displace]
             + [f"  move back {m['moved_to']} to {rel}" for rel, m in moves.items()
                if rel not in back]
             + [f"  restore {copies[rel]['copy']} to {rel}" for rel in restore_copies])
    if _stops_here(ckpt, out, steps):
        return out
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    undo_dir = f"undo-{stamp}"
    undo_journal = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "displaced": [{"path": rel, "size": current[rel].size,
                                   "moved_to": f"{undo_dir}/displaced/{rel}"} for rel in displace]}
    _write_journal(backup, undo_journal, f"{undo_dir}/{JOURNAL_NAME}")
    journal["status"] = "undo_started"
    journal.setdefault("undo_attempts", []).append(f"{undo_dir}/{JOURNAL_NAME}")
    _write_journal(backup, journal)
    try:
        for item in undo_journal["displaced"]:
            raw.move_to(item["path"], backup, item["moved_to"])
        for rel, item in moves.items():
            if rel not in back:
                _restore(raw, backup, item, from_moved=True)
        for rel in restore_copies:
            _restore(raw, backup, copies[rel], from_moved=False)
    except Exception as exc:  # noqa: BLE001 - a file system error of any kind stops it here
        raise RunbookError(
            f"undo stopped halfway: {first_line(exc)}. Files written since the rollback are in "
            f"{backup.root}/{undo_dir}/displaced (listed in {undo_dir}/{JOURNAL_NAME}); the "
            f"moved files not yet back are in {backup.root}/moved. Fix the cause and run undo "
            f"again with journal_path={uri}: it resumes, keeping what is already back") from None
    after = raw.walk()
    same_files = {rel: e.size for rel, e in after.items()} == {
        rel: m["size"] for rel, m in manifest.items()}
    restored = list(moves.values()) + [copies[rel] for rel in restore_copies]
    same_bytes = all(raw.sha256(item["path"]) == item["sha256"] for item in restored)
    out.verified = same_files and same_bytes and not lost
    journal["status"] = "undone"
    journal["undo"] = {"at": undo_journal["at"], "journal": f"{undo_dir}/{JOURNAL_NAME}",
                       "verified": out.verified}
    backup.write_bytes(JOURNAL_NAME, (json.dumps(journal, indent=1) + "\n").encode("utf-8"),
                       overwrite=True)
    ckpt.refresh()
    out.applied = True
    out.lines.append(f"files written since the rollback are in {backup.root}/{undo_dir}/displaced")
    out.lines.append("verified: every file of the checkpoint before the rollback is back, same "
                     "size, and the restored ones have the same SHA-256" if out.verified else
                     "NOT verified: the checkpoint differs from the journal's manifest")
    return out


def _restore(raw: FS, backup: FS, item: dict, from_moved: bool) -> None:
    rel = item["path"]
    if raw.exists(rel):
        raise RunbookError(f"cannot restore {rel}: a file is in the way (undo stopped; nothing "
                           "was deleted)")
    if from_moved and backup.exists(item["moved_to"]) and \
            backup.sha256(item["moved_to"]) == item["sha256"]:
        backup.move_to(item["moved_to"], raw, rel)
        return
    backup.copy_to(item["copy"], raw, rel)


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise RunbookError(f"mode={mode!r} is not valid: use 'diagnose', 'rollback' or 'undo'")
    return mode
