"""What Spark's offline repartition requires, each requirement checked on the checkpoint and shown.

Seen on Spark 4.3 (and tested): the HDFS-backed provider is refused
(``STATE_REPARTITION_INVALID_CHECKPOINT.UNSUPPORTED_PROVIDER``) and a streaming ``limit`` fails
reading its state schema (``STDS_FAILED_TO_READ_STATE_SCHEMA``), in both cases *after* Spark wrote
a new offsets entry; the query then fails at restart (``STREAMING_UNFINISHED_REPARTITION_DETECTED``)
and a repartition to another count with ``LAST_BATCH_ABANDONED_REPARTITION``. So every requirement
is checked here before Spark is called, and nothing is left to Spark's own refusal.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import operator_model
from state_runbooks.safety import requirements as shared
from state_runbooks.safety.activity import QUIET_MINUTES, check_activity
from state_runbooks.safety.requirements import Requirement, RequirementList
from state_runbooks.session.spark_session import is_connect

MIN_SPARK = (4, 2)  # spark._streamingCheckpointManager.repartition appeared in Spark 4.2
# The Spark releases this repartition is verified on (tests/spark/test_repartition_state.py:
# rows equal per store, the query continuing on the new count), major.minor: the API is Spark's
# own but experimental, and its refusals (below) were seen on these.
VERIFIED_SPARK = ("4.3",)
API_NAME = "_streamingCheckpointManager"
VERIFIED_FAMILIES = ("aggregation", "dedup", "join")
# Families Spark's repartition fails on (seen on 4.3), with what it says.
SPARK_REFUSES = {"limit": "Spark's repartition fails reading its state schema "
                          "(STDS_FAILED_TO_READ_STATE_SCHEMA, seen on 4.3)"}
PROVIDER_REFUSED = ("Spark's repartition refuses the HDFS-backed provider "
                    "(STATE_REPARTITION_INVALID_CHECKPOINT.UNSUPPORTED_PROVIDER, seen on 4.3)")


@dataclass(frozen=True)
class Checks(RequirementList):
    num_partitions_before: int
    num_partitions_after: int
    TITLES: ClassVar[dict[str, str]] = {
        "spark_version": "Spark 4.2 or later, a release this repartition is verified on",
        "api": "the repartition API in this session",
        "committed": "the last batch is committed",
        "new_count": "a count other than the current one",
        "provider": "a provider Spark's repartition supports",
        "operators": "operators Spark's repartition supports",
        "stopped": "the query is stopped",
    }

    @property
    def spark_cannot(self) -> bool:
        """This session has no offline repartition (Spark < 4.2, or Spark Connect)."""
        return not (self.get("spark_version").ok and self.get("api").ok)


def current_partitions(ckpt: Checkpoint) -> int:
    """The partition count the query runs on: the newest offsets' pinned shuffle partitions
    (``state-metadata`` keeps the old count after a repartition), via the operator model."""
    ops = ckpt.operators()
    if not ops:
        raise RunbookError(f"checkpoint {ckpt.root} has no stateful operator: there is no state "
                           "to repartition")
    return operator_model(ckpt, ops[0].operator_id).num_partitions


def target_partitions(num_partitions: int, before: int) -> int:
    """The count asked for; 0 means twice the current count (for a forecast)."""
    if num_partitions < 0:
        raise RunbookError(f"num_partitions={num_partitions} is not valid: pass the new number of "
                           "state partitions (1 or more), or 0 to see what twice the current "
                           f"count ({before}) would do")
    return num_partitions or 2 * before


def check_requirements(ckpt: Checkpoint, num_partitions: int, force: bool = False,
                       quiet_minutes: float = QUIET_MINUTES,
                       spark_version: str | None = None) -> Checks:
    """Every requirement of Spark's repartition, checked; ``spark_version`` defaults to the
    session's (given, it shows what an older Spark would be told)."""
    spark = ckpt.spark
    activity = check_activity(ckpt, quiet_minutes)  # first: before anything a query could race
    inventory = ckpt.inventory()
    before = current_partitions(ckpt)
    after = target_partitions(num_partitions, before)
    reqs = [shared.spark_release(spark_version or spark.version, MIN_SPARK, VERIFIED_SPARK,
                                 "the offline repartition")]
    if is_connect(spark):
        reqs.append(Requirement("api", False, "this is a Spark Connect session: Spark offers its "
                                              "offline repartition to classic sessions only"))
    else:
        has_api = hasattr(spark, API_NAME)
        reqs.append(Requirement("api", has_api, "this classic session offers "
                                f"spark.{API_NAME}.repartition" if has_api else
                                f"this session has no spark.{API_NAME}"))
    reqs.append(shared.committed(ckpt, "repartition"))
    reqs.append(Requirement("new_count", after != before,
                            f"{before} partitions now, {after} asked for" if after != before else
                            f"the query already runs on {before} partitions: pass another "
                            "num_partitions"))
    kind = ckpt.provider_kind
    reqs.append(Requirement("provider", kind == "rocksdb",
                            "provider RocksDB (pinned in the offsets log)" if kind == "rocksdb" else
                            f"provider {ckpt.provider_class.rsplit('.', 1)[-1]}: "
                            + (PROVIDER_REFUSED if kind == "hdfs" else "not one Spark's "
                               "repartition is known to support")))
    reqs.append(shared.operators_verified(
        ckpt, VERIFIED_FAMILIES, SPARK_REFUSES, "repartition",
        also=lambda model: "join state format 3: its repartition is not verified on this Spark"
        if model.join_state_format == 3 else None))
    reqs.append(shared.stopped(activity, force))
    return Checks(before, after, requirements=tuple(reqs), inventory=inventory)
