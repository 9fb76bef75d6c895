"""What a migration requires, each requirement checked on the checkpoint and shown, before Spark
is called: the shared ones of every change written by Spark's state rewriter
(:mod:`state_runbooks.safety.requirements`), and the migration's own: Spark's planning in this
session, a change Spark refuses, a source for every new field, types the encoding lays out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.unsafe_row import unsupported_types
from state_runbooks.safety import requirements as shared
from state_runbooks.safety.activity import QUIET_MINUTES
from state_runbooks.safety.requirements import Requirement, RewriteChecks

from .schema_change import SchemaChange

# Operator families whose migration the tests verify on the installed Spark (the changed query
# restarted on the result, its state and output compared with a run from scratch):
# tests/spark/test_migrate_state.py.
VERIFIED_FAMILIES = ("aggregation", "dedup", "dedup_within_watermark", "session_window",
                     "group_state", "transform_with_state", "join")


@dataclass(frozen=True)
class Checks(RewriteChecks):
    """A migration's requirements: those of every change the rewriter writes, then Spark's
    planning, a change it refuses, a source for every new field and types the encoding lays
    out (the titles they are shown under)."""
    TITLES: ClassVar[dict[str, str]] = {
        **shared.rewriter_titles("migration"),
        "planning": "Spark's planning of the changed query in this session",
        "something": "a change Spark refuses",
        "mapping": "a source for every new field",
        "encodable": "state types the migration lays out",
    }

    @property
    def spark_cannot(self) -> bool:
        """This session cannot migrate at all: an older Spark, Spark Connect, no rewriter or
        planning, or an operator the migration does not handle."""
        return not all(self.get(n).ok for n in ("spark_version", "rewriter", "planning",
                                                "operators"))


def check_requirements(ckpt: Checkpoint, change: SchemaChange, target_provider: str = "",
                       output_path: str = "", force: bool = False,
                       quiet_minutes: float = QUIET_MINUTES) -> Checks:
    """Every requirement of a migration, checked."""
    activity, inventory, before, after = shared.rewrite_start(ckpt, target_provider,
                                                              quiet_minutes)
    reqs = shared.rewriter_requirements(ckpt, VERIFIED_FAMILIES, "migration", "migrate", before,
                                        after)
    probe = change.spark_check
    reqs.insert(2, Requirement("planning", bool(probe and probe.available),
                               "Spark plans the changed query and runs its restart check here"
                               if probe and probe.available else
                               (probe.reason if probe else "not asked") +
                               ": the migration needs the schemas Spark's planning writes"))
    reqs.append(_something(change))
    problems = change.all_problems()
    reqs.append(Requirement("mapping", not problems, problems[0] + (
        f" (and {len(problems) - 1} more)" if len(problems) > 1 else "") if problems else
        f"{len(change.changed)} changed store(s), every new field mapped"))
    reqs.append(_encodable(change, before))
    output, requirement = shared.output_location(ckpt, output_path, "migration")
    reqs.append(requirement)
    reqs.append(shared.stopped(activity, force))
    return Checks(before, after, output, requirements=tuple(reqs), inventory=inventory)


def _something(change: SchemaChange) -> Requirement:
    if not (change.spark_check and change.spark_check.available):
        return Requirement("something", False, "not known here: without Spark's planning the "
                                               "changed query's state schemas cannot be read")
    refused = change.spark_refuses
    if change.changed:
        said = (f"Spark's restart check raises {refused}" if refused else
                "Spark's restart check passes, yet the state's schema changes")
        return Requirement("something", True,
                           f"{said}: {len(change.changed)} store(s) change their key or value")
    if refused and change.problems:  # an operator or store added, removed or another kind
        return Requirement("something", False, f"Spark raises {refused}: {change.problems[0]}")
    if refused:
        return Requirement("something", False,
                           f"Spark raises {refused}, and no store's key or value changes: the "
                           "migration cannot help (08 tells why the restart fails)")
    return Requirement("something", False, "Spark's restart check passes and no store changes: "
                                           "nothing to migrate, restart the changed query as it is")


def _encodable(change: SchemaChange, provider_before: str) -> Requirement:
    """Every store written from typed rows is laid out as Spark's bytes: the changed ones, and
    every one of an HDFS-backed source (Spark's raw reader refuses it)."""
    from pyspark.sql import types as T
    unsupported = []
    for store in change.stores:
        if store.changed or provider_before == "hdfs":
            for part, schema in (("key", store.key_after), ("value", store.value_after)):
                unsupported += [f"{store.label} {c}" for c in
                                unsupported_types(T.StructType.fromJson(schema), part)]
    if unsupported:
        return Requirement("encodable", False,
                           f"columns the migration does not lay out: {', '.join(unsupported[:5])} "
                           "(arrays, maps and intervals are not covered)")
    return Requirement("encodable", True, "every column written has a type the migration lays "
                                          "out as Spark does")
