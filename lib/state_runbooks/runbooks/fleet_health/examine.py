"""One checkpoint of the fleet, read-only: its figures, and the findings the single-checkpoint
runbooks' own layers give it (05's diagnosis for its logs, files and loads, 03's checklist for
its provider, watermark, balance, retention and location), each naming the runbook to open next.

Every check is guarded: a check that cannot run leaves its figure empty and the checkpoint
``unknown``, never ``ok``. A query that commits while it is examined is ``active``: its age is
not a stall, and 05's diagnosis confirms every problem on a second listing before it counts.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.spark_settings import (
    AGGREGATION_FORMAT_CONF,
    FLATMAP_FORMAT_CONF,
    JOIN_FORMAT_CONF,
    PROVIDER_CONF,
    ROCKSDB_FORMAT_CONF,
    SHUFFLE_PARTITIONS_CONF,
)
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.log_files import listed_batches
from state_runbooks.core.state_file_stats import partition_figures
from state_runbooks.core.store_scan import inspect_stores
from state_runbooks.running.checklist import production_checklist, retention_check
from state_runbooks.running.results import Finding
from state_runbooks.safety.diagnosis.diagnose import diagnose
from state_runbooks.safety.watch import log_listing

from .next_runbook import open_next
from .roots import Folder
from .thresholds import Thresholds

# The per-checkpoint statuses, worst first: a check that could not run (unknown) may hide
# anything, so it ranks above a warning; an active query is ok as far as it could be judged.
STATUSES = ("critical", "unknown", "warning", "active", "ok")
STATE_ROWS = ("exact", "metadata", "auto")
AUTO_EXACT_BYTES = 256 * 1024 ** 2  # state_rows=auto: Spark's reader counts per partition up to this
# The settings a checkpoint pins that decide how its state is kept.
PINNED = (PROVIDER_CONF, SHUFFLE_PARTITIONS_CONF, ROCKSDB_FORMAT_CONF, JOIN_FORMAT_CONF,
          AGGREGATION_FORMAT_CONF, FLATMAP_FORMAT_CONF)
# 03's checklist items the fleet reports, and where each sends a person.
CHECKLIST_NEXT = {"provider": "01", "no_watermark": "03", "partition_skew": "07",
                  "names_another_location": "03", "state_growth": "02"}


@dataclass
class Examination:
    """One folder of the fleet, as the run found it."""
    checkpoint_path: str
    root: str
    findings: list[Finding] = field(default_factory=list)
    figures: dict = field(default_factory=dict)
    not_judged: list[str] = field(default_factory=list)  # checks that could not run, one line each
    active: bool = False
    seconds: float = 0.0

    @property
    def status(self) -> str:
        severities = {f.severity for f in self.findings}
        if "critical" in severities:
            return "critical"
        if self.not_judged:
            return "unknown"
        if "warning" in severities:
            return "warning"
        return "active" if self.active else "ok"

    @property
    def worst(self) -> Finding | None:
        order = {"critical": 0, "warning": 1, "info": 2}
        return min(self.findings, key=lambda f: order[f.severity], default=None)

    def add(self, code: str, severity: str, message: str, runbook: str | None = None,
            **parameters) -> None:
        details = ({"open": open_next(runbook, self.checkpoint_path, message, **parameters)}
                   if runbook else {})
        self.findings.append(Finding(code, severity, message, details))

    def cannot(self, check: str, error: BaseException) -> None:
        line = str(error).splitlines()[0] if str(error) else type(error).__name__
        self.not_judged.append(f"{check}: {line}")

    def to_dict(self) -> dict:
        return {"checkpoint_path": self.checkpoint_path, "root": self.root,
                "status": self.status, "active": self.active,
                "findings": [f.to_dict() for f in self.findings],
                "not_judged": list(self.not_judged), **self.figures}


def _guarded(exam: Examination, check: str, fn, *args):
    try:
        return fn(*args)
    except Exception as error:  # noqa: BLE001 - any failure leaves the check unknown, said
        exam.cannot(check, error)
        return None


# -- figures from the files ------------------------------------------------------------------------
def listed_logs(ckpt: Checkpoint, diag) -> dict:
    """The logs and the metadata file as the diagnosis's walk saw them (the figures and its
    judgement see the same files), else as listed now."""
    if diag is not None:
        return diag.inventory
    listing = log_listing(ckpt.fs.raw())
    if ckpt.fs.exists("metadata"):
        listing["metadata"] = None
    return listing


def log_figures(ckpt: Checkpoint, now_ms: int, listing: dict) -> dict:
    """The logs (``listing``: see :func:`listed_logs`): last committed batch, its time and age,
    batches in flight, the metadata file, the commit log's format."""
    commits = listed_batches(listing, "commits")
    offsets = sorted(listed_batches(listing, "offsets"))
    last = max(commits) if commits else None
    out = {"metadata_file": "metadata" in listing,
           "last_committed_batch": last,
           "batches_in_flight": [b for b in offsets if last is None or b > last],
           "last_commit_ms": commits[last].modified_ms if last is not None else None}
    out["age_hours"] = (round((now_ms - out["last_commit_ms"]) / 3_600_000, 3)
                        if out["last_commit_ms"] else None)
    if last is not None:
        line = ckpt.fs.read_bytes(f"commits/{last}")[:8].decode(errors="replace")
        out["commit_log_format"] = line.split("\n")[0]
    return out


def offsets_figures(ckpt: Checkpoint, newest: int | None, last: int | None) -> dict:
    """What the newest offsets entry pins, and the watermark at the last committed batch."""
    entries = {b: ckpt.offsets(b) for b in {newest, last} - {None}}
    out = {"offset_log_format": entries[newest].format_version if newest is not None else None,
           "checkpoint_format": ckpt.format_version, "provider": ckpt.provider_kind,
           "pinned_settings": {k: v for k, v in ckpt.pinned_conf.items() if k in PINNED}}
    if last is not None:
        watermark, _where = ckpt.watermark(last)
        batch_ms = entries[last].timestamp_ms
        out.update(batch_time_ms=batch_ms, watermark_ms=watermark or None,
                   watermark_behind_batch_s=round((batch_ms - watermark) / 1000, 1)
                   if watermark else None)
    return out


def file_figures(ckpt: Checkpoint, counted: list[dict] | None = None) -> dict:
    """Bytes and files on storage (state files, SSTs, schemas), the largest partition, and the
    largest snapshot lag (versions since a partition's newest snapshot, from the file names):
    from the fleet's Spark job (``counted``: this checkpoint's partitions), else from the listing
    the examination already holds."""
    if counted is not None:
        return {**partition_figures(counted), "files_from": "Spark's job over the fleet"}
    return {**partition_figures(ckpt.partition_files()), "files_from": "the driver's listing"}


def retention_figures(ckpt: Checkpoint, listing: dict | None) -> dict:
    """``minBatchesToRetain`` against the batches the logs keep and the oldest state on disk:
    03's retention item, in every ``state_rows`` mode, from the logs as listed (``listing``)."""
    batches = sorted(listed_batches(listing, "offsets")) if listing is not None else None
    return {"min_batches_to_retain": ckpt.retention(batches)[0],
            "retention": retention_check(ckpt, batches).message}


def operator_figures(ckpt: Checkpoint) -> dict:
    ops = ckpt.operators()
    return {"operators": [{"operator_id": o.operator_id, "operator_name": o.operator_name,
                           "stores": [s.store_name for s in o.stores],
                           "partitions": o.num_partitions} for o in ops],
            "stores": sum(len(o.stores) for o in ops),
            "partitions": max((o.num_partitions for o in ops), default=0)}


def row_figures(reports) -> dict:
    """Rows per operator and partition from 03's scan: skew and empty partitions."""
    per_op: dict[int, int] = {}
    for r in reports:
        per_op[r.operator_id] = per_op.get(r.operator_id, 0) + (r.rows or 0)
    skews = [r.skew_ratio for r in reports if r.skew_judged and r.skew_ratio is not None]
    return {"rows": sum(per_op.values()), "rows_per_operator": per_op,
            "skew": round(max(skews), 3) if skews else None,
            "empty_partitions": sum(sum(1 for n in r.rows_per_partition if n == 0)
                                    for r in reports if r.readable)}


# -- the judgements --------------------------------------------------------------------------------
def judge_logs(exam: Examination, t: Thresholds) -> None:
    """Age, batches in flight, the metadata file: what a stopped or stuck query shows."""
    f = exam.figures
    if f.get("metadata_file") is False:  # None: the logs could not be listed, nothing is known
        exam.add("no_metadata_file", "critical", "no metadata file: a restart starts a new query "
                 "(a new id) or fails; 05 says what is missing and how to restore it", "05")
    age = f.get("age_hours")
    if exam.active or age is None:
        return
    if age > t.max_age_hours:
        in_flight = f.get("batches_in_flight") or []
        stuck = (f"batch {in_flight[0]} in flight since" if in_flight else "last commit")
        exam.add("stalled", "warning", f"{stuck} {age:.1f} h ago (> {t.max_age_hours:g} h) and "
                 "nothing written since: the query stalled or was stopped",
                 "05" if in_flight else "06")


def judge_diagnosis(exam: Examination, diag) -> None:
    """05's diagnosis as 05 gives it: state that does not load is critical, the rest said."""
    exam.figures["state_loads"] = (None if diag.unconfirmed else not diag.state_does_not_load)
    exam.figures["last_good_batch"] = diag.last_good_batch_id
    exam.figures["diagnosis"] = diag.verdict()
    if diag.unconfirmed:
        exam.not_judged.append(f"diagnosis: {diag.verdict()}")
    elif diag.state_does_not_load:
        exam.add("state_not_loaded", "critical", diag.verdict(), "05")
    elif diag.reader_limits:
        exam.not_judged.append(f"diagnosis: {diag.verdict()}")
    elif diag.problems and not all(p.problem.startswith("offsets entry without a commit")
                                   for p in diag.problems):
        exam.add("damaged_files", "warning", diag.verdict(), "05")


def judge_checklist(exam: Examination, items) -> None:
    """03's checklist: its warned items, each sending a person where 03 would."""
    for item in items:
        if item.severity == "warning" and item.code in CHECKLIST_NEXT:
            extra = ({"num_partitions": 2 * max(exam.figures.get("partitions") or 1, 1)}
                     if item.code == "partition_skew" else {})
            exam.add(item.code, "warning", item.message, CHECKLIST_NEXT[item.code], **extra)


def judge_sizes(exam: Examination, t: Thresholds) -> None:
    f = exam.figures
    if (f.get("rows") or 0) > t.max_rows:
        exam.add("many_rows", "warning", f"{f['rows']:,} rows (> {t.max_rows:,}): estimate what "
                 "they cost on the heap", "02")
    if (f.get("bytes") or 0) > t.max_bytes:
        exam.add("many_bytes", "warning", f"{f['bytes']:,} bytes of state files (> "
                 f"{t.max_bytes:,})", "02")
    if (f.get("max_files_per_partition") or 0) > t.max_files_per_partition:
        exam.add("many_files", "warning", f"{f['max_files_per_partition']:,} state files in one "
                 f"partition (> {t.max_files_per_partition:,}): old versions are not cleaned up, "
                 "or the retention is long", "03")
    if (f.get("max_snapshot_lag") or 0) > t.max_snapshot_lag:
        exam.add("snapshot_lag", "warning", f"a partition's newest snapshot is "
                 f"{f['max_snapshot_lag']} versions old (> {t.max_snapshot_lag}): each load "
                 "replays that many files", "03")
    skew = f.get("skew")
    if skew is not None and skew > t.max_skew and not any(x.code == "partition_skew"
                                                          for x in exam.findings):
        exam.add("partition_skew", "warning", f"skew {skew:.2f} > {t.max_skew:.2f}", "07",
                 num_partitions=2 * max(f.get("partitions") or 1, 1))


def rows_mode(state_rows: str, figures: dict) -> str:
    """exact or metadata: ``auto`` counts with Spark's reader up to ``AUTO_EXACT_BYTES``."""
    if state_rows == "auto":
        return "exact" if (figures.get("bytes") or 0) <= AUTO_EXACT_BYTES else "metadata"
    return state_rows


# -- one checkpoint --------------------------------------------------------------------------------
def examine(spark, folder: Folder, thresholds: Thresholds | None = None, state_rows: str = "auto",
            now_ms: int | None = None, diagnose_fn=diagnose, scan_fn=inspect_stores,
            opened: Checkpoint | None = None, counted_files=None) -> Examination:
    """Every figure and finding of one folder, read-only (``opened``: its checkpoint, when the
    caller has opened it already; ``counted_files(path)``: its partitions as the fleet's Spark
    job counted them, None where it did not)."""
    t = thresholds or Thresholds()
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    started = time.monotonic()
    exam = Examination(folder.path, folder.root)
    try:
        _examine(spark, folder, exam, t, state_rows, now_ms, diagnose_fn, scan_fn, opened,
                 counted_files or (lambda _path: None))
    finally:
        exam.seconds = round(time.monotonic() - started, 3)
    return exam


def _examine(spark, folder, exam, t, state_rows, now_ms, diagnose_fn, scan_fn, opened,
             counted_files) -> None:
    if folder.lacks:
        never_ran = folder.lacks.startswith("only its metadata file")
        exam.add("never_ran" if never_ran else "incomplete_checkpoint",
                 "info" if never_ran else "critical", folder.lacks, None if never_ran else "05")
        return
    try:
        ckpt = opened or Checkpoint(spark, folder.path, require_state=False)
    except RunbookError as error:
        exam.add("not_opened", "critical", str(error).splitlines()[0], "05")
        return
    exam.figures["query_id"] = _guarded(exam, "query id", lambda: ckpt.query_id)
    stateful = _guarded(exam, "state folder", lambda: ckpt.has_state_operators)
    diag = _guarded(exam, "diagnosis", diagnose_fn, ckpt) if stateful is not None else None
    listing = _guarded(exam, "logs", listed_logs, ckpt, diag)
    if listing is not None:
        exam.figures.update(_guarded(exam, "logs", log_figures, ckpt, now_ms, listing) or {})
    newest = max(listed_batches(listing or {}, "offsets"), default=None)
    exam.figures.update(_guarded(exam, "offsets", offsets_figures, ckpt, newest,
                                 exam.figures.get("last_committed_batch")) or {})
    if diag is not None:
        exam.active = diag.active
        exam.figures["activity"] = "; ".join(diag.activity.reasons) if diag.active else ""
        judge_diagnosis(exam, diag)
    judge_logs(exam, t)
    exam.figures["rows_from"] = None
    if not stateful:
        return
    exam.figures.update(_guarded(exam, "operators", operator_figures, ckpt) or {})
    exam.figures.update(_guarded(exam, "retention", retention_figures, ckpt, listing) or {})
    exam.figures.update(_guarded(exam, "files", file_figures, ckpt,
                                 counted_files(folder.path)) or {})
    mode = rows_mode(state_rows, exam.figures)
    reports = None
    if exam.figures.get("last_committed_batch") is None:
        pass
    elif mode == "exact" and exam.figures.get("state_loads") is not False:
        reports = _guarded(exam, "rows", lambda: scan_fn(ckpt, top_keys=0))
        if reports is not None:
            exam.figures.update(row_figures(reports), rows_from="Spark's statestore reader")
    elif diag is not None and diag.load_test and all(r.ok for r in diag.load_test):
        exam.figures.update(rows=sum(r.rows or 0 for r in diag.load_test),
                            rows_from="05's load test (counts per store; skew not measured)")
    if reports is not None:
        items = _guarded(exam, "checklist", production_checklist, ckpt, reports, None,
                         t.max_skew)
        judge_checklist(exam, items or [])
    judge_sizes(exam, t)
