"""Repartition, safely: check, back up and journal (the shared safekeeping machinery), call Spark,
verify, and undo on its own when the verification fails.

The verification after Spark's call: a new batch is committed, the newest offsets pin the new
partition count, no file that was there before changed, and for every unit the rows (count and
checksum of every key and value) equal the rows before, sit where the placement rule puts them on
the new count, and match the forecast per partition.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError, first_line
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.state_reader import format_conf
from state_runbooks.safety import safekeeping
from state_runbooks.safety.activity import QUIET_MINUTES, check_activity
from state_runbooks.safety.change import logs_moved
from state_runbooks.safety.safekeeping import (
    Change,
    Outcome,
    files_to_keep,
    live_writer_signs,
    open_backup,
    safekeep,
    write_journal,
)
from state_runbooks.safety.watch import signs_line

from .checks import API_NAME, Checks, check_requirements
from .forecast import UnitScan, forecast, rows_equal, scan_state

MODES = ("repartition", "undo")
BACKUP_MARK = ".repartition-"  # default backup folder: <checkpoint>.repartition-<UTC time>
REPARTITION = Change("repartition", BACKUP_MARK, "repartition_state")
ENFORCE_EXACTLY_ONCE_SINK = True  # Spark's default: never skip a failed batch of the sink


@dataclass
class Repartitioned(Outcome):
    num_partitions_before: int | None = None
    num_partitions_after: int | None = None
    rows_equal: bool | None = None
    auto_undone: bool = False  # the verification failed (or Spark did) and undo ran
    verification: list[str] = field(default_factory=list)
    after: list[UnitScan] = field(default_factory=list)
    seconds: dict = field(default_factory=dict)  # step -> wall seconds: where an apply's time went


def repartition(ckpt: Checkpoint, num_partitions: int, dry_run: bool = True,
                backup_dir: str = "", force: bool = False,
                quiet_minutes: float = QUIET_MINUTES, checks: Checks | None = None,
                before: list[UnitScan] | None = None) -> Repartitioned:
    """Rewrite the checkpoint's state on ``num_partitions`` partitions (dry run unless asked).

    ``checks`` and ``before`` (the scan of the last committed batch on the current count, with
    the forecast) are taken here unless given: a notebook shows them first and passes them on."""
    started = time.perf_counter()
    taken_here = checks is None
    checks = checks or check_requirements(ckpt, num_partitions, force, quiet_minutes)
    out = Repartitioned("repartition", dry_run, num_partitions_before=checks.num_partitions_before,
                        num_partitions_after=checks.num_partitions_after)
    if taken_here:
        out.seconds["checks"] = _lap(started)
    n0, n1 = checks.num_partitions_before, checks.num_partitions_after
    out.refused = checks.refusal()
    backup_dir = backup_dir or safekeeping.default_backup_dir(ckpt, REPARTITION)
    out.backup_dir = backup_dir
    if dry_run:
        out.lines.append(f"dry run: nothing changed. With dry_run=False this copies the "
                         f"checkpoint's metadata files and journals every file to {backup_dir}, "
                         f"has Spark rewrite the state of batch {ckpt.last_committed_batch_id} on "
                         f"{n1} partitions as a new batch, and verifies it (undone on its own if "
                         "not verified)")
    if safekeeping.stops_here(ckpt, out, []):
        return out
    if num_partitions == 0:
        raise RunbookError("num_partitions=0 only forecasts (twice the current count): pass the "
                           "new count explicitly to apply")
    inventory = checks.inventory if checks.inventory is not None else ckpt.fs.raw().walk()
    out.refused = logs_moved(ckpt, inventory, "repartition")
    if out.refused:
        safekeeping.stops_here(ckpt, out, [])
        return out
    last = ckpt.last_committed_batch_id
    backup = open_backup(ckpt, backup_dir)
    out.backup_dir = backup.root
    started = time.perf_counter()
    if before is None:
        before, checks = forecast(ckpt, checks)
        if before is None:  # a live writer moved the logs under the scan
            out.refused = checks.refusal()
            safekeeping.stops_here(ckpt, out, [])
            return out
        out.seconds["scan before"] = _lap(started)
        started = time.perf_counter()
    _, copies = files_to_keep(inventory, [])
    journal, out.journal_path = safekeep(
        ckpt, backup, REPARTITION, inventory, [], copies,
        {"action": f"repartition from {n0} to {n1} partitions", "num_partitions_before": n0,
         "num_partitions_after": n1, "batch_id_before": last,
         "rows_before": {s.label: {"rows": s.rows, "checksum": list(s.checksum)} for s in before}})
    out.lines.append(f"backed up: {len(copies)} metadata files copied to {backup.root}/copy, "
                     f"{len(inventory)} files journaled in {out.journal_path}")
    out.seconds["backup"] = _lap(started)
    # Just before Spark's call, the whole checkpoint again: any file a query wrote (or its
    # maintenance deleted) since the listing the journal holds stops the repartition here.
    signs = live_writer_signs(ckpt, inventory)
    if signs:
        out.stopped = signs_line(signs)
        out.refused = (f"stopped before Spark's call at the first sign of a live writer "
                       f"({out.stopped}): nothing was changed in the checkpoint (the backup "
                       f"folder {backup.root} holds only copies and the journal)")
        journal["status"] = "stopped"
        journal["stopped"] = {"signs": out.stopped, "moved_before": 0, "put_back": True,
                              "lines": []}
        write_journal(backup, journal)
        out.lines.append(f"refused: {out.refused}")
        return out
    started = time.perf_counter()
    try:
        with format_conf(ckpt):
            getattr(ckpt.spark, API_NAME).repartition(ckpt.root, n1, ENFORCE_EXACTLY_ONCE_SINK)
        spark_failed = None
    except Exception as exc:  # noqa: BLE001 - Py4J wraps whatever Spark raised
        spark_failed = first_line(exc)
    out.seconds["spark"] = _lap(started)
    started = time.perf_counter()
    out.applied = True
    if spark_failed:
        out.verified, out.rows_equal = False, None
        out.verification = [f"NOT verified: Spark's repartition failed: {spark_failed}"]
    else:
        out.verified = _verify(ckpt, journal, before, n1, out)
    # Only now: the verification reads the logs and the new batch directly, and keeps the
    # operators listed before (Spark adds a batch, not operators or stores).
    ckpt.refresh()
    out.seconds["verification"] = _lap(started)
    journal["status"] = "applied"
    journal["verification"] = {"ok": out.verified, "lines": out.verification}
    write_journal(backup, journal)
    out.lines += out.verification
    if not out.verified:
        # Spark may have written a new batch even when it failed: put everything back.
        undone = safekeeping.undo(ckpt, REPARTITION, out.journal_path, dry_run=False, force=True,
                                  activity=check_activity(ckpt, quiet_minutes))
        out.auto_undone = bool(undone.applied and undone.verified)
        out.stopped = undone.stopped
        out.lines.append(("undone on its own: " if undone.applied else "NOT undone: ")
                         + undone.lines[-1])
    return out


def _lap(started: float) -> float:
    return round(time.perf_counter() - started, 2)


def _verify(ckpt: Checkpoint, journal: dict, before: list[UnitScan], n1: int,
            out: Repartitioned) -> bool:
    # The listing that checks every earlier file runs in the driver while the state is scanned
    # on the executors: two independent reads of the checkpoint as Spark left it.
    with ThreadPoolExecutor(max_workers=1) as pool:
        listing = pool.submit(safekeeping.unchanged_since, ckpt, journal)
        return _verify_rows(ckpt, journal, before, n1, out, listing)


def _verify_rows(ckpt: Checkpoint, journal: dict, before: list[UnitScan], n1: int,
                 out: Repartitioned, listing) -> bool:
    lines = out.verification
    last_before = journal["batch_id_before"]
    last, newest = ckpt.last_committed_batch_id, ckpt.offset_batch_ids[-1]
    pinned = ckpt.offsets(newest).conf.get("spark.sql.shuffle.partitions")
    new_batch = last == last_before + 1 and newest == last
    lines.append(f"{'verified' if new_batch else 'NOT verified'}: Spark committed batch {last} "
                 f"(the last batch before was {last_before})")
    count_ok = pinned == str(n1)
    lines.append(f"{'verified' if count_ok else 'NOT verified'}: the newest offsets entry pins "
                 f"spark.sql.shuffle.partitions={pinned} (asked: {n1})")
    out.after = scan_state(ckpt, last, n1, committed_now=True) if new_batch and count_ok else []
    changed = listing.result()
    lines.append("verified: no file that was there before changed (Spark only added files)"
                 if not changed else f"NOT verified: {len(changed)} files that were there before "
                 f"changed (e.g. {changed[0]})")
    if not (new_batch and count_ok):
        out.rows_equal = None
        return False
    by_label = {s.label: s for s in out.after}
    out.rows_equal = rows_equal(before, out.after)
    ok = out.rows_equal and not changed
    for s in before:
        a = by_label.get(s.label)
        if a is None:
            lines.append(f"NOT verified: {s.label} is missing after the repartition")
            continue
        same = a.rows == s.rows and a.checksum == s.checksum
        placed = "" if not s.rule else (
            f"; every row where pmod(hash({s.rule}), {n1}) puts it" if a.misplaced.get(s.rule) == 0
            else f"; {a.misplaced.get(s.rule)} rows NOT where pmod(hash({s.rule}), {n1}) puts them")
        forecast = "" if s.after is None else (
            ", rows per partition as forecast" if a.per_partition == s.after
            else f", rows per partition {a.per_partition} NOT as forecast {s.after}")
        ok = ok and (not s.rule or a.misplaced.get(s.rule) == 0) and (
            s.after is None or a.per_partition == s.after)
        lines.append(f"{'verified' if same else 'NOT verified'}: {s.label}: {a.rows} rows "
                     f"{'equal to' if same else 'DIFFERENT from'} the {s.rows} before (key and "
                     f"value checksums){placed}{forecast}")
    return bool(ok)


def check_mode(mode: str) -> str:
    return safekeeping.check_mode(mode, MODES)


def undo(ckpt: Checkpoint, journal_path: str = "", dry_run: bool = True, force: bool = False,
         quiet_minutes: float = QUIET_MINUTES) -> Outcome:
    """Put the checkpoint back as the repartition found it, byte for byte: the files Spark wrote
    (and those of a query restarted since) go aside into the backup folder, never deleted."""
    return safekeeping.undo(ckpt, REPARTITION, journal_path, dry_run, force,
                            check_activity(ckpt, quiet_minutes))
