"""What moves and what must not: 08's comparison of the checkpoint with the job as it will run
after the move (the same layers, :mod:`state_runbooks.runbooks.check_query_change`).

The state must not change: Spark's own restart check of the job (its operators and every store's
schema) must pass, or runbook 10 comes first. The sources are compared by position (by name in a
format 2 offsets log): their number must match in format 1 (a source added by a union is a new
query's to Spark), and the ones a restart fails on or reads otherwise are the ones that move.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.core import offset_log
from state_runbooks.core import source_offsets as so
from state_runbooks.query.planning import Probe, probe, restart_settings
from state_runbooks.query.source_changes import (
    SourceVerdict,
    compare_sources,
)
from state_runbooks.query.sources import (
    Source,
    checkpoint_sources,
    query_sources,
)

MOVING = ("fails", "changes")  # what a restart does to a source that has moved


@dataclass(frozen=True)
class SourceMove:
    """One source of the checkpoint and the job's at its position (or name)."""
    position: int
    old: Source
    new: Source
    verdict: SourceVerdict

    @property
    def label(self) -> str:
        return self.old.label

    @property
    def log_folder(self) -> str:
        name = self.old.label if self.old.detail.get("named") else None
        return offset_log.source_log_folder(offset_log.SourceOffset(name, None), self.position)


@dataclass
class Moves:
    """The comparison: the batch it stands on, the sources, Spark's check of the state."""
    batch_id: int  # N: the last committed batch
    named: bool  # offsets log format 2: Spark's source evolution moves sources by name
    sources: list[SourceMove] = field(default_factory=list)
    verdicts: list[SourceVerdict] = field(default_factory=list)
    spark_check: Probe | None = None
    chosen: str = ""  # the source asked for (position or name), "" for every one that moved
    move: str = "source"

    @property
    def moving(self) -> list[SourceMove]:
        if self.chosen:
            return [s for s in self.sources if self.chosen in (s.label, str(s.position))]
        return [s for s in self.sources if s.verdict.verdict in MOVING]

    @property
    def count_differs(self) -> SourceVerdict | None:
        return next((v for v in self.verdicts if v.label == "sources"), None)


def seen_files(ckpt, folder: str) -> list[str]:
    """Every path a file source's log holds (the files Spark reads on restart to know what it
    has seen)."""
    if not ckpt.fs.is_dir(folder):
        return []
    names = [e.name for e in ckpt.fs.list(folder) if not e.is_dir]
    paths = []
    for name in so.files_read_on_restart(names):
        if ckpt.fs.exists(f"{folder}/{name}"):
            paths += [e.path for e in so.parse_file_log(ckpt.fs.read_bytes(f"{folder}/{name}"),
                                                        f"{folder}/{name}")]
    return sorted(set(paths))


def compare_move(spark, ckpt, job, source: str = "", move: str = "source") -> Moves:
    """The checkpoint at its last committed batch against the job (see the module). A location
    move leaves Spark's check of the state to its verification: the job restarted on the result,
    which makes every check a restart makes, the original untouched whatever it finds."""
    batch = ckpt.last_committed_batch_id
    entry = ckpt.offsets(batch)
    named = entry.source_names is not None
    old = checkpoint_sources(ckpt, batch)
    new = query_sources(job.df)
    verdicts = compare_sources(old, new, named, spark)
    moves = Moves(batch, named, verdicts=verdicts, chosen=str(source or "").strip(), move=move)
    if moves.count_differs is None:
        by_label = {v.label: v for v in verdicts}
        new_by_key = {s.detail.get("name") or str(i): s for i, s in enumerate(new)}
        for i, o in enumerate(old):
            n = new_by_key.get(o.label) if named else (new[i] if i < len(new) else None)
            if n is None or o.label not in by_label:
                continue
            detail = {**o.detail, "named": named}
            moving = SourceMove(i, Source(o.label, o.kind, o.reads, detail), n, by_label[o.label])
            if o.kind == "file":
                detail["seen"] = seen_files(ckpt, moving.log_folder)
            moves.sources.append(moving)
    if move != "location":
        newest, metadata_json, query_id = restart_settings(ckpt)
        moves.spark_check = probe(spark, ckpt, job, newest, metadata_json, query_id)
    return moves
