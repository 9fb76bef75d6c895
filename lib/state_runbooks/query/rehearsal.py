"""The rehearsal: the changed query restarted for one batch on a scratch copy of the checkpoint,
its sink replaced by Spark's ``noop`` sink (which writes nothing), and what Spark did.

The copy holds what a restart reads: the ``metadata`` file, the newest offsets entry and the one
before it, the commits up to the batch before the newest, ``sources/``, every operator's metadata
and schema files, and per store the state files that load the state the newest batch starts
from (the newest snapshot at or below that version and the deltas or changelogs after it; for
RocksDB the SST files its snapshot names). The newest batch is left uncommitted in the copy, so
the restart runs that batch again with its logged offsets: it reads a known, bounded slice of
the source and passes through every check a restart makes (sources, operators, schemas, the
pinned settings), however much new data waits. The copy is removed afterwards; the checkpoint is
only read. With ``committed=True`` the copy keeps every commit and the restart runs the batch
after the newest, from the logged offsets to what the sources hold now (how 12 proves a moved
source starts where it was set to).
"""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field

from state_runbooks.common.errors import (
    ERROR_CLASS,
    RunbookError,
    first_line,
    full_error_text,
    python_worker_error,
)
from state_runbooks.core.fs import open_fs
from state_runbooks.core.state_files import STATE_FILE_PATTERN, zip_ssts
from state_runbooks.query.planning import checked_files, copy_pointing_here, is_metadata_v2
from state_runbooks.session.spark_session import progress_dict, session_conf

TIMEOUT_SECONDS = 600
SOURCES_ASSERTION = "sources in the checkpoint offsets"


@dataclass
class CopyPlan:
    batch_id: int  # the batch the rehearsal runs again
    files: list[str]  # relative paths
    copy_bytes: int
    checkpoint_bytes: int
    checkpoint_files: int


@dataclass
class Rehearsal:
    ran: bool | None  # True: the batch ran; False: Spark failed it; None: not run, or no answer
    batch_id: int | None = None
    error_class: str | None = None  # Spark's error class, else the exception's type
    message: str = ""
    attempted: bool = False  # the changed query was started on a copy
    seconds: float = 0.0
    copy: CopyPlan | None = None
    shuffle_partitions: list[int] = field(default_factory=list)  # from the batch's progress
    input_rows: int | None = None
    progress: dict = field(default_factory=dict)  # the batch's last progress, as Spark gave it
    note: str = ""
    removed: bool = False

    @property
    def restart(self) -> str | None:
        """What Spark did: ``restarts`` or ``fails``; None without an answer."""
        return None if self.ran is None else "restarts" if self.ran else "fails"


def _loads(files: dict, version: int) -> list[str]:
    """The state files that load ``version`` of one store: the newest snapshot at or below it
    and every delta or changelog after that snapshot (all of them when there is none)."""
    snapshots = [v for v, kinds in files.items() if v <= version and
                 ({"snapshot", "zip"} & set(kinds))]
    base = max(snapshots, default=0)
    out = []
    for v in sorted(files):
        if v > version or v < base:
            continue
        for kind, rel in files[v].items():
            if v == base and kind in ("snapshot", "zip") or v > base and kind in (
                    "delta", "changelog"):
                out.append(rel)
    return out


def plan_copy(ckpt, committed: bool = False) -> CopyPlan:
    """What the copy must hold to run the newest batch again, or with ``committed`` the one
    after it (see the module's docstring)."""
    newest = ckpt.offset_batch_ids[-1] if ckpt.offset_batch_ids else None
    if newest is None:
        raise RunbookError(f"checkpoint {ckpt.root} has no offsets entry: the query never ran a "
                           "batch, so any change restarts as a new query")
    batch = newest + 1 if committed else newest
    listing = ckpt.fs.walk()
    keep = {"metadata"} & set(listing)
    keep |= {f"offsets/{b}" for b in (newest - 1, newest)} & set(listing)
    keep |= {f"commits/{b}" for b in ckpt.commit_batch_ids if b < batch}
    keep |= {rel for rel in listing if rel.startswith("sources/")}
    keep |= set(checked_files(listing))
    stores: dict = {}
    for rel in listing:
        parts = rel.split("/")
        if len(parts) < 4 or parts[0] != "state":
            continue
        match = STATE_FILE_PATTERN.match(parts[-1])
        if match:
            folder = "/".join(parts[:-1])
            stores.setdefault(folder, {}).setdefault(int(match.group(1)), {})[match.group(3)] = rel
        elif len(parts) >= 5 and parts[-2] == "_metadata" and parts[-1] == "schema":
            keep.add(rel)
    for folder, files in stores.items():
        chosen = _loads(files, batch)  # state version N is what batch N starts from
        keep |= set(chosen)
        for rel in chosen:
            if rel.endswith(".zip"):
                keep |= {f"{folder}/SSTs/{name}" for name, _ in zip_ssts(ckpt.fs, rel) or []}
    keep &= set(listing)
    return CopyPlan(batch, sorted(keep), sum(listing[r].size for r in keep),
                    sum(e.size for e in listing.values()), len(listing))


def scratch_root(ckpt, scratch_dir: str = "") -> str:
    """Where the copy goes: ``scratch_dir``, else beside the checkpoint (the executors that run
    the rehearsal must see it, as they see the checkpoint)."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%f")
    base = scratch_dir.rstrip("/") if scratch_dir else ckpt.root.rstrip("/") + ".query-change"
    return f"{base}-{stamp}"


def error_class_of(exc: BaseException) -> str | None:
    """The innermost Spark error class of a failed restart (``STREAM_FAILED`` only when it
    wraps nothing with a class)."""
    classes = [m.group(1) for m in ERROR_CLASS.finditer(full_error_text(exc))]
    inner = [c for c in classes if c != "STREAM_FAILED"]
    return inner[0] if inner else (classes[0] if classes else None)


def rehearse(spark, ckpt, job, scratch_dir: str = "",
             timeout_seconds: float = TIMEOUT_SECONDS, committed: bool = False) -> Rehearsal:
    """Copy, restart for one batch, report, remove the copy."""
    start = time.perf_counter()
    plan = plan_copy(ckpt, committed)
    root = scratch_root(ckpt, scratch_dir)
    copy = open_fs(spark, root)
    if not getattr(copy, "can_modify", True):
        return Rehearsal(None, plan.batch_id, copy=plan, note=(
            "not run: this Spark Connect session cannot copy files (no dbutils.fs); run it from "
            "a classic session, or on Databricks"))
    result = Rehearsal(None, plan.batch_id, copy=plan, attempted=True)
    try:
        copy.mark_made(f"check_query_change: a scratch copy of {ckpt.root} for one batch")
        named = [rel for rel in plan.files if is_metadata_v2(rel)]
        # Without their .crc sidecars: Hadoop reads a file that has none unchecked.
        ckpt.fs.raw().copy_files([rel for rel in plan.files if rel not in named], copy)
        for rel in named:
            copy_pointing_here(ckpt.fs, copy, rel)
        _run(spark, job, copy.uri(""), plan.batch_id, timeout_seconds, result)
    finally:
        try:
            result.removed = copy.remove_tree()
        except Exception as exc:  # noqa: BLE001 - say it; the rehearsal's outcome stands
            result.note += f"; the copy {root} could not be removed: {first_line(exc)}"
    result.seconds = time.perf_counter() - start
    return result


def _run(spark, job, path: str, batch_id: int, timeout_seconds: float, out: Rehearsal) -> None:
    query = None
    try:
        with session_conf(spark, job.job_conf):
            query = (job.df.writeStream.format("noop").outputMode(job.output_mode)
                     .option("checkpointLocation", path)
                     .trigger(once=True)  # exactly one batch: the one left uncommitted
                     .start())
            finished = query.awaitTermination(timeout_seconds)
        if not finished:
            query.stop()
            out.note = f"the batch did not finish within {timeout_seconds:.0f} s; stopped"
            return
        progress = [progress_dict(p) for p in query.recentProgress]
        ran = [p for p in progress if p.get("batchId") == batch_id]
        if ran:
            out.ran = True
            out.shuffle_partitions = sorted({op.get("numShufflePartitions") for op in
                                             ran[-1].get("stateOperators", [])} - {None})
            out.input_rows = ran[-1].get("numInputRows")
            out.progress = ran[-1]
        else:
            out.note = "the batch did not run (the source returned no data for its logged offsets)"
    except Exception as exc:  # noqa: BLE001 - what Spark raised is the answer
        text = full_error_text(exc)
        out.ran = False
        out.error_class = error_class_of(exc) or type(exc).__name__
        out.message = _spark_message(text)
    finally:
        if query is not None and query.isActive:
            query.stop()


def _spark_message(text: str) -> str:
    """The failing check's own sentence: after the innermost error class, the assertion, or
    what the query terminated with; a Python worker's own error where one raised."""
    worker = python_worker_error(text)
    if worker:
        return worker
    if SOURCES_ASSERTION in text:
        start = text.find("There are [")
        return text[start:text.find("Cannot continue.", start) + len("Cannot continue.")]
    marks = [m for m in ERROR_CLASS.finditer(text) if m.group(1) != "STREAM_FAILED"]
    if marks:
        rest = text[marks[0].end():]
        return " ".join(rest.split("\n")[:2]).split(" SQLSTATE")[0].strip()
    ended = text.find("terminated with exception: ")
    if ended >= 0:
        return text[ended + len("terminated with exception: "):].split("\n")[0] \
            .split(" SQLSTATE")[0].strip()
    return text.strip().splitlines()[0] if text.strip() else ""
