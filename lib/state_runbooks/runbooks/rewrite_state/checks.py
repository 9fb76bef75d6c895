"""What a rewrite requires, each requirement checked on the checkpoint and shown, before Spark is
called: nothing is left to Spark's own refusal, which may come after it wrote something.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.unsafe_row import unsupported_types
from state_runbooks.safety import requirements as shared
from state_runbooks.safety.activity import QUIET_MINUTES, check_activity
from state_runbooks.safety.requirements import (
    Requirement,
    RequirementList,
    version_tuple,
)
from state_runbooks.safety.state_rewriter import MIN_SPARK, VERIFIED_SPARK, rewriter_presence

# Operator families whose rewrite the tests verify on the installed Spark (rows read back equal,
# the query restarted on the result and compared): tests/spark/test_rewrite_state.py.
VERIFIED_FAMILIES = ("aggregation", "dedup", "join", "session_window", "transform_with_state")
SPARK_REFUSES = {"limit": "a streaming limit keeps its count outside the stores Spark's rewriter "
                          "reads (its state schema cannot be read, seen on 4.3)"}


@dataclass(frozen=True)
class Checks(RequirementList):
    provider_before: str  # hdfs or rocksdb: the kind pinned in the newest offsets entry
    provider_after: str
    output_path: str  # the new location, fully qualified; empty: in place

    TITLES: ClassVar[dict[str, str]] = {
        "spark_version": "Spark 4.2 or later, a release this rewrite is verified on",
        "rewriter": "Spark's state rewriter in this session",
        "committed": "the last batch is committed",
        "format": "a checkpoint format the rewrite is verified on",
        "metadata": "operator metadata",
        "operators": "operators the rewrite supports",
        "writes": "a provider Spark's rewriter writes with",
        "encodable": "state types the move from HDFS lays out",
        "something": "something to rewrite",
        "output": "output_path empty or absent",
        "stopped": "the query is stopped",
        "keeps_state": "the state keeps rows (allow_empty_state for a drop that empties it)",
    }

    @property
    def spark_cannot(self) -> bool:
        """This session cannot rewrite at all: an older Spark, Spark Connect, no rewriter, or an
        operator the rewriter does not handle."""
        return not all(self.get(n).ok for n in ("spark_version", "rewriter", "operators"))

    @property
    def in_place(self) -> bool:
        return not self.output_path


def check_requirements(ckpt: Checkpoint, target_provider: str = "", drop_keys_where: str = "",
                       output_path: str = "", force: bool = False,
                       quiet_minutes: float = QUIET_MINUTES,
                       spark_version: str | None = None) -> Checks:
    """Every requirement of a rewrite, checked; ``spark_version`` defaults to the session's
    (given, it shows what an older Spark would be told)."""
    shared.check_target_provider(target_provider)
    activity = check_activity(ckpt, quiet_minutes)  # first: before anything a query could race
    inventory = ckpt.inventory()
    before = ckpt.provider_kind
    after = target_provider or before
    version = spark_version or ckpt.spark.version
    reqs = [shared.spark_release(version, MIN_SPARK, VERIFIED_SPARK, "Spark's state rewriter")]
    presence = rewriter_presence(ckpt.spark) if version_tuple(version) >= MIN_SPARK else None
    reqs.append(Requirement("rewriter", bool(presence and presence.ok),
                            presence.seen if presence else "not looked for on this Spark"))
    reqs.append(shared.committed(ckpt, "rewrite"))
    reqs.append(shared.format_v1(ckpt, "rewrite"))
    reqs.append(shared.operator_metadata(ckpt))
    reqs.append(shared.operators_verified(
        ckpt, VERIFIED_FAMILIES, SPARK_REFUSES, "rewrite",
        also=lambda model: "join state format 3: its rewrite (one store of column families) is "
                           "not verified on this Spark" if model.join_state_format == 3
        else None))
    reqs.append(shared.writes_rocksdb(before, after, "rewrite"))
    reqs.append(Requirement(
        "something", bool(drop_keys_where.strip()) or after != before or bool(output_path),
        "asked: " + "; ".join(filter(None, [
            f"move from {before} to {after}" if after != before else "",
            f"drop the keys where {drop_keys_where.strip()}" if drop_keys_where.strip() else "",
            "write to a new location" if output_path else ""]))
        if drop_keys_where.strip() or after != before or output_path else
        f"nothing asked: the checkpoint already pins {before}, no drop_keys_where and no "
        "output_path"))
    if before == "hdfs":
        reqs.append(_encodable(ckpt))
    output, requirement = shared.output_location(ckpt, output_path, "rewrite")
    reqs.append(requirement)
    reqs.append(shared.stopped(activity, force))
    return Checks(before, after, output, requirements=tuple(reqs), inventory=inventory)


def _encodable(ckpt: Checkpoint) -> Requirement:
    """An HDFS-backed source's rows are laid out again as Spark's bytes (see encoding): every
    key and value type must be one that layout covers."""
    from state_runbooks.core.operators import state_units
    from state_runbooks.core.state_reader import read_unit
    unsupported = []
    try:
        for unit in state_units(ckpt):
            schema = read_unit(ckpt, unit).schema
            unsupported += [f"{unit.label} {c}" for part in ("key", "value")
                            for c in unsupported_types(schema[part].dataType, part)]
    except RunbookError as exc:
        return Requirement("encodable", False, f"the state's schema cannot be read: {exc}")
    if unsupported:
        return Requirement("encodable", False,
                           f"columns the move from HDFS does not lay out: "
                           f"{', '.join(unsupported[:5])} (arrays, maps and intervals are not "
                           "covered): use drain and switch")
    return Requirement("encodable", True, "every key and value column has a type the move lays "
                                          "out as Spark does (numbers, strings, times, structs)")


