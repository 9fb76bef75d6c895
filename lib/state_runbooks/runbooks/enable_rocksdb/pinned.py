"""What an existing checkpoint pins, and whether the requested provider takes effect on it.

The provider is pinned in the checkpoint's offsets log: a restart keeps it whatever the session
says. The changelog-checkpointing flag is not pinned. When the requested provider will not take
effect, :func:`options_lines` says where a new checkpoint's sources can start.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from state_runbooks.common.runtime import OSS_HDFS_PROVIDER, provider_kind
from state_runbooks.common.spark_settings import CHANGELOG_CONF, PROVIDER_CONF
from state_runbooks.core.checkpoint import Checkpoint

from .provider import ClassCheck, check_provider_class

# Pinned confs that decide how state is stored (shown next to the provider).
STATE_CONF_MARKERS = ("stateStore", "stateFormatVersion", "shuffle.partitions",
                      "statefulOperator", "multipleWatermarkPolicy")


@dataclass
class PinnedReport:
    """What a checkpoint pinned, and whether the requested provider will take effect on it."""
    root: str
    requested_class: str
    pinned_provider_class: str | None  # None: no offsets entry yet, nothing pinned
    pinned_in: str | None  # "offsets/<batch>"
    pinned_class_check: ClassCheck | None
    changelog_pinned: bool | None  # None: the offsets log does not carry the flag
    changelog_newest_version: bool | None  # from the files of the newest state version (RocksDB)
    last_committed_batch_id: int | None
    offset_batch_ids: list[int]
    state_confs: dict  # pinned confs that decide how state is stored
    restart_offsets: list  # source offsets after the last committed batch (one per source)

    @property
    def pinned_matches(self) -> bool | None:
        if self.pinned_provider_class is None:
            return None
        return self.pinned_provider_class == self.requested_class

    @property
    def takes_effect(self) -> bool:
        """A provider set on the session applies only to a checkpoint that pinned nothing yet or
        pinned the same class."""
        return self.pinned_matches is not False

    @property
    def pinned_kind(self) -> str | None:
        return provider_kind(self.pinned_provider_class) if self.pinned_provider_class else None


def check_checkpoint(ckpt: Checkpoint, requested_class: str) -> PinnedReport:
    """Read what the checkpoint pinned (newest offsets entry) and compare with the request."""
    ids = ckpt.offset_batch_ids
    pinned = ckpt.pinned_conf
    pinned_class = (pinned.get(PROVIDER_CONF) or OSS_HDFS_PROVIDER) if ids else None
    changelog = pinned.get(CHANGELOG_CONF)
    state_confs = {k: v for k, v in sorted(pinned.items())
                   if any(m in k for m in STATE_CONF_MARKERS)}
    last = ckpt.last_committed_batch_id
    restart = ckpt.offsets(last).sources if last is not None else []
    return PinnedReport(
        root=ckpt.root, requested_class=requested_class, pinned_provider_class=pinned_class,
        pinned_in=f"offsets/{ids[-1]}" if ids else None,
        pinned_class_check=check_provider_class(ckpt.spark, pinned_class) if pinned_class else None,
        changelog_pinned=None if changelog is None else str(changelog).lower() == "true",
        changelog_newest_version=(ckpt.changelog_checkpointing if ids and ckpt.state_files()
                                  else None),
        last_committed_batch_id=last, offset_batch_ids=ids, state_confs=state_confs,
        restart_offsets=restart)


def checkpoint_lines(report: PinnedReport) -> list[str]:
    """The verdict on an existing checkpoint, in plain sentences."""
    if report.pinned_provider_class is None:
        return [f"{report.root} has no offsets entry yet: nothing is pinned, so the provider set "
                f"on the session ({report.requested_class}) takes effect at the first batch."]
    lines = [f"Pinned in {report.pinned_in}: {report.pinned_provider_class}"]
    check = report.pinned_class_check
    if check is not None and not check.ok:
        lines.append(f"The pinned class is NOT usable here ({check.reason}): this checkpoint "
                     "cannot start again on this Spark, whatever the session says. Start a new "
                     "checkpoint.")
    if report.pinned_matches:
        lines.append(f"Requested {report.requested_class}: the same class, so the setting is in "
                     "effect on this checkpoint.")
    else:
        lines.append(f"Requested {report.requested_class}: the setting will NOT take effect on "
                     "this checkpoint: a restart keeps the pinned provider, without an error.")
    if report.changelog_pinned is None:
        lines.append("Changelog checkpointing is not pinned in the offsets log: the session's "
                     f"{CHANGELOG_CONF} decides what the next batch writes.")
    else:
        lines.append(f"Changelog checkpointing is pinned: {str(report.changelog_pinned).lower()}.")
    if report.changelog_newest_version is not None:
        kind = "a changelog" if report.changelog_newest_version else "a snapshot (zip)"
        lines.append(f"The newest state version was written as {kind}.")
    return lines


def options_lines(report: PinnedReport) -> list[str]:
    """What to do when the requested provider will not take effect on this checkpoint."""
    if report.takes_effect and (report.pinned_class_check is None or report.pinned_class_check.ok):
        return ["Nothing to do: restart the query with the settings above."]
    last = report.last_committed_batch_id
    lines = ["Options (a restart keeps the pinned provider; only a rewrite of the state or a new "
             "checkpoint changes it):",
             "1. Keep this checkpoint and its provider: nothing changes; schedule the switch for a "
             "moment when starting from empty state is acceptable."]
    if last is None:
        lines.append("2. New checkpoint location with the settings above: no batch was committed "
                     "here, so start from the source's usual starting position.")
        return lines
    lines.append(f"2. New checkpoint location with the settings above, its sources starting where "
                 f"batch {last} ended (offsets/{last}):")
    for i, offset in enumerate(report.restart_offsets):
        text = json.dumps(offset, separators=(",", ":")) if isinstance(offset, (dict, list)) \
            else str(offset)
        lines.append(f"   source {i}: {text}")
    lines.append("   The new query starts with empty state: open windows and deduplication keys "
                 "within the watermark delay are forgotten. To rebuild them, start the sources "
                 "earlier (an older offsets/<batch> file; retained: "
                 f"{report.offset_batch_ids[0]}..{report.offset_batch_ids[-1]}) and let an "
                 "idempotent sink absorb the replayed rows.")
    return lines
