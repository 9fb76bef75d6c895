"""The settings a checkpoint pins, against the ones the job's session sets now.

Every ``offsets/<batch>`` entry carries the values of the settings Spark's ``OffsetSeqMetadata``
lists (``relevantSQLConfs``: shuffle partitions, the state store provider, the state format
versions, the watermark policy, the compression codec, ...). On restart Spark sets each of them
on the query's session to the pinned value, whatever the job sets, and only logs it. A key an
older checkpoint does not carry gets Spark's backward-compatible default instead (below), or
the session's value when Spark has none. The keys come from the checkpoint itself, so a newer
Spark's additions are covered without a list here.
"""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.runtime import provider_kind
from state_runbooks.common.spark_settings import (
    AGGREGATION_FORMAT_CONF,
    COMPRESSION_CODEC_CONF,
    ENCODING_CONF,
    FLATMAP_FORMAT_CONF,
    JOIN_FORMAT_CONF,
    PROVIDER_CONF,
    PRUNE_STREAMING_SUBPLAN_CONF,
    SHUFFLE_PARTITIONS_CONF,
    STRICT_DISTRIBUTION_CONF,
    WATERMARK_POLICY_CONF,
)

# Spark's relevantSQLConfDefaultValues (4.x): what a restart sets when the checkpoint predates
# a key.
DEFAULTS_FOR_OLDER_CHECKPOINTS = {
    WATERMARK_POLICY_CONF: "min",
    FLATMAP_FORMAT_CONF: "1",
    AGGREGATION_FORMAT_CONF: "1",
    JOIN_FORMAT_CONF: "1",
    COMPRESSION_CODEC_CONF: "lz4",
    STRICT_DISTRIBUTION_CONF: "false",
    PRUNE_STREAMING_SUBPLAN_CONF: "true",
    ENCODING_CONF: "unsaferow",
}


@dataclass(frozen=True)
class PinnedSetting:
    key: str
    pinned: str  # the value a restart uses
    job_value: str | None  # what the job's code sets (None: it sets nothing)
    session_value: str | None  # this session's value (set here or Spark's default)
    from_default: bool = False  # not in the checkpoint: Spark's default for older checkpoints

    @property
    def ignored(self) -> bool:
        """The job's code sets another value: Spark replaces it with the pinned one."""
        return self.job_value is not None and self.job_value != self.pinned

    @property
    def session_differs(self) -> bool:
        return self.job_value is None and self.session_value not in (None, self.pinned)

    def action(self) -> str:
        if self.key == SHUFFLE_PARTITIONS_CONF:
            return ("to change the partition count of existing state: 07 repartition state "
                    "(Spark 4.2+), or a new checkpoint from the logged offsets")
        if self.key == PROVIDER_CONF:
            return ("the provider cannot change on this checkpoint by a setting: 09 rewrite "
                    "state moves a stopped query's state to RocksDB, or start a new checkpoint "
                    "from the logged offsets")
        return "keep the pinned value, or start a new checkpoint from the logged offsets"


def pinned_settings(pinned_conf: dict, job_conf: dict, session_values: dict) -> list[PinnedSetting]:
    """One row per pinned key (and per key the job sets that Spark fills in for older
    checkpoints)."""
    rows = [PinnedSetting(k, str(v), job_conf.get(k), session_values.get(k))
            for k, v in sorted(pinned_conf.items())]
    for key, default in sorted(DEFAULTS_FOR_OLDER_CHECKPOINTS.items()):
        if key not in pinned_conf and key in job_conf:
            rows.append(PinnedSetting(key, default, job_conf[key], session_values.get(key), True))
    return rows


def short(key: str, value: str | None) -> str:
    """A value as a reader wants to see it (the provider by its kind)."""
    if value is None:
        return "-"
    if key == PROVIDER_CONF:
        return provider_kind(value) if provider_kind(value) != "unknown" else value
    return value
