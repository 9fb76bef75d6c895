"""The move, through the one procedure every change follows (:mod:`state_runbooks.safety.change`):
this module says what the move is, writes it (no Spark internals: the logs are written in the
formats Spark reads, :mod:`.rewrite`), and verifies it (:mod:`.verify`).

In place, the files the move replaces (the last two offsets entries, the moved source's own log,
operator metadata naming another place) are moved aside into the backup before the new ones are
written, so that undo puts back the same bytes. At a new location every other file is copied
byte for byte and compared by checksum; the original is only read.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.common.errors import first_line
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import open_fs
from state_runbooks.query.rehearsal import rehearse
from state_runbooks.safety.activity import QUIET_MINUTES
from state_runbooks.safety.change import apply_change, undo_change
from state_runbooks.safety.safekeeping import Change, Outcome

from . import verify
from .checks import Checks
from .rewrite import Rewrite, copied_files, plan_rewrite
from .start import describe_offset

MOVE = Change("move", ".move-", "move_checkpoint", ("move", "undo"))


@dataclass
class Moved(Outcome):
    move: str = ""
    output_path: str | None = None
    sources: list = field(default_factory=list)  # per moved source: label, before, after, start
    stores: dict = field(default_factory=dict)  # per store: its state files, carried as they are
    copied: int = 0  # files copied to a new location, each compared by checksum
    rewritten: list = field(default_factory=list)  # the files the move wrote
    rehearsal: object = None  # the restart on a copy of the result (verify.Restart)
    watermark_carried: int | None = None
    checks: Checks | None = field(default=None, repr=False)
    job: object = field(default=None, repr=False)


class _Move:
    """What 12 tells the procedure: the move, its writes, its verification."""
    change = MOVE

    def __init__(self, ckpt: Checkpoint, checks: Checks, job, new_location):
        self.ckpt, self.checks, self.job, self.new = ckpt, checks, job, new_location
        root = new_location.root if new_location is not None else ckpt.root
        self.rewrite: Rewrite = plan_rewrite(ckpt, checks, checks.inventory, root)
        self.digests: dict[str, str] = {}  # a new location: each file copied, as it was read

    def does(self) -> str:
        checks = self.checks
        what = []
        if checks.move == "source":
            batch = checks.moves.batch_id
            what.append(f"writes offsets/{batch - 1} and offsets/{batch} with "
                        + "; ".join(f"source {p} starting at {describe_offset(s.line)}"
                                    for p, s in checks.starts.items()))
            logs = [f for f in self.rewrite.files if f.startswith("sources/")]
            what.append(f"a new log for the moved source ({len(logs)} file(s)), the old one "
                        "kept in the backup" if self.new is None else
                        f"a new log for the moved source ({len(logs)} file(s))")
        named = [f for f in self.rewrite.files if "/_metadata/v2/" in f]
        if named:
            what.append(f"rewrites the schema file paths of {len(named)} operator metadata "
                        "file(s) to name the new place")
        if self.new is not None:
            copies = len(copied_files(self.checks.inventory, self.rewrite))
            what.insert(0, f"copies {copies} files (sidecars included) to {self.new.root}, "
                           "each compared by checksum")
        return (", ".join(what) or "changes nothing") + (
            ", restarts the job for one batch on a copy of the result")

    def journal(self) -> dict:
        return {"action": f"move the checkpoint's {self.checks.move}",
                "query_file": getattr(self.job, "source_file", ""),
                "query_function": getattr(self.job, "function", ""),
                "batch_id": self.checks.moves.batch_id,
                "sources": {str(p): {"start_at": s.start_at, "line": s.line}
                            for p, s in self.checks.starts.items()},
                "writes": sorted(self.rewrite.files)}

    def call(self, out: Moved, journal: dict | None) -> str | None:
        ckpt = self.ckpt
        try:
            if self.new is not None:
                self.digests = ckpt.fs.raw().copy_files(
                    copied_files(self.checks.inventory, self.rewrite), self.new)
                out.copied = len(self.digests)
            target = open_fs(ckpt.spark, self.new.root if self.new is not None else ckpt.root)
            for rel, data in sorted(self.rewrite.files.items()):
                target.write_bytes(rel, data, overwrite=True)
            out.rewritten = sorted(self.rewrite.files)
            out.lines.append(
                (f"copied {out.copied} files to {self.new.root}; " if self.new is not None
                 else "") + f"wrote {len(out.rewritten)} file(s): " + ", ".join(out.rewritten))
            return None
        except Exception as exc:  # noqa: BLE001 - Py4J wraps whatever the file system raised
            return first_line(exc)

    def verify(self, out: Moved, inventory: dict) -> tuple[bool, list[str]]:
        target = Checkpoint(self.ckpt.spark, self.new.root) if self.new is not None \
            else self.ckpt.refresh()
        return verify.verify_move(self.ckpt, target, self.checks, self.job, self.rewrite,
                                  inventory, self.digests if self.new is not None else None, out)


def move(ckpt: Checkpoint, checks: Checks, job, dry_run: bool = True, backup_dir: str = "",
         quiet_minutes: float = QUIET_MINUTES) -> Moved:
    """Move the checkpoint's source or location (dry run unless asked), after the notebook
    showed ``checks``."""
    out = Moved("move", dry_run, move=checks.move, output_path=checks.output_path or None,
                checks=checks, job=job)
    last = checks.moves.batch_id if checks.moves else None
    out.watermark_carried = ckpt.watermark(last)[0] if last is not None else None
    out.sources = [{"source": s.label, "before": s.old.describe(), "after": s.new.describe(),
                    "start_at": checks.starts[s.position].start_at,
                    "offset": checks.starts[s.position].offset_text}
                   for s in checks.moves.moving if s.position in checks.starts] \
        if checks.moves and checks.move == "source" else []
    out.stores = {s.label: {"files": len(ckpt.state_files(s.operator_id, s.store_name)),
                            "carried": "byte for byte"} for s in ckpt.stores()}
    new_location = open_fs(ckpt.spark, checks.output_path).raw() if checks.output_path else None
    if not checks.movable:
        out.refused = checks.refusal()
        if checks.moves and checks.moves.named and checks.move == "source" and job is not None:
            out.lines.append(_source_evolution(ckpt, job))
        return apply_change(ckpt, _Refused(), checks, out, backup_dir=backup_dir,
                            quiet_minutes=quiet_minutes, new_location=new_location)
    steps = _Move(ckpt, checks, job, new_location)
    in_place = new_location is None
    return apply_change(ckpt, steps, checks, out, backup_dir=backup_dir,
                        quiet_minutes=quiet_minutes, new_location=new_location,
                        moves=steps.rewrite.moved_aside if in_place else None)


def _source_evolution(ckpt: Checkpoint, job) -> str:
    """With named sources Spark moves a source by its name: the job restarted on a scratch copy
    (08's rehearsal) says whether it does here."""
    r = rehearse(ckpt.spark, ckpt, job)
    if r.ran:
        return (f"Spark's source evolution, rehearsed on a copy: the job restarts and runs batch "
                f"{r.batch_id} (a renamed source starts from its own starting options)")
    if r.ran is False:
        return (f"Spark's source evolution, rehearsed on a copy: the restart fails with "
                f"{r.error_class}: {r.message}")
    return f"Spark's source evolution could not be rehearsed here: {r.note}"


class _Refused:
    """A move its checks refuse: the procedure says so and writes nothing."""
    change = MOVE

    def does(self) -> str:
        return "moves nothing (refused)"


def undo(ckpt: Checkpoint, journal_path: str = "", output_path: str = "", dry_run: bool = True,
         force: bool = False, quiet_minutes: float = QUIET_MINUTES) -> Outcome:
    """In place: the checkpoint back as the move found it, byte for byte (what it wrote, and
    what a query restarted since wrote, go aside into the backup folder, never deleted). A new
    location (``output_path``): removed, after checking it holds this query."""
    return undo_change(ckpt, MOVE, journal_path, output_path, dry_run, force, quiet_minutes)
