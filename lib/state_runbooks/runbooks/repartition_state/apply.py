"""Repartition through the one procedure every change follows (:mod:`state_runbooks.safety.change`):
this module says what the change is, calls Spark's offline repartition and verifies the result.

The verification after Spark's call: a new batch is committed, the newest offsets pin the new
partition count, no file that was there before changed, and for every unit the rows (count and
checksum of every key and value) equal the rows before, sit where the placement rule puts them on
the new count, and match the forecast per partition.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError, first_line
from state_runbooks.common.spark_settings import SHUFFLE_PARTITIONS_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.state_reader import format_conf
from state_runbooks.safety import safekeeping
from state_runbooks.safety.activity import QUIET_MINUTES
from state_runbooks.safety.change import apply_change, undo_change
from state_runbooks.safety.safekeeping import Change, Outcome

from .checks import API_NAME, Checks, check_requirements
from .forecast import UnitScan, forecast, rows_equal, scan_state

REPARTITION = Change("repartition", ".repartition-", "repartition_state", ("repartition", "undo"))
ENFORCE_EXACTLY_ONCE_SINK = True  # Spark's default: never skip a failed batch of the sink


@dataclass
class Repartitioned(Outcome):
    """What a repartition did (or, in a dry run, would do), with what it acted on: the runbook's
    one result, which the summary reads."""
    num_partitions_before: int | None = None
    num_partitions_after: int | None = None
    rows_equal: bool | None = None
    after: list[UnitScan] = field(default_factory=list)
    checks: Checks | None = field(default=None, repr=False)  # the requirements, as checked
    # The scan of the last committed batch on the current count, with the forecast (None: not
    # taken, or a live writer raced it).
    before: list[UnitScan] | None = field(default=None, repr=False)


class _Repartition:
    """What 07 tells the procedure: the change, Spark's call, its verification."""
    change = REPARTITION

    def __init__(self, ckpt: Checkpoint, checks: Checks, before: list[UnitScan] | None):
        self.ckpt, self.checks, self.before = ckpt, checks, before
        self.n0, self.n1 = checks.num_partitions_before, checks.num_partitions_after
        self.last = ckpt.last_committed_batch_id

    def does(self) -> str:
        return (f"has Spark rewrite the state of batch {self.last} on {self.n1} partitions as a "
                "new batch")

    def journal(self) -> dict:
        return {"action": f"repartition from {self.n0} to {self.n1} partitions",
                "num_partitions_before": self.n0, "num_partitions_after": self.n1,
                "batch_id_before": self.last,
                "rows_before": {s.label: {"rows": s.rows, "checksum": list(s.checksum)}
                                for s in self.before}}

    def call(self, out: Outcome, journal: dict | None) -> str | None:
        try:
            with format_conf(self.ckpt):
                getattr(self.ckpt.spark, API_NAME).repartition(self.ckpt.root, self.n1,
                                                               ENFORCE_EXACTLY_ONCE_SINK)
            return None
        except Exception as exc:  # noqa: BLE001 - Py4J wraps whatever Spark raised
            return first_line(exc)

    def verify(self, out: Repartitioned, inventory: dict) -> tuple[bool, list[str]]:
        lines: list[str] = []
        ok = _verify(self.ckpt, inventory, self.last, self.before, self.n1, out, lines)
        # Only now: the verification reads the logs and the new batch directly, and keeps the
        # operators listed before (Spark adds a batch, not operators or stores).
        self.ckpt.refresh()
        return ok, lines


def repartition(ckpt: Checkpoint, num_partitions: int, dry_run: bool = True,
                backup_dir: str = "", force: bool = False,
                quiet_minutes: float = QUIET_MINUTES, checks: Checks | None = None,
                before: list[UnitScan] | None = None) -> Repartitioned:
    """Rewrite the checkpoint's state on ``num_partitions`` partitions (dry run unless asked).

    ``checks`` and ``before`` (the scan of the last committed batch on the current count, with
    the forecast) are taken here unless given: a notebook shows them first and passes them on."""
    checks = checks or check_requirements(ckpt, num_partitions, force, quiet_minutes)
    out = Repartitioned("repartition", dry_run, num_partitions_before=checks.num_partitions_before,
                        num_partitions_after=checks.num_partitions_after, checks=checks,
                        before=before)
    if not dry_run and checks.refusal() is None:
        if num_partitions == 0:
            raise RunbookError("num_partitions=0 only forecasts (twice the current count): pass "
                               "the new count explicitly to apply")
        if before is None:
            before, checks = forecast(ckpt, checks)
            out.before, out.checks = before, checks
            out.refused = checks.refusal()  # a live writer moved the logs under the scan
    return apply_change(ckpt, _Repartition(ckpt, checks, before), checks, out,
                        backup_dir=backup_dir, quiet_minutes=quiet_minutes)


def _verify(ckpt: Checkpoint, inventory: dict, last_before: int, before: list[UnitScan],
            n1: int, out: Repartitioned, lines: list[str]) -> bool:
    # The listing that checks every earlier file runs in the driver while the state is scanned
    # on the executors: two independent reads of the checkpoint as Spark left it.
    with ThreadPoolExecutor(max_workers=1) as pool:
        listing = pool.submit(safekeeping.changed_files, ckpt, inventory)
        return _verify_rows(ckpt, last_before, before, n1, out, listing, lines)


def _verify_rows(ckpt: Checkpoint, last_before: int, before: list[UnitScan], n1: int,
                 out: Repartitioned, listing, lines: list[str]) -> bool:
    last, newest = ckpt.last_committed_batch_id, ckpt.offset_batch_ids[-1]
    pinned = ckpt.offsets(newest).conf.get(SHUFFLE_PARTITIONS_CONF)
    new_batch = last == last_before + 1 and newest == last
    lines.append(f"{'verified' if new_batch else 'NOT verified'}: Spark committed batch {last} "
                 f"(the last batch before was {last_before})")
    count_ok = pinned == str(n1)
    lines.append(f"{'verified' if count_ok else 'NOT verified'}: the newest offsets entry pins "
                 f"{SHUFFLE_PARTITIONS_CONF}={pinned} (asked: {n1})")
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


def undo(ckpt: Checkpoint, journal_path: str = "", dry_run: bool = True, force: bool = False,
         quiet_minutes: float = QUIET_MINUTES) -> Outcome:
    """Put the checkpoint back as the repartition found it, byte for byte: the files Spark wrote
    (and those of a query restarted since) go aside into the backup folder, never deleted."""
    return undo_change(ckpt, REPARTITION, journal_path, "", dry_run, force, quiet_minutes)
