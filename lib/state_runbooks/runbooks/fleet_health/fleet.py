"""The fleet run: find every checkpoint under the roots, count their state files in one Spark
job over their folders, examine them concurrently (each examination's reads are Spark jobs; up to
``parallelism`` run at once), judge each one's growth from the history, and append this run to the
history once.

Concurrent examinations share one session. Spark's reader needs a checkpoint's format in the
session conf while a read is planned, so checkpoints are examined in groups of one format, the
conf set once for the group: no examination can reset it under another.
"""
from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError, first_line
from state_runbooks.common.spark_settings import CHECKPOINT_FORMAT_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.discovery import DEFAULT_MAX_DEPTH
from state_runbooks.core.fs import open_fs
from state_runbooks.core.fs.memory import MemoryFiles
from state_runbooks.core.state_file_stats import spark_partitions
from state_runbooks.session.spark_session import session_conf

from .examine import STATE_ROWS, STATUSES, Examination, examine
from .history import append_history, history_format, history_row, judge_growth, read_history
from .roots import find_checkpoints, roots_of
from .thresholds import Thresholds, load_thresholds

DEFAULT_PARALLELISM = 4


@dataclass
class FleetRun:
    """One run over the fleet: every folder's examination, worst first."""
    roots: list[str]
    examinations: list[Examination]
    run_ms: int
    seconds: float
    thresholds: Thresholds
    history_path: str = ""
    history_format: str = "parquet"
    history: list[dict] = field(default_factory=list)  # the rows before this run
    appended: int = 0  # rows this run appended
    files_counted: str = ""  # how the state files were counted

    @property
    def worst_first(self) -> list[Examination]:
        return sorted(self.examinations, key=lambda e: (STATUSES.index(e.status),
                                                        e.checkpoint_path))

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for e in self.examinations:
            out[e.status] += 1
        return {s: n for s, n in out.items() if n}

    def by_path(self, suffix: str) -> Examination:
        return next(e for e in self.examinations if e.checkpoint_path.endswith(suffix))


def _refuse_history_under(roots: list, history_path: str, spark) -> None:
    """The run writes nothing under the roots: a history there is refused in one line."""
    if not history_path or "/" not in history_path:
        return
    where = open_fs(spark, history_path).root.rstrip("/")
    for fs in roots:
        root = fs.root.rstrip("/")
        if where == root or where.startswith(root + "/"):
            raise RunbookError(f"history_path={history_path} is under the root {fs.root}: the fleet "
                               "run writes nothing there; put the history elsewhere")


def _opened(spark, folder) -> tuple[Checkpoint | None, int]:
    """The folder's checkpoint, opened once for its examination, and its format (1 when it does
    not open: examine() opens it again and reports why)."""
    if not folder.whole:
        return None, 1
    try:
        ckpt = Checkpoint(spark, folder.path, require_state=False)
        return ckpt, ckpt.format_version
    except Exception:  # noqa: BLE001 - examine() reports why it does not open
        return None, 1


def count_files(spark, folders) -> dict[str, list[dict]] | None:
    """Every whole checkpoint's state partitions, by path, from one Spark job over their folders
    (None on the unit tests' in-memory files: each examination counts its own listing)."""
    if isinstance(spark, MemoryFiles):
        return None
    return spark_partitions(spark, [f.path for f in folders if f.whole])


def examine_all(spark, folders, thresholds: Thresholds, state_rows: str, parallelism: int,
                now_ms: int, **examine_kwargs) -> tuple[list[Examination], str]:
    """Every folder examined, up to ``parallelism`` at once, a group per checkpoint format, and
    how the state files were counted. The files are counted by one Spark job beside the
    examinations; where it fails, each examination counts the listing it holds."""
    workers = max(int(parallelism), 1)

    with ThreadPoolExecutor(max_workers=workers) as pool, \
            ThreadPoolExecutor(max_workers=1) as beside:
        counting = beside.submit(count_files, spark, folders)

        def counted(path: str) -> list[dict] | None:
            with contextlib.suppress(Exception):  # said once, below
                return (counting.result() or {}).get(path)
            return None

        def examined(pair: list):
            folder, ckpt = pair
            pair[1] = None  # a checkpoint examined is let go: the driver's memory stays flat
            return examine(spark, folder, thresholds, state_rows, now_ms, opened=ckpt,
                           counted_files=counted, **examine_kwargs)

        groups: dict[int, list] = {}
        for folder, (ckpt, fmt) in zip(folders, pool.map(lambda f: _opened(spark, f), folders)):
            groups.setdefault(fmt, []).append([folder, ckpt])
        out = []
        for fmt in sorted(groups):
            conf = (session_conf(spark, {CHECKPOINT_FORMAT_CONF: str(fmt)})
                    if fmt > 1 and not isinstance(spark, MemoryFiles) else contextlib.nullcontext())
            with conf:
                out += list(pool.map(examined, groups.pop(fmt)))
    if counting.exception() is not None:
        return out, ("each checkpoint's own listing (Spark's job over the folders failed: "
                     f"{first_line(counting.exception())})")
    if counting.result() is None:
        return out, "each checkpoint's own listing"
    return out, "one Spark job over the checkpoints' folders"


def run_fleet(spark, checkpoint_path, max_depth: int = DEFAULT_MAX_DEPTH,
              include: list[str] | None = None, exclude: list[str] | None = None,
              history_path: str = "", history_format_: str = "", thresholds=None,
              state_rows: str = "auto", parallelism: int = DEFAULT_PARALLELISM,
              now_ms: int | None = None, **examine_kwargs) -> FleetRun:
    """The fleet run, read-only under the roots; the history appended once at its end."""
    if state_rows not in STATE_ROWS:
        raise RunbookError(f"state_rows={state_rows!r} is not one of {', '.join(STATE_ROWS)}")
    t = thresholds if isinstance(thresholds, Thresholds) else load_thresholds(thresholds)
    started = time.monotonic()
    run_ms = int(time.time() * 1000) if now_ms is None else now_ms
    roots = roots_of(spark, checkpoint_path)
    _refuse_history_under(roots, history_path, spark)
    fmt = history_format(history_path, history_format_) if history_path else "parquet"
    folders = find_checkpoints(roots, max_depth, include, exclude)
    before = read_history(spark, history_path, fmt)
    exams, files_counted = examine_all(spark, folders, t, state_rows, parallelism, run_ms,
                                       **examine_kwargs)
    for exam in exams:
        judge_growth(exam, [r for r in before if r["checkpoint_path"] == exam.checkpoint_path],
                     run_ms, t.max_growth_per_day)
    run = FleetRun([fs.root for fs in roots], exams, run_ms, 0.0, t, history_path, fmt, before,
                   files_counted=files_counted)
    run.appended = append_history(spark, history_path, [history_row(run_ms, e) for e in exams],
                                  fmt)
    run.seconds = round(time.monotonic() - started, 2)
    return run
