"""What Spark's offline repartition requires, each requirement checked on the checkpoint and shown.

Seen on Spark 4.3 (and tested): the HDFS-backed provider is refused
(``STATE_REPARTITION_INVALID_CHECKPOINT.UNSUPPORTED_PROVIDER``) and a streaming ``limit`` fails
reading its state schema (``STDS_FAILED_TO_READ_STATE_SCHEMA``), in both cases *after* Spark wrote
a new offsets entry; a later call then fails with ``LAST_BATCH_ABANDONED_REPARTITION``. So every
requirement is checked here before Spark is called, and nothing is left to Spark's own refusal.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import operator_model
from state_runbooks.safety.activity import QUIET_MINUTES, check_activity
from state_runbooks.safety.requirements import Requirement, RequirementList
from state_runbooks.session.spark_session import is_connect

MIN_SPARK = (4, 2)  # spark._streamingCheckpointManager.repartition appeared in Spark 4.2
API_NAME = "_streamingCheckpointManager"
# Operator families whose repartition this runbook has verified on the installed Spark (rows equal
# per store, the query continuing on the new count): tests/test_repartition.py.
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
    requirements: tuple[Requirement, ...]
    # Every file of the checkpoint as the checks listed it (the operators came from the same walk):
    # the apply journals it when the logs show that nothing ran since, instead of walking again.
    inventory: dict | None = field(default=None, repr=False, compare=False)

    @property
    def spark_cannot(self) -> bool:
        """This session has no offline repartition (Spark < 4.2, or Spark Connect)."""
        return not (self.get("spark_version").ok and self.get("api").ok)

    def refusal(self) -> str | None:
        """The first unmet requirement as one line, else None."""
        # A live query first: nothing else can be judged while it writes.
        blocking = sorted(self.blocking, key=lambda r: r.name != "stopped")
        if not blocking:
            return None
        more = f" (and {len(blocking) - 1} more unmet requirement(s))" if len(blocking) > 1 else ""
        return f"{blocking[0].seen}{more}; nothing was changed"


def version_tuple(version: str) -> tuple[int, int]:
    match = re.match(r"^(\d+)\.(\d+)", version or "")
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


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
    version = spark_version or spark.version
    reqs = [Requirement("spark_version", version_tuple(version) >= MIN_SPARK,
                        f"Spark {version}: offline repartition needs "
                        f"{MIN_SPARK[0]}.{MIN_SPARK[1]} or later")]
    if is_connect(spark):
        reqs.append(Requirement("api", False, "this is a Spark Connect session: Spark offers its "
                                              "offline repartition to classic sessions only"))
    else:
        has_api = hasattr(spark, API_NAME)
        reqs.append(Requirement("api", has_api, "this classic session offers "
                                f"spark.{API_NAME}.repartition" if has_api else
                                f"this session has no spark.{API_NAME}"))
    offsets, commits = ckpt.offset_batch_ids, ckpt.commit_batch_ids
    last_offsets = offsets[-1] if offsets else None
    last_commit = commits[-1] if commits else None
    committed = last_offsets is not None and last_offsets == last_commit
    reqs.append(Requirement("committed", committed,
                            f"the last batch {last_offsets} is committed" if committed else
                            f"the last batch {last_offsets} has an offsets entry but no commit "
                            "(it was in flight, or an earlier repartition did not finish): restart "
                            "the query once so that it commits, then repartition"
                            if last_offsets is not None else "no batch has run yet"))
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
    reqs.append(_operators_requirement(ckpt))
    active = "the query looks active: " + "; ".join(activity.reasons)
    reqs.append(Requirement("stopped", not activity.looks_active,
                            f"the query looks stopped ({activity.seen})" if not
                            activity.looks_active else
                            active + (" (force=True: going on)" if force else ". Stop it, wait, "
                                      "or pass force=True when you know it is stopped"),
                            overridden=activity.looks_active and force))
    return Checks(before, after, tuple(reqs), inventory)


def _operators_requirement(ckpt: Checkpoint) -> Requirement:
    unmet, met = [], []
    for op in ckpt.operators():
        model = operator_model(ckpt, op.operator_id)
        name = f"operator {op.operator_id} ({op.operator_name}, {model.family})"
        if model.family in SPARK_REFUSES:
            unmet.append(f"{name}: {SPARK_REFUSES[model.family]}")
        elif model.family not in VERIFIED_FAMILIES or model.join_state_format == 3:
            unmet.append(f"{name}: unknown to this runbook: its repartition is not verified on "
                         f"this Spark (verified: {', '.join(VERIFIED_FAMILIES)}, join state "
                         "format 2)")
        else:
            met.append(name)
    if unmet:
        return Requirement("operators", False, "; ".join(unmet))
    return Requirement("operators", True, f"{', '.join(met)}: repartition verified")
