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
from state_runbooks.safety.activity import QUIET_MINUTES
from state_runbooks.safety.requirements import (
    Requirement,
    RewriteChecks,
)

# Operator families whose rewrite the tests verify on the installed Spark (rows read back equal,
# the query restarted on the result and compared): tests/spark/test_rewrite_state.py.
VERIFIED_FAMILIES = ("aggregation", "dedup", "join", "session_window", "transform_with_state")


@dataclass(frozen=True)
class Checks(RewriteChecks):
    """A rewrite's requirements: those of every change the rewriter writes, then types the move
    from HDFS lays out, something asked, and a drop that leaves rows."""
    TITLES: ClassVar[dict[str, str]] = {
        **shared.rewriter_titles("rewrite"),
        "encodable": "state types the move from HDFS lays out",
        "something": "something to rewrite",
        "keeps_state": "the state keeps rows (allow_empty_state for a drop that empties it)",
    }

    @property
    def spark_cannot(self) -> bool:
        """This session cannot rewrite at all: an older Spark, Spark Connect, no rewriter, or an
        operator the rewriter does not handle."""
        return not all(self.get(n).ok for n in ("spark_version", "rewriter", "operators"))


def check_requirements(ckpt: Checkpoint, target_provider: str = "", drop_keys_where: str = "",
                       output_path: str = "", force: bool = False,
                       quiet_minutes: float = QUIET_MINUTES,
                       spark_version: str | None = None) -> Checks:
    """Every requirement of a rewrite, checked; ``spark_version`` defaults to the session's
    (given, it shows what an older Spark would be told)."""
    activity, inventory, before, after = shared.rewrite_start(ckpt, target_provider,
                                                              quiet_minutes)
    reqs = shared.rewriter_requirements(ckpt, VERIFIED_FAMILIES, "rewrite", "rewrite", before,
                                        after, spark_version)
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


