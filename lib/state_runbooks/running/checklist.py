"""The production checklist of 03 inspect state, which 13 fleet health runs on every checkpoint
of a fleet: each item (provider, changelog, watermark, partition balance, growth, state loads,
retention, location) decided by the checkpoint's own facts."""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.formatting import format_utc
from state_runbooks.common.spark_settings import CHANGELOG_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.growth import growth_verdicts
from state_runbooks.core.named_locations import elsewhere
from state_runbooks.core.state_limits import HDFS_STATE_ROWS
from state_runbooks.core.state_loads import (
    DAMAGE,
    LOAD_FAILURE_MEANING,
    load_failure_kind,
)
from state_runbooks.core.store_scan import (
    SKEW_MIN_ROWS_PER_PARTITION,
    SKEW_WARNING_RATIO,
    StoreReport,
)
from state_runbooks.running.results import Finding

# Expiry rules decided by the event-time watermark (see operators.Expiry).
WATERMARK_RULES = ("watermark_key", "expires_at", "session_end", "join_side")
# A key without event time: a watermark cannot bound it, whatever its delay.
NO_EVENT_TIME_REMEDY = ("a watermark cannot bound a key without event time: put a time column in "
                        "the key (a window, or the event time itself), or keep the state in "
                        "transformWithState with a TTL")
# How a unit's rows go, per expiry rule, in words.
_RULE_WORDS = {
    "watermark_key": "the watermark evicts it by an event-time column of the key",
    "key_without_event_time": "nothing evicts it: its key has no event-time column",
    "expires_at": "the watermark evicts each key once past its event time plus the delay",
    "session_end": "the watermark evicts a session once past its end",
    "join_side": "the watermark evicts a side's rows once the other side can no longer match them",
    "timeout": "its keys time out (GroupState timeouts)",
    "ttl": "its rows expire by TTL",
    "timer": "timers fire and are removed",
    "processor": "only the processor's own code clears it",
    "never": "one row that never expires",
    "unknown": "its expiry is unknown",
}


@dataclass
class Inspection:
    """What the inspection's steps produced: what the summary reports."""
    reports: list[StoreReport]  # one per unit, at the inspected batch
    growth: object  # rows per unit over the sampled batches (a DataFrame), or None
    checklist: list[Finding]


def _item(code: str, title: str, status: str, evidence: str) -> Finding:
    """A checklist item as a finding: a warned item is a warning, a passed one or a note is info;
    ``details`` keep the title and the status (pass, warn, info) the checklist table shows."""
    return Finding(code, "warning" if status == "warn" else "info", evidence,
                   {"item": title, "status": status})


def check_provider(ckpt: Checkpoint, reports: list[StoreReport]) -> Finding:
    """RocksDB, or the HDFS-backed provider while its rows fit in executor memory."""
    total_rows = sum(r.rows or 0 for r in reports)
    title = "State store provider"
    if ckpt.provider_kind == "rocksdb":
        return _item("provider", title, "pass", f"RocksDB pinned in offsets: {ckpt.provider_class}")
    if total_rows > HDFS_STATE_ROWS:
        return _item("provider", title, "warn",
                     f"HDFS-backed provider keeps all {total_rows:,} rows in executor JVM memory "
                     f"(> {HDFS_STATE_ROWS:,}): plan a switch to RocksDB "
                     "(runbooks/switch-to-rocksdb.md)")
    return _item("provider", title, "pass",
                 f"HDFS-backed provider (Spark's default) with {total_rows:,} rows: fine below "
                 f"{HDFS_STATE_ROWS:,}")


def check_changelog(ckpt: Checkpoint) -> Finding:
    """Whether RocksDB uploads each batch's changes rather than a full snapshot."""
    changelog, title = ckpt.changelog_checkpointing, "Changelog checkpointing"
    if changelog is None:
        return _item("changelog", title, "info",
                     "not applicable: the HDFS-backed provider writes a delta per batch")
    if changelog:
        return _item("changelog", title, "pass", "RocksDB writes <version>.changelog files")
    return _item("changelog", title, "info",
                 "RocksDB uploads a full snapshot (zip) every batch; to upload only each "
                 f"batch's changes, set {CHANGELOG_CONF}=true in the query's session and restart "
                 "it: the checkpoint does not pin this flag, so the same checkpoint switches at "
                 "the next batch")


def _never_evicted(reports: list[StoreReport]) -> list[StoreReport]:
    return [r for r in reports if r.expiry_rule == "key_without_event_time"]


def _by_watermark(reports: list[StoreReport]) -> list[StoreReport]:
    return [r for r in reports if r.expiry_rule in WATERMARK_RULES]


def check_watermark(reports: list[StoreReport], watermark: int, where: str) -> Finding:
    """Whether the recorded watermark (``watermark`` ms, read from ``where``) evicts the state
    that expires by event time, and whether any key has no event time to evict it by."""
    never_evicted, by_watermark = _never_evicted(reports), _by_watermark(reports)
    title = "Watermark"
    if watermark <= 0 and by_watermark + never_evicted:
        names = ", ".join(sorted({r.operator_name for r in by_watermark + never_evicted}))
        remedy = ("add withWatermark on the event-time column" if by_watermark else
                  NO_EVENT_TIME_REMEDY)
        return _item("no_watermark", title, "warn",
                     f"no event-time watermark in {where}: the state of {names} can only grow; "
                     f"{remedy}")
    if watermark <= 0 and any(r.expiry_rule == "unknown" for r in reports):
        names = ", ".join(sorted({r.label for r in reports if r.expiry_rule == "unknown"}))
        return _item("no_watermark", title, "info",
                     f"no event-time watermark in {where}; the runbooks do not know how the state "
                     f"of {names} expires, so whether it needs one is not judged")
    if watermark <= 0:
        return _item("no_watermark", title, "info",
                     f"no event-time watermark in {where}, and none is needed: "
                     + "; ".join(sorted({f"{r.operator_name}: {_RULE_WORDS[r.expiry_rule]}"
                                         for r in reports if r.readable})))
    if never_evicted:
        return _item("no_watermark", title, "warn",
                     f"watermark {format_utc(watermark)} in {where}, but the keys of "
                     + ", ".join(f"{r.label} ({r.operator_name})" for r in never_evicted)
                     + " have no event-time column, so the watermark never evicts them; "
                     + NO_EVENT_TIME_REMEDY)
    # The watermark evicts only what an operator expires by event time; say how the rest goes.
    rest = sorted({f"{r.label}: {_RULE_WORDS[r.expiry_rule]}" for r in reports
                   if r.readable and r.expiry_rule not in WATERMARK_RULES})
    if by_watermark:
        evicted = ", ".join(sorted({r.label for r in by_watermark}))
        return _item("no_watermark", title, "pass",
                     f"event-time watermark {format_utc(watermark)} in {where}: it evicts the "
                     f"expired state of {evicted}" + (f"; {'; '.join(rest)}" if rest else ""))
    return _item("no_watermark", title, "info",
                 f"event-time watermark {format_utc(watermark)} in {where}; it evicts none of "
                 f"this state: {'; '.join(rest)}")


def check_balance(reports: list[StoreReport], skew_warning_ratio: float) -> Finding:
    """The worst skew ratio of the stores with enough rows per partition to judge it."""
    judged = [r for r in reports if r.skew_judged and r.skew_ratio is not None]
    skewed = [r for r in judged if r.skew_ratio > skew_warning_ratio]
    worst = max(judged, key=lambda r: r.skew_ratio, default=None)
    title = "Partition balance"
    if skewed:
        return _item("partition_skew", title, "warn",
                     "; ".join(f"{r.label}: skew {r.skew_ratio:.2f} > {skew_warning_ratio:.2f}"
                               for r in skewed) + " (runbooks/partition-skew.md)")
    if worst is not None:
        return _item("partition_skew", title, "pass",
                     f"worst skew {worst.skew_ratio:.2f} ({worst.label}) <= "
                     f"{skew_warning_ratio:.2f}")
    if any(r.rows for r in reports):
        single = sorted({r.operator_name for r in reports if len(r.partitions_with_state) == 1})
        why = (f"{', '.join(single)} keeps its state in one partition by design; " if single
               else "")
        return _item("partition_skew", title, "info",
                     f"not judged: {why}fewer than {SKEW_MIN_ROWS_PER_PARTITION} rows per "
                     "partition elsewhere, too few for a ratio to mean anything")
    return _item("partition_skew", title, "info", "every store is empty")


def check_growth(reports: list[StoreReport], growth_table, watermark: int) -> Finding | None:
    """Stores that only grew: a leak when nothing evicts them, else a young query filling its
    horizon. None without a growth table to judge."""
    verdicts = growth_verdicts(growth_table) if growth_table is not None else {}
    growing = {s: v for s, v in verdicts.items() if v["only_grew"]}
    unbounded_labels = {r.label for r in _never_evicted(reports)}
    if watermark <= 0:
        unbounded_labels |= {r.label for r in _by_watermark(reports)}
    rules = {r.label: r.expiry_rule for r in reports}
    unbounded = {s: v for s, v in growing.items() if s in unbounded_labels}
    evicted = {s: v for s, v in growing.items() if s not in unbounded_labels}
    filling = {s: v for s, v in evicted.items() if v["level_from"] is None}
    level = {s: v for s, v in evicted.items() if v["level_from"] is not None}
    title = "State growth"
    if unbounded:
        return _item("state_growth", title, "warn",
                     "; ".join(f"{s} only grew ({v['first']:,} -> {v['last']:,} rows) and "
                               "nothing evicts it" for s, v in unbounded.items()))
    held = "; ".join(f"{s} rose ({v['first']:,} -> {v['last']:,} rows) and held "
                     f"{v['last']:,} from batch {v['level_from']}" for s, v in level.items())
    if filling:
        return _item("state_growth", title, "info",
                     "; ".join(f"{s} only grew ({v['first']:,} -> {v['last']:,} rows; "
                               f"{_RULE_WORDS.get(rules.get(s), _RULE_WORDS['unknown'])})"
                               for s, v in filling.items())
                     + ": expected while a young query fills its horizon; check again later"
                     + (f"; {held}: levelled off" if held else ""))
    if level:
        return _item("state_growth", title, "pass",
                     f"{held}: the watermark now evicts as many rows as each batch adds")
    if verdicts:
        points = max(v["points"] for v in verdicts.values())
        return _item("state_growth", title, "pass",
                     f"no store only grew over {points} sampled batches")
    return None


def check_loads(reports: list[StoreReport]) -> Finding | None:
    """Units Spark's reader refused: damage, or a limit of the reader. None when all were read."""
    unread = [r for r in reports if not r.readable]
    damaged = [r for r in unread if load_failure_kind(r.reader_error_class) == DAMAGE]
    title = "State loads"
    if damaged:
        return _item("state_not_loaded", title, "warn",
                     "; ".join(f"{r.label}: {r.reader_error_class or 'error'}" for r in damaged)
                     + ": Spark could not load this state; run 05 recover corrupted state "
                     "(runbooks/cannot-load-state-store.md)")
    if unread:
        return _item("state_not_loaded", title, "info",
                     "; ".join(f"{r.label}: {r.reader_error_class} "
                               f"({LOAD_FAILURE_MEANING[load_failure_kind(r.reader_error_class)]})"
                               for r in unread) + "; the query itself is not affected")
    return None


def check_location(ckpt: Checkpoint) -> Finding | None:
    """Whether the checkpoint names another place for its own files (a copy of a
    ``transformWithState`` checkpoint names the original's schema files): None when it does not."""
    foreign = elsewhere(ckpt.fs)
    if not foreign:
        return None
    files = sorted({n.file for n in foreign})
    shown = files[0] + (f" and {len(files) - 1} more" if len(files) > 1 else "")
    return _item("names_another_location", "Location", "warn",
                 f"its operator metadata ({shown}) names the schema files of "
                 f"{', '.join(sorted({n.checkpoint for n in foreign}))}: this checkpoint was "
                 "copied from there, restarts only while that place holds those files, and makes "
                 "folders there when it does not; keep the original in place, and never run the "
                 "two at once (one query id)")


def retention_check(ckpt: Checkpoint, batch_ids: list[int] | None = None) -> Finding:
    """Whether old state versions are deleted: state files older than the oldest batch the logs
    keep are what state maintenance (a background task of the running query) has yet to delete.
    ``minBatchesToRetain`` comes from the checkpoint (``Checkpoint.retention``); ``batch_ids``:
    the offsets entries a listing just saw (sorted), else the log is listed."""
    batches = ckpt.offset_batch_ids if batch_ids is None else batch_ids
    ran = batches[-1] + 1 if batches else 0
    retain, source = ckpt.retention(batches)
    oldest_state = min((f.batch_id for f in ckpt.state_files()), default=None)
    oldest_log = batches[0] if batches else 0
    said = f"minBatchesToRetain={retain} ({source})"
    title = "Old state versions cleaned up"
    if oldest_state is None or ran <= retain:
        return _item("retention", title, "info", f"not due yet: {ran} batches ran; {said}")
    if oldest_state >= oldest_log:
        return _item("retention", title, "pass",
                     f"the oldest state on disk is batch {oldest_state}'s, the logs keep batches "
                     f"{oldest_log}..{batches[-1]}; {said}")
    return _item("retention", title, "info",
                 f"state from batch {oldest_state} is still on disk while the logs keep batches "
                 f"{oldest_log}..{batches[-1]}: state maintenance, which runs in the background "
                 f"while the query runs, has not deleted it yet; {said}")


def check_monitoring() -> Finding:
    """What a checkpoint cannot show: a note on how to watch the query."""
    return _item("monitoring", "Monitoring and recovery", "info",
                 "not visible in a checkpoint: schedule this runbook "
                 "(runbooks/schedules/inspect_state.yaml) and keep "
                 "runbooks/cannot-load-state-store.md at hand")


def production_checklist(ckpt: Checkpoint, reports: list[StoreReport], growth_table,
                         skew_warning_ratio: float = SKEW_WARNING_RATIO) -> list[Finding]:
    """The production checklist, each item decided by the checkpoint's own facts."""
    last = ckpt.last_committed_batch_id
    watermark, where = ckpt.watermark(last) if last is not None else (0, "offsets")
    items = [check_provider(ckpt, reports), check_changelog(ckpt),
             check_watermark(reports, watermark, where), check_balance(reports, skew_warning_ratio),
             check_growth(reports, growth_table, watermark), check_loads(reports),
             retention_check(ckpt), check_location(ckpt), check_monitoring()]
    return [i for i in items if i is not None]


def checklist_lines(items: list[Finding]) -> list[str]:
    """The checklist table: ``[status] title: evidence`` per item."""
    return [f"[{i.details['status']:<4}] {i.details['item']}: {i.message}" for i in items]
