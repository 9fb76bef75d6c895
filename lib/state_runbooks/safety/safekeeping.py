"""Changing a checkpoint so that nothing is lost: back up first, move never delete, journal every
file, undo byte for byte: the engine under the one procedure every runbook that changes a
checkpoint follows (:mod:`.change`); each says what its change is (``Change``).

A change starts with :func:`safekeep`: a JSON journal in a backup folder next to the checkpoint
lists every file of the checkpoint as it was (size, time), the files about to be moved aside and
the small metadata files a restarted query could rewrite (both copied first, with their SHA-256).
:func:`undo` puts the checkpoint back as the journal found it: files written since then (by Spark,
or by a restarted query) go aside into ``<backup>/undo-<time>/displaced``, never deleted; the moved
files come back; the copies are restored where their file changed. An undo stopped halfway resumes.

Every file operation goes through :func:`~state_runbooks.core.fs.open_fs`: Hadoop's FileSystem
on classic sessions (on ``file:`` the ``.crc`` sidecars are handled as plain files), Databricks'
``dbutils.fs`` on Spark Connect; elsewhere on Spark Connect nothing can be moved, and the change is
refused before anything happens.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError, first_line
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import open_fs
from state_runbooks.core.fs.base import is_checksum_file, sidecar_of

from .watch import GuardedMoves, Watch

JOURNAL_NAME = "journal.json"
# Files a restarted query may write again in place: backed up by every rollback so undo can restore
# them (state files, offsets and commits are never rewritten in place by Spark).
_METADATA_FILE = re.compile(r"^(metadata|sources/.*|state/\d+/_metadata/.*"
                            r"|state/\d+/\d+/(.+/)?_metadata/.*)$")


@dataclass(frozen=True)
class Change:
    """What kind of change a runbook makes and a journal records, in the runbook's words."""
    noun: str  # "rollback", "repartition": in messages ("the rollback found it", ...)
    mark: str  # backup folders are siblings named <checkpoint><mark><UTC time>
    runbook: str  # the runbook that wrote the journal
    modes: tuple[str, ...] = ()  # the runbook's ``mode`` values: the change's own, then undo

    def check_mode(self, mode: str) -> str:
        """A runbook's ``mode`` parameter, one of its ``modes``, else a one-line error."""
        if mode not in self.modes:
            choices = ", ".join(f"'{m}'" for m in self.modes[:-1]) + f" or '{self.modes[-1]}'"
            raise RunbookError(f"mode={mode!r} is not valid: use {choices}")
        return mode


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
    # The signs of a live writer that stopped the change halfway (what it had moved was put back:
    # then ``refused`` says so too, and nothing was changed; if putting back failed,
    # ``applied`` and ``verified=False`` say that a partial change is left, see the journal).
    stopped: str | None = None
    verification: list[str] = field(default_factory=list)  # the lines the verification said
    auto_undone: bool = False  # not verified (or the change failed), and undone on its own
    seconds: dict = field(default_factory=dict)  # step -> wall seconds: where an apply's time went
    journal: dict | None = field(default=None, repr=False)  # an undo's: what the change recorded


@dataclass
class RewriteOutcome(Outcome):
    """The outcome of a change Spark's state rewriter writes."""
    provider_before: str | None = None
    provider_after: str | None = None
    output_path: str | None = None  # the new location; None: in place


def stopped_outcome(out: Outcome, journal: dict) -> bool:
    """Whether ``safekeep`` stopped at a live writer; then ``out`` says what happened (refused when
    everything moved went back, applied and not verified when something did not)."""
    stop = journal.get("stopped")
    if not stop:
        return False
    out.stopped = stop["signs"]
    moved = stop["moved_before"]
    if stop["put_back"]:
        out.refused = (f"stopped at the first sign of a live writer ({stop['signs']}): the "
                       f"{moved} file(s) moved so far were put back, the same bytes: nothing was "
                       "changed. Stop the query and run again")
        out.lines.append(f"refused: {out.refused}")
    else:
        out.applied, out.verified = True, False
        out.lines.append(f"NOT verified: stopped at the first sign of a live writer "
                         f"({stop['signs']}) after moving {moved} file(s), and not all of them "
                         f"went back: a partial change is left; see {journal['backup_dir']}")
    out.lines += stop["lines"]
    return True


# -- the checks before a change --------------------------------------------------------------------
def cannot_modify(ckpt: Checkpoint, mode: str) -> str | None:
    """Why this session cannot move the checkpoint's files (Spark Connect outside Databricks has
    no way to rename a file), else None. Checked before anything changes: never half-apply."""
    if getattr(ckpt.fs, "can_modify", True):
        return None
    return (f"this Spark Connect session cannot move files (no Databricks dbutils.fs): run the "
            f"apply step (mode=\"{mode}\", dry_run=False) on a classic session that reaches "
            f"{ckpt.root}; nothing was changed")


def active_refusal(activity) -> str:
    """The refusal for an active-looking query (``activity``: an activity guard's answer)."""
    return ("the query looks active: " + "; ".join(activity.reasons) + ". Stop it, wait, or pass "
            "force=True when you know it is stopped")


def stops_here(ckpt: Checkpoint, out: Outcome, steps: list[str]) -> bool:
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


# -- backup and journal ----------------------------------------------------------------------------
def default_backup_dir(ckpt: Checkpoint, change: Change, now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    return f"{ckpt.root}{change.mark}{stamp}"


def open_backup(ckpt: Checkpoint, backup_dir: str):
    """The backup folder's file access, checked: outside the checkpoint, on its file system (moves
    are renames), and empty."""
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


def write_journal(backup, journal: dict, name: str = JOURNAL_NAME) -> str:
    backup.write_bytes(name, (json.dumps(journal, indent=1) + "\n").encode("utf-8"), overwrite=True)
    return backup.uri(name)


def _record(raw, inventory: dict, rel: str, moved_to: str | None = None) -> dict:
    item = {"path": rel, "size": inventory[rel].size, "sha256": raw.sha256(rel),
            "copy": f"copy/{rel}"}
    if moved_to:
        item["moved_to"] = moved_to
    return item


def safekeep(ckpt: Checkpoint, backup, change: Change, inventory: dict, moves: list[str],
             copies: list[str], details: dict) -> tuple[dict, str]:
    """Journal the checkpoint as it is (``inventory``: its files, as ``walk`` lists them), copy
    (and check) ``moves`` and ``copies`` into ``backup``, then move ``moves`` aside. Returns the
    journal, its status ``started``, and its path; ``details`` go into it as they are (the
    change's own keys). The caller verifies its change and writes the journal again."""
    raw = ckpt.fs.raw()
    journal = {
        "format": 1, "runbook": change.runbook, "change": change.noun, "checkpoint": ckpt.root,
        "backup_dir": backup.root, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **details,
        "last_committed_batch_id_before": ckpt.last_committed_batch_id, "status": "started",
        "moves": [_record(raw, inventory, rel, moved_to=f"moved/{rel}") for rel in moves],
        "copies": [_record(raw, inventory, rel) for rel in copies],
        "manifest": [{"path": rel, "size": e.size, "modified_ms": e.modified_ms}
                     for rel, e in inventory.items()],
    }
    uri = write_journal(backup, journal)
    for item in journal["moves"] + journal["copies"]:  # 1. copy everything that will be touched
        raw.copy_to(item["path"], backup, item["copy"])
        if backup.sha256(item["copy"]) != item["sha256"]:
            raise RunbookError(f"the backup copy of {item['path']} differs from the original: "
                               f"nothing was moved; see {uri}")
    # 2. move (never delete), each move after a check for a live writer since ``inventory``
    mover = GuardedMoves(ckpt, inventory, backup, "stopped")
    for item in journal["moves"]:
        if not mover.move_out(item["path"], item["moved_to"]):
            break
        item["moved"] = True
    if journal["moves"] and not mover.stopped:
        mover.finished()
    if mover.stopped:
        put_back, lines = mover.put_back()
        journal["status"] = "stopped"
        journal["stopped"] = {"signs": mover.stopped, "moved_before": len(mover.done),
                              "put_back": put_back, "lines": lines,
                              "checks": mover.watch.checks}
        for item in journal["moves"]:
            item["moved"] = item.get("moved", False) and not put_back
        write_journal(backup, journal)
    return journal, uri


def live_writer_signs(ckpt: Checkpoint, inventory: dict) -> list[str]:
    """Signs that a query wrote to the checkpoint since ``inventory`` (a walk): the whole tree
    listed again, compared file by file."""
    return Watch(ckpt, inventory).all_signs()


def unchanged_since(ckpt: Checkpoint, journal: dict) -> list[str]:
    """Files of the journal's manifest (not moved by the change) that are gone or differ in size
    or time now: a change that only adds files leaves this empty."""
    manifest = {m["path"]: (m["size"], m["modified_ms"]) for m in journal["manifest"]}
    return changed_files(ckpt, manifest, {m["path"] for m in journal["moves"]})


def changed_files(ckpt: Checkpoint, listed: dict, moved: set = frozenset()) -> list[str]:
    """Files of a listing (path -> (size, modified ms), or a ``walk``) other than ``moved``
    that are gone or differ in size or time now."""
    current = ckpt.fs.raw().walk()

    def same(rel, then) -> bool:
        size, modified = (then.size, then.modified_ms) if hasattr(then, "size") else then
        now = current.get(rel)
        return now is not None and now.size == size and now.modified_ms == modified
    return [rel for rel, then in listed.items() if rel not in moved and not same(rel, then)]


# -- undo ------------------------------------------------------------------------------------------
def find_journal(ckpt: Checkpoint, change: Change, journal_path: str = "") -> str:
    """The journal to undo: ``journal_path`` (a journal file or its backup folder), else the
    newest ``<checkpoint><mark>*/journal.json`` next to the checkpoint."""
    if journal_path:
        fs = open_fs(ckpt.spark, journal_path).raw()
        if fs.is_dir():
            return fs.uri(JOURNAL_NAME) if fs.exists(JOURNAL_NAME) else \
                _no_journal(fs.root, change)
        if not fs.exists():
            _no_journal(fs.root, change)
        return fs.root
    parent, name = ckpt.root.rsplit("/", 1)
    siblings = open_fs(ckpt.spark, parent).raw()
    candidates = sorted((e.name for e in siblings.list()
                         if e.is_dir and e.name.startswith(name + change.mark)
                         and siblings.exists(f"{e.name}/{JOURNAL_NAME}")), reverse=True)
    if not candidates:
        raise RunbookError(f"no {change.noun} journal next to the checkpoint ({parent}/{name}"
                           f"{change.mark}*/{JOURNAL_NAME}): pass journal_path")
    return siblings.uri(f"{candidates[0]}/{JOURNAL_NAME}")


def _no_journal(path: str, change: Change):
    raise RunbookError(f"journal_path {path} has no {JOURNAL_NAME}: pass the journal file or the "
                       f"backup folder of a {change.noun}")


def read_journal(spark, journal_uri: str, change: Change) -> dict:
    folder, name = journal_uri.rsplit("/", 1)
    try:
        return json.loads(open_fs(spark, folder).raw().read_text(name))
    except (ValueError, KeyError) as exc:
        raise RunbookError(f"{journal_uri} is not a {change.noun} journal: {exc}") from None


def undo(ckpt: Checkpoint, change: Change, journal_path: str, dry_run: bool, force: bool,
         activity) -> Outcome:
    """Put the checkpoint back as the journal's change found it, byte for byte.

    ``journal_path``: a journal or its backup folder, empty for the newest next to the checkpoint;
    ``activity``: the caller's activity guard's answer for this checkpoint."""
    noun = change.noun
    out = Outcome("undo", dry_run)
    uri = find_journal(ckpt, change, journal_path)
    journal = read_journal(ckpt.spark, uri, change)
    out.journal_path, out.backup_dir, out.journal = uri, journal.get("backup_dir"), journal
    if journal.get("checkpoint") != ckpt.root:
        raise RunbookError(f"journal {uri} is for {journal.get('checkpoint')}, not {ckpt.root}")
    if journal.get("status") == "undone":
        out.lines.append(f"nothing to undo: journal {uri} was already undone "
                         f"({journal['undo']['at']})")
        return out
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
    out.lines.append(f"activity check: {activity.seen}")
    out.refused = cannot_modify(ckpt, "undo")
    if out.refused:
        pass
    elif activity.looks_active and not force:
        out.refused = active_refusal(activity)
    elif lost and not force:
        out.refused = (f"{len(lost)} files of the checkpoint as the {noun} found it changed or "
                       f"vanished since and have no backup (e.g. {lost[0]}); pass force=True to "
                       "undo the rest anyway")
    out.lines.append(f"journal {uri}: {journal.get('action', noun)} moved "
                     f"{len(moves)} files")
    out.lines.append(f"{len(displace)} files written since then go aside, {len(moves)} moved files "
                     f"come back, {len(restore_copies)} copied files are restored from the copy")
    if lost:
        out.lines.append(f"{len(lost)} files of the original checkpoint changed or vanished and "
                         f"have no backup (e.g. {lost[0]}): undo cannot bring those back")
    if dry_run:
        out.lines.insert(0, "dry run: nothing changed")
    steps = ([f"  move aside {rel}" for rel in displace]
             + [f"  move back {m['moved_to']} to {rel}" for rel, m in moves.items()
                if rel not in back]
             + [f"  restore {copies[rel]['copy']} to {rel}" for rel in restore_copies])
    if stops_here(ckpt, out, steps):
        return out
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    undo_dir = f"undo-{stamp}"
    undo_journal = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "displaced": [{"path": rel, "size": current[rel].size,
                                   "moved_to": f"{undo_dir}/displaced/{rel}"} for rel in displace]}
    write_journal(backup, undo_journal, f"{undo_dir}/{JOURNAL_NAME}")
    status_before = journal.get("status")
    journal["status"] = "undo_started"
    journal.setdefault("undo_attempts", []).append(f"{undo_dir}/{JOURNAL_NAME}")
    write_journal(backup, journal)
    # Each move after a check for a live writer since ``current``; stopped: put back, newest first.
    mover = GuardedMoves(ckpt, current, backup, f"{undo_dir}/stopped")
    try:
        _undo_moves(mover, backup, undo_journal, moves, back, copies, restore_copies)
    except Exception as exc:  # noqa: BLE001 - a file system error of any kind stops it here
        raise RunbookError(
            f"undo stopped halfway: {first_line(exc)}. Files written since the {noun} are in "
            f"{backup.root}/{undo_dir}/displaced (listed in {undo_dir}/{JOURNAL_NAME}); the "
            f"moved files not yet back are in {backup.root}/moved. Fix the cause and run undo "
            f"again with journal_path={uri}: it resumes, keeping what is already back") from None
    if mover.stopped:
        put_back, lines = mover.put_back()
        journal["status"] = status_before if put_back else "undo_started"
        journal.setdefault("undo_stopped", []).append(
            {"attempt": f"{undo_dir}/{JOURNAL_NAME}", "signs": mover.stopped,
             "moved_before": len(mover.done), "put_back": put_back, "lines": lines})
        write_journal(backup, journal)
        stopped_outcome(out, {"backup_dir": backup.root, "stopped": journal["undo_stopped"][-1]})
        return out
    after = raw.walk()
    same_files = {rel: e.size for rel, e in after.items()} == {
        rel: m["size"] for rel, m in manifest.items()}
    restored = list(moves.values()) + [copies[rel] for rel in restore_copies]
    same_bytes = all(raw.sha256(item["path"]) == item["sha256"] for item in restored)
    out.verified = same_files and same_bytes and not lost
    journal["status"] = "undone"
    journal["undo"] = {"at": undo_journal["at"], "journal": f"{undo_dir}/{JOURNAL_NAME}",
                       "verified": out.verified}
    write_journal(backup, journal)
    ckpt.refresh()
    out.applied = True
    out.lines.append(f"files written since the {noun} are in {backup.root}/{undo_dir}/displaced")
    out.lines.append(f"verified: every file of the checkpoint before the {noun} is back, same "
                     "size, and the restored ones have the same SHA-256" if out.verified else
                     "NOT verified: the checkpoint differs from the journal's manifest")
    return out


def _undo_moves(mover: GuardedMoves, backup, undo_journal: dict, moves: dict, back: set,
               copies: dict, restore_copies: list[str]) -> None:
    """The undo's moves in order, each checked first; returns early when the mover stopped."""
    for item in undo_journal["displaced"]:
        if not mover.move_out(item["path"], item["moved_to"]):
            return
    for rel, item in moves.items():
        if rel not in back and not _restore(mover, backup, item, from_moved=True):
            return
    for rel in restore_copies:
        if not _restore(mover, backup, copies[rel], from_moved=False):
            return
    mover.finished()


def _restore(mover: GuardedMoves, backup, item: dict, from_moved: bool) -> bool:
    rel = item["path"]
    if mover.raw.exists(rel):
        raise RunbookError(f"cannot restore {rel}: a file is in the way (undo stopped; nothing "
                           "was deleted)")
    if from_moved and backup.exists(item["moved_to"]) and \
            backup.sha256(item["moved_to"]) == item["sha256"]:
        return mover.move_in(item["moved_to"], rel)
    return mover.copy_in(item["copy"], rel)


def is_metadata_file(rel: str) -> bool:
    """Query metadata, source metadata, operator metadata and state schemas (and their sidecars)."""
    if is_checksum_file(rel):
        folder, _, name = rel.rpartition("/")
        rel = f"{folder}/{name[1:-4]}" if folder else name[1:-4]
    return bool(_METADATA_FILE.match(rel))


def files_to_keep(inventory: dict, moves: list[str]) -> tuple[list[str], list[str]]:
    """What a change backs up: the files it moves (those that exist, with their ``.crc``
    sidecars), and the metadata files a restarted query could rewrite (copied only)."""
    moved = [rel for rel in moves if rel in inventory]
    moved += [sidecar_of(rel) for rel in moved if sidecar_of(rel) in inventory]
    copies = [rel for rel in inventory if is_metadata_file(rel) and rel not in moved]
    return moved, copies
