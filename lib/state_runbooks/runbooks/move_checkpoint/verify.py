"""The move's verification: the files, then Spark.

1. The files: at a new location every file copied is the original's, byte for byte (SHA-256),
   and the original is unchanged; in place, nothing changed but what the move replaced. No path
   that operator metadata names points outside the result.
2. Spark: the job restarted on a scratch copy of the result with every batch committed
   (08's rehearsal, ``committed=True``), for the one batch after the last: it must pass every
   restart check, start each moved source at the offset written, and read exactly the rows
   expected from it (nothing read twice). Its rows dropped behind the carried watermark are the
   late rows of that sample.
"""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.named_locations import elsewhere
from state_runbooks.query.rehearsal import Rehearsal, rehearse
from state_runbooks.safety.safekeeping import changed_files

from .start import expected_rows


@dataclass
class SourceCheck:
    label: str
    start_written: object  # the offset the move wrote (parsed), None for "-"
    start_seen: object  # the batch's startOffset, as Spark reported it
    rows_expected: int | None
    rows_read: int | None

    @property
    def ok(self) -> bool:
        return (self.start_seen == self.start_written and
                (self.rows_expected is None or self.rows_read == self.rows_expected))

    def line(self) -> str:
        rows = (f"read {self.rows_read} row(s)" + (
            f", {self.rows_expected} expected" if self.rows_expected is not None else
            " (how many is the source's to say)"))
        return (f"{self.label}: started at {json.dumps(self.start_seen)} (written "
                f"{json.dumps(self.start_written)}), {rows}")


@dataclass
class Restart:
    """The restart on a copy of the result."""
    rehearsal: Rehearsal
    sources: list  # SourceCheck per moved source
    late_rows: int | None  # rows the stateful operators dropped behind the carried watermark

    @property
    def ok(self) -> bool:
        r = self.rehearsal
        if r.ran is None and "did not run" in r.note:
            # No batch: the sources had nothing new, which is right only if none was expected.
            return all(s.rows_expected == 0 for s in self.sources)
        return bool(r.ran) and all(s.ok for s in self.sources)


def _files(original: Checkpoint, target: Checkpoint, rewrite, inventory: dict,
           digests: dict | None) -> list[str]:
    """What is wrong with the files (``digests``: at a new location, the SHA-256 of each file
    copied, as the copy read it; None in place)."""
    problems = []
    new_location = digests is not None
    if new_location:
        dst = target.fs.raw()
        copied = [rel for rel in inventory if not (rewrite.replaces(rel) or rel in rewrite.files)]
        listed = dst.walk()

        def differs(rel: str) -> bool:
            return rel not in listed or digests.get(rel) != dst.sha256(rel)
        with ThreadPoolExecutor(4) as pool:  # reads wait on the disk, not on Python
            different = [rel for rel, bad in zip(copied, pool.map(differs, copied)) if bad]
        if different:
            problems.append(f"{len(different)} file(s) differ from the original (e.g. "
                            f"{different[0]})")
    unexpected = [rel for rel in changed_files(original, inventory)
                  if new_location or not (rewrite.replaces(rel) or rel in rewrite.files)]
    if unexpected:
        problems.append(f"{len(unexpected)} file(s) of the original changed (e.g. "
                        f"{unexpected[0]})")
    named = elsewhere(target.fs)
    if named:
        problems.append(f"{named[0].file} still names {named[0].path}")
    return problems


def restart_on_copy(target: Checkpoint, checks, job) -> Restart:
    """Spark restarts ``job`` on a copy of ``target`` for the batch after its last."""
    spark = target.spark
    expected = {p: expected_rows(spark, m.new, checks.starts[p])
                for p, m in ((m.position, m) for m in checks.moves.moving)
                if p in checks.starts}
    rehearsal = rehearse(spark, target, job, committed=True)
    progress = rehearsal.progress or {}
    seen = progress.get("sources") or []
    sources = []
    for m in checks.moves.moving if checks.move == "source" else []:
        start = checks.starts.get(m.position)
        written = json.loads(start.line) if start and start.line is not None else None
        report = seen[m.position] if m.position < len(seen) else {}
        sources.append(SourceCheck(m.label, written, _parsed(report.get("startOffset")),
                                   expected.get(m.position), report.get("numInputRows")))
    late = [op.get("numRowsDroppedByWatermark") for op in progress.get("stateOperators", [])]
    late = [n for n in late if n is not None]
    return Restart(rehearsal, sources, sum(late) if late else None)


def _parsed(offset):
    if isinstance(offset, str):
        try:
            return json.loads(offset)
        except json.JSONDecodeError:
            return offset
    return offset


def verify_move(original: Checkpoint, target: Checkpoint, checks, job, rewrite, inventory: dict,
                digests: dict | None, out) -> tuple[bool, list[str]]:
    """Whether the move is what it promised, and the lines that say so (see the module;
    ``digests``: a new location's files as copied, None in place)."""
    new_location = digests is not None
    problems = _files(original, target, rewrite, inventory, digests)
    where = ("every file copied is the original's, byte for byte, and the original is "
             "unchanged" if new_location else
             "nothing changed in the checkpoint but the files the move replaced")
    lines = [f"verified: {where}; no path names another place" if not problems else
             f"NOT verified: {'; '.join(problems)}"]
    restart = restart_on_copy(target, checks, job)
    out.rehearsal = restart
    r = restart.rehearsal
    if r.ran:
        lines.append(f"{'verified' if restart.ok else 'NOT verified'}: Spark restarted the job "
                     f"on a copy of the result and ran batch {r.batch_id}"
                     + "".join(f"; {s.line()}" for s in restart.sources))
    elif r.ran is None and restart.ok:
        lines.append("verified: Spark restarted the job on a copy of the result; no source had "
                     "anything new, so no batch ran (none was expected)")
    else:
        lines.append("NOT verified: Spark's restart on a copy of the result "
                     + (f"failed with {r.error_class}: {r.message}" if r.ran is False else
                        f"gave no answer: {r.note}"))
    if restart.late_rows:
        lines.append(f"warning: that batch dropped {restart.late_rows} row(s) behind the carried "
                     "watermark as late (counted as they reach the stateful operator: an "
                     "aggregation's one per key): the new source's event times lie behind it")
    return not problems and restart.ok, lines
