"""The inspect-state runbook's production checklist: each item (provider, changelog, watermark,
partition balance, growth, state loads, retention) decided by the checkpoint's own facts."""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.formatting import format_utc
from state_runbooks.common.spark_settings import CHANGELOG_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.growth import growth_verdicts
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


@dataclass(frozen=True)
class CheckItem:
    item: str
    status: str  # pass, warn, info
    evidence: str


def production_checklist(ckpt: Checkpoint, reports: list[StoreReport], growth_table,
                         skew_warning_ratio: float = SKEW_WARNING_RATIO) -> list[CheckItem]:
    """The production checklist, each item decided by the checkpoint's own facts."""
    items = []
    total_rows = sum(r.rows or 0 for r in reports)
    kind = ckpt.provider_kind
    if kind == "rocksdb":
        items.append(CheckItem("State store provider", "pass",
                               f"RocksDB pinned in offsets: {ckpt.provider_class}"))
    elif total_rows > HDFS_STATE_ROWS:
        items.append(CheckItem("State store provider", "warn",
                               f"HDFS-backed provider keeps all {total_rows:,} rows in executor JVM "
                               f"memory (> {HDFS_STATE_ROWS:,}): plan a switch to RocksDB "
                               "(runbooks/switch-to-rocksdb.md)"))
    else:
        items.append(CheckItem("State store provider", "pass",
                               f"HDFS-backed provider (Spark's default) with {total_rows:,} rows: "
                               f"fine below {HDFS_STATE_ROWS:,}"))

    changelog = ckpt.changelog_checkpointing
    if changelog is None:
        items.append(CheckItem("Changelog checkpointing", "info",
                               "not applicable: the HDFS-backed provider writes a delta per batch"))
    elif changelog:
        items.append(CheckItem("Changelog checkpointing", "pass",
                               "RocksDB writes <version>.changelog files"))
    else:
        items.append(CheckItem("Changelog checkpointing", "info",
                               "RocksDB uploads a full snapshot (zip) every batch; to upload "
                               f"only each batch's changes, set {CHANGELOG_CONF}=true in the "
                               "query's "
                               "session and restart it: the checkpoint does not pin this flag, "
                               "so the same checkpoint switches at the next batch"))

    last = ckpt.last_committed_batch_id
    watermark, where = ckpt.watermark(last) if last is not None else (0, "offsets")
    never_evicted = [r for r in reports if r.expiry_rule == "key_without_event_time"]
    by_watermark = [r for r in reports if r.expiry_rule in WATERMARK_RULES]
    if watermark <= 0 and by_watermark + never_evicted:
        names = ", ".join(sorted({r.operator_name for r in by_watermark + never_evicted}))
        remedy = ("add withWatermark on the event-time column" if by_watermark else
                  NO_EVENT_TIME_REMEDY)
        items.append(CheckItem("Watermark", "warn",
                               f"no event-time watermark in {where}: the state of {names} "
                               f"can only grow; {remedy}"))
    elif watermark <= 0 and any(r.expiry_rule == "unknown" for r in reports):
        names = ", ".join(sorted({r.label for r in reports if r.expiry_rule == "unknown"}))
        items.append(CheckItem("Watermark", "info",
                               f"no event-time watermark in {where}; the runbooks do not know how "
                               f"the state of {names} expires, so whether it needs one is not "
                               "judged"))
    elif watermark <= 0:
        items.append(CheckItem("Watermark", "info",
                               f"no event-time watermark in {where}, and none is needed: "
                               + "; ".join(sorted({f"{r.operator_name}: "
                                                   f"{_RULE_WORDS[r.expiry_rule]}"
                                                   for r in reports if r.readable}))))
    elif never_evicted:
        items.append(CheckItem("Watermark", "warn",
                               f"watermark {format_utc(watermark)} in {where}, but the keys of "
                               + ", ".join(f"{r.label} ({r.operator_name})" for r in never_evicted)
                               + " have no event-time column, so the watermark never evicts them; "
                               + NO_EVENT_TIME_REMEDY))
    else:
        # The watermark evicts only what an operator expires by event time; say how the rest goes.
        rest = sorted({f"{r.label}: {_RULE_WORDS[r.expiry_rule]}" for r in reports
                       if r.readable and r.expiry_rule not in WATERMARK_RULES})
        if by_watermark:
            evicted = ", ".join(sorted({r.label for r in by_watermark}))
            items.append(CheckItem("Watermark", "pass",
                                   f"event-time watermark {format_utc(watermark)} in {where}: it "
                                   f"evicts the expired state of {evicted}"
                                   + (f"; {'; '.join(rest)}" if rest else "")))
        else:
            items.append(CheckItem("Watermark", "info",
                                   f"event-time watermark {format_utc(watermark)} in {where}; it "
                                   f"evicts none of this state: {'; '.join(rest)}"))

    judged = [r for r in reports if r.skew_judged and r.skew_ratio is not None]
    skewed = [r for r in judged if r.skew_ratio > skew_warning_ratio]
    worst = max(judged, key=lambda r: r.skew_ratio, default=None)
    if skewed:
        items.append(CheckItem("Partition balance", "warn",
                               "; ".join(f"{r.label}: skew {r.skew_ratio:.2f} > "
                                         f"{skew_warning_ratio:.2f}" for r in skewed)
                               + " (runbooks/partition-skew.md)"))
    elif worst is not None:
        items.append(CheckItem("Partition balance", "pass",
                               f"worst skew {worst.skew_ratio:.2f} ({worst.label}) <= "
                               f"{skew_warning_ratio:.2f}"))
    elif any(r.rows for r in reports):
        single = sorted({r.operator_name for r in reports if len(r.partitions_with_state) == 1})
        why = (f"{', '.join(single)} keeps its state in one partition by design; " if single
               else "")
        items.append(CheckItem("Partition balance", "info",
                               f"not judged: {why}fewer than {SKEW_MIN_ROWS_PER_PARTITION} rows "
                               "per partition elsewhere, too few for a ratio to mean anything"))
    else:
        items.append(CheckItem("Partition balance", "info", "every store is empty"))

    verdicts = growth_verdicts(growth_table) if growth_table is not None else {}
    growing = {s: v for s, v in verdicts.items() if v["only_grew"]}
    unbounded_labels = {r.label for r in never_evicted}
    if watermark <= 0:
        unbounded_labels |= {r.label for r in by_watermark}
    rules = {r.label: r.expiry_rule for r in reports}
    unbounded = {s: v for s, v in growing.items() if s in unbounded_labels}
    filling = {s: v for s, v in growing.items() if s not in unbounded_labels}
    if unbounded:
        items.append(CheckItem("State growth", "warn",
                               "; ".join(f"{s} only grew ({v['first']:,} -> {v['last']:,} rows) "
                                         "and nothing evicts it"
                                         for s, v in unbounded.items())))
    elif filling:
        items.append(CheckItem("State growth", "info",
                               "; ".join(f"{s} only grew ({v['first']:,} -> {v['last']:,} rows; "
                                         f"{_RULE_WORDS.get(rules.get(s), _RULE_WORDS['unknown'])})"
                                         for s, v in filling.items())
                               + ": expected while a young query fills its horizon; "
                               "check again later"))
    elif verdicts:
        points = max(v["points"] for v in verdicts.values())
        items.append(CheckItem("State growth", "pass",
                               f"no store only grew over {points} sampled batches"))

    unread = [r for r in reports if not r.readable]
    damaged = [r for r in unread if load_failure_kind(r.reader_error_class) == DAMAGE]
    if damaged:
        items.append(CheckItem("State loads", "warn",
                               "; ".join(f"{r.label}: {r.reader_error_class or 'error'}"
                                         for r in damaged)
                               + ": Spark could not load this state; run 05 recover corrupted "
                               "state (runbooks/cannot-load-state-store.md)"))
    elif unread:
        items.append(CheckItem("State loads", "info",
                               "; ".join(f"{r.label}: {r.reader_error_class} ("
                                         f"{LOAD_FAILURE_MEANING[load_failure_kind(r.reader_error_class)]})"
                                         for r in unread)
                               + "; the query itself is not affected"))

    items.append(retention_check(ckpt))
    items.append(CheckItem("Monitoring and recovery", "info",
                           "not visible in a checkpoint: schedule this runbook "
                           "(runbooks/schedules/inspect_state.yaml) and keep "
                           "runbooks/cannot-load-state-store.md at hand"))
    return items


def retention_check(ckpt: Checkpoint) -> CheckItem:
    """Whether old state versions are deleted: state files older than the oldest batch the logs
    keep are what state maintenance (a background task of the running query) has yet to delete.
    ``minBatchesToRetain`` comes from the checkpoint (``Checkpoint.retention``)."""
    batches = ckpt.offset_batch_ids
    ran = batches[-1] + 1 if batches else 0
    retain, source = ckpt.retention()
    oldest_state = min((f.batch_id for f in ckpt.state_files()), default=None)
    oldest_log = batches[0] if batches else 0
    said = f"minBatchesToRetain={retain} ({source})"
    if oldest_state is None or ran <= retain:
        return CheckItem("Old state versions cleaned up", "info",
                         f"not due yet: {ran} batches ran; {said}")
    if oldest_state >= oldest_log:
        return CheckItem("Old state versions cleaned up", "pass",
                         f"the oldest state on disk is batch {oldest_state}'s, the logs keep "
                         f"batches {oldest_log}..{batches[-1]}; {said}")
    return CheckItem("Old state versions cleaned up", "info",
                     f"state from batch {oldest_state} is still on disk while the logs keep "
                     f"batches {oldest_log}..{batches[-1]}: state maintenance, which runs in the "
                     f"background while the query runs, has not deleted it yet; {said}")


def checklist_lines(items: list[CheckItem]) -> list[str]:
    return [f"[{i.status:<4}] {i.item}: {i.evidence}" for i in items]
