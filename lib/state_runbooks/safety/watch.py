"""Watching a checkpoint for a live writer while a change is applied: one mechanism for every
runbook that changes a checkpoint (05's rollback and undo, 07's repartition and undo).

A change starts from a listing (the walk it journals). Just before each file it moves (and just
before Spark's call, for 07) :meth:`Watch.signs` lists the offsets and commits logs and the folder
of that file again and compares them with the listing, corrected for what the change itself did:
a new offsets or commits entry, a new state file, a file whose size or time changed, or one that
went away (Spark's maintenance deletes old versions) is the sign of a live writer. The change then
stops and :class:`GuardedMoves` puts back what it moved, in reverse order, never deleting anything;
the caller's outcome says so and its run fails.

Nothing here trusts a listing taken before the check: every check lists again.
"""
from __future__ import annotations

import re

from state_runbooks.common.errors import first_line
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs.base import FileEntry
from state_runbooks.core.log_files import listed_batches

LOG_FOLDERS = ("offsets", "commits")  # what every batch of a running query writes first
_SHOWN = 3  # signs named in one message


def _describe(rel: str, then: FileEntry | None, now: FileEntry | None) -> str:
    if then is None:
        return f"{rel} appeared ({now.size} bytes)"
    if now is None:
        return f"{rel} went away"
    if now.size != then.size:
        return f"{rel} changed size ({then.size} -> {now.size} bytes)"
    return f"{rel} was rewritten (modified {now.modified_ms - then.modified_ms} ms later)"


def differences(then: dict, now: dict, prefixes: tuple[str, ...] | None = None) -> list[str]:
    """What differs between two listings (``walk`` results), below ``prefixes`` (None: all)."""
    def below(rel: str) -> bool:
        return prefixes is None or any(rel == p or rel.startswith(p + "/") for p in prefixes)
    out = []
    for rel in sorted({r for r in then if below(r)} | {r for r in now if below(r)}):
        a, b = then.get(rel), now.get(rel)
        if a is None or b is None or a.size != b.size or a.modified_ms != b.modified_ms:
            out.append(_describe(rel, a, b))
    return out


def log_listing(raw) -> dict:
    """The offsets and commits logs as stored now (sidecars and temporary files included)."""
    return {rel: e for folder in LOG_FOLDERS for rel, e in raw.walk(folder).items()}


def log_changes(ckpt: Checkpoint, then: dict) -> list[str]:
    """How the offsets and commits logs changed since the listing ``then`` (a walk of the
    checkpoint): entries added, gone, or rewritten. Empty: no batch ran since."""
    return differences(then, log_listing(ckpt.fs.raw()), LOG_FOLDERS)


def signs_line(signs: list[str]) -> str:
    more = f" (and {len(signs) - _SHOWN} more)" if len(signs) > _SHOWN else ""
    return "; ".join(signs[:_SHOWN]) + more


class Watch:
    """The checkpoint as a change expects it: the listing it started from, with the change's own
    moves applied. :meth:`signs` lists again and says what else changed."""

    def __init__(self, ckpt: Checkpoint, baseline: dict):
        self.raw = ckpt.fs.raw()
        self.expected = dict(baseline)
        self.checks = 0

    def gone(self, rel: str) -> None:
        """The change moved ``rel`` out of the checkpoint."""
        self.expected.pop(rel, None)

    def put(self, rel: str) -> None:
        """The change put a file at ``rel``: expect it as it is now."""
        folder, _, name = rel.rpartition("/")
        entry = next((e for e in self.raw.list(folder) if e.name == name), None)
        if entry is not None:
            self.expected[rel] = FileEntry(rel, False, entry.size, entry.modified_ms)

    def signs(self, *rels: str) -> list[str]:
        """Signs of a live writer: the logs and the folders of ``rels``, listed again now."""
        self.checks += 1
        folders = tuple(dict.fromkeys(LOG_FOLDERS + tuple(r.rpartition("/")[0] for r in rels
                                                          if "/" in r)))
        now = {}
        for folder in folders:
            now.update(self.raw.walk(folder))
        return differences(self.expected, now, folders)

    def all_signs(self) -> list[str]:
        """Signs of a live writer anywhere in the checkpoint (one walk of the whole tree)."""
        self.checks += 1
        return differences(self.expected, self.raw.walk())


class GuardedMoves:
    """File moves into and out of a checkpoint, each after a check for a live writer; stopped at
    the first sign, they are put back in reverse order (never deleting a file).

    ``backup``: the backup folder's file access; ``aside``: a folder in it where a file the
    change had put into the checkpoint goes when its moves are put back."""

    def __init__(self, ckpt: Checkpoint, baseline: dict, backup, aside: str):
        self.raw = ckpt.fs.raw()
        self.watch = Watch(ckpt, baseline)
        self.backup, self.aside = backup, aside
        self.done: list[tuple[str, str, str]] = []  # (kind, checkpoint path, backup path)
        self.stopped: str | None = None  # the signs of a live writer that stopped the moves

    def _check(self, rel: str) -> bool:
        signs = self.watch.signs(rel)
        if signs:
            self.stopped = signs_line(signs)
        return not signs

    def move_out(self, rel: str, to: str) -> bool:
        """Move ``rel`` from the checkpoint to ``to`` in the backup; False when stopped."""
        if not self._check(rel):
            return False
        self.raw.move_to(rel, self.backup, to)
        self.watch.gone(rel)
        self.done.append(("out", rel, to))
        return True

    def move_in(self, src: str, rel: str) -> bool:
        """Move ``src`` from the backup to ``rel`` in the checkpoint; False when stopped."""
        if not self._check(rel):
            return False
        self.backup.move_to(src, self.raw, rel)
        self.watch.put(rel)
        self.done.append(("in", rel, src))
        return True

    def copy_in(self, src: str, rel: str) -> bool:
        """Copy ``src`` from the backup to ``rel`` in the checkpoint; False when stopped."""
        if not self._check(rel):
            return False
        self.backup.copy_to(src, self.raw, rel)
        self.watch.put(rel)
        self.done.append(("copy", rel, f"{self.aside}/copied-in/{rel}"))
        return True

    def finished(self) -> bool:
        """After the last move: no sign of a live writer anywhere (one walk); else stopped."""
        signs = self.watch.all_signs()
        if signs:
            self.stopped = signs_line(signs)
        return not signs

    def put_back(self) -> tuple[bool, list[str]]:
        """Undo every move done, newest first: files moved out come back (the same bytes: a
        rename), files moved in go back, copies put in go aside into ``aside``. Returns whether
        all of it went back, and what happened."""
        lines, failed = [], []
        for kind, rel, where in reversed(self.done):
            try:
                if kind == "out":
                    if self.raw.exists(rel):  # the live writer wrote it again: keep both
                        self.raw.move_to(rel, self.backup, f"{self.aside}/in-the-way/{rel}")
                        lines.append(f"{rel} was written again meanwhile: that file is in "
                                     f"{self.backup.uri(f'{self.aside}/in-the-way/{rel}')}")
                    self.backup.move_to(where, self.raw, rel)
                else:
                    self.raw.move_to(rel, self.backup, where)
            except Exception as exc:  # noqa: BLE001 - keep going: put back all that can go
                failed.append(f"{rel}: {first_line(exc)}")
        if failed:
            lines.append(f"NOT put back: {len(failed)} file(s) (e.g. {failed[0]}); see the "
                         "journal")
        return not failed, lines


def refuse_if(signs: list[str], what: str) -> str | None:
    """The refusal for signs of a live writer seen before anything changed, else None."""
    if not signs:
        return None
    return (f"the checkpoint changed since {what} ({signs_line(signs)}): a query looks like it is "
            "writing to it. Stop it and run again; nothing was changed")



# -- a consistent view for reading a checkpoint a query may be writing --------------------------
_IN_PROGRESS = re.compile(r"^\..+\.tmp(\.crc)?$")  # Hadoop's temporary files, renamed when done


def in_progress(rel: str) -> bool:
    """A file a writer is still writing (``.<name>.<uuid>.tmp``, renamed into place when done)."""
    return bool(_IN_PROGRESS.match(rel.rsplit("/", 1)[-1]))


class _AsListed:
    """A checkpoint whose offsets and commits are those of one listing, not listed again."""

    @property
    def offset_batch_ids(self) -> list[int]:
        return self._listed_offsets

    @property
    def commit_batch_ids(self) -> list[int]:
        return self._listed_commits


_VIEWS: dict = {}


def as_listed(ckpt: Checkpoint, inventory: dict) -> Checkpoint:
    """``ckpt`` as ``inventory`` (one walk: the logs listed before the state folders) saw it: its
    offsets and commits come from that walk, its state layout too (``Checkpoint.inventory``).
    What the diagnosis of a running query judges: nothing newer than the walk."""
    cls = type(ckpt)
    view_cls = _VIEWS.get(cls) or _VIEWS.setdefault(
        cls, type(f"AsListed{cls.__name__}", (_AsListed, cls), {}))
    view = object.__new__(view_cls)
    view.__dict__.update(ckpt.__dict__)
    for folder in LOG_FOLDERS:
        view.__dict__[f"_listed_{folder}"] = sorted(listed_batches(inventory, folder))
    return view
