"""What a change to a checkpoint requires, each requirement checked and shown: one shape for every
runbook that changes one, so a refusal reads the same in each, and the requirements they share
(Spark's internal API on a verified release, a committed last batch, operators verified, the
query stopped) are written once."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.runtime import provider_classes, provider_kind
from state_runbooks.common.spark_settings import PROVIDER_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import open_fs
from state_runbooks.core.operators import operator_model

TARGET_PROVIDERS = ("", "rocksdb")  # keep the pinned provider, or move to RocksDB


@dataclass(frozen=True)
class Requirement:
    name: str  # e.g. spark_version, committed, operators, stopped
    ok: bool
    seen: str  # what was looked at, and what it said
    overridden: bool = False  # not met, and force=True says to go on (only "stopped")

    @property
    def blocks(self) -> bool:
        return not self.ok and not self.overridden


@dataclass(frozen=True)
class RequirementList:
    """A change's requirements, each checked: the ones that block, each by name, the refusal, and
    the title each requirement is shown under (``TITLES``, by name). A runbook's ``Checks``
    subclasses it with the figures its plan needs and its ``TITLES``."""
    requirements: tuple[Requirement, ...] = field(kw_only=True)
    # Every file of the checkpoint as the checks listed it: the change journals it when the logs
    # show that nothing ran since, instead of listing again.
    inventory: dict | None = field(default=None, repr=False, compare=False, kw_only=True)
    TITLES: ClassVar[dict[str, str]] = {}
    # Requirements named first in a refusal: a live query (nothing else can be judged while it
    # writes), then a change that asks for nothing.
    FIRST: ClassVar[tuple[str, ...]] = ("stopped", "something")

    @property
    def blocking(self) -> list[Requirement]:
        return [r for r in self.requirements if r.blocks]

    @property
    def ok(self) -> bool:
        return not self.blocking

    def get(self, name: str) -> Requirement:
        return next(r for r in self.requirements if r.name == name)

    def refusal(self) -> str | None:
        """The first unmet requirement as one line, else None."""
        order = {name: i for i, name in enumerate(self.FIRST)}
        blocking = sorted(self.blocking, key=lambda r: order.get(r.name, len(order)))
        if not blocking:
            return None
        more = f" (and {len(blocking) - 1} more unmet requirement(s))" if len(blocking) > 1 else ""
        seen = blocking[0].seen.removesuffix("; nothing was changed")
        return f"{seen}{more}; nothing was changed"


def requirement_lines(checks: RequirementList, skip: tuple[str, ...] = (),
                      only: tuple[str, ...] | None = None) -> list[str]:
    """One line per requirement under its title (``skip`` some, or show ``only`` some), then the
    verdict (not with ``only``)."""
    titles = checks.TITLES
    lines = []
    for r in checks.requirements:
        if r.name in skip or (only is not None and r.name not in only):
            continue
        mark = "ok  " if r.ok else ("FORCED" if r.overridden else "NO  ")
        lines.append(f"{mark} {titles[r.name]}: {r.seen}")
    blocking = checks.blocking
    unmet = ", ".join(f'"{titles[r.name]}"' for r in blocking)
    verdict = ("every requirement is met" if checks.ok else
               f"requirement{'s' if len(blocking) > 1 else ''} not met: {unmet}; Spark is not "
               "called and nothing changes")
    return lines if only is not None else lines + [verdict]


# -- the requirements several changes share --------------------------------------------------
def version_tuple(version: str) -> tuple[int, int]:
    match = re.match(r"^(\d+)\.(\d+)", version or "")
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def spark_release(version: str, first: tuple[int, int], verified: tuple[str, ...],
                  what: str) -> Requirement:
    """Spark's internal API ``what`` exists from release ``first`` on, and this change is verified
    on the ``verified`` releases (``major.minor``) only: anything else is refused."""
    found = version_tuple(version)
    tested = ".".join(map(str, found)) in verified
    if found < first:
        seen = f"Spark {version}: {what} ships with {first[0]}.{first[1]} and later"
    elif tested:
        seen = f"Spark {version}: a release this change is verified on"
    else:
        seen = (f"Spark {version}: {what} is internal to Spark and this change is verified on "
                f"{', '.join(verified)} only")
    return Requirement("spark_version", found >= first and tested, seen)


def committed(ckpt: Checkpoint, verb: str) -> Requirement:
    """The last batch has its commit (a change starts from committed state)."""
    offsets, commits = ckpt.offset_batch_ids, ckpt.commit_batch_ids
    last = offsets[-1] if offsets else None
    if last is None:
        return Requirement("committed", False, f"no batch has run yet: there is no state to {verb}")
    if not commits or commits[-1] != last:
        return Requirement("committed", False,
                           f"the last batch {last} has an offsets entry but no commit (it was in "
                           "flight, or an earlier change did not finish): restart the query once "
                           f"so that it commits, then {verb}")
    return Requirement("committed", True, f"the last batch {last} is committed")


def operators_verified(ckpt: Checkpoint, verified: tuple[str, ...], spark_refuses: dict[str, str],
                       noun: str, also=None) -> Requirement:
    """Every operator's family is one this change is verified on and Spark does not refuse;
    ``also(model)`` may name one more reason an operator is refused (None: none)."""
    unmet, met = [], []
    for op in ckpt.operators():
        model = operator_model(ckpt, op.operator_id)
        name = f"operator {op.operator_id} ({op.operator_name}, {model.family})"
        other = also(model) if also is not None else None
        if model.family in spark_refuses:
            unmet.append(f"{name}: {spark_refuses[model.family]}")
        elif other:
            unmet.append(f"{name}: {other}")
        elif model.family not in verified:
            unmet.append(f"{name}: its {noun} is not verified on this Spark (verified: "
                         f"{', '.join(verified)})")
        else:
            met.append(name)
    if unmet:
        return Requirement("operators", False, "; ".join(unmet))
    return Requirement("operators", True, f"{', '.join(met)}: {noun} verified")


def stopped(activity, force: bool) -> Requirement:
    """No sign of a query writing to the checkpoint (``activity``: the activity guard's
    answer); with ``force`` an active-looking one is let through, and said so."""
    if not activity.looks_active:
        return Requirement("stopped", True, f"the query looks stopped ({activity.seen})")
    seen = "the query looks active: " + "; ".join(activity.reasons)
    return Requirement("stopped", False, seen + (" (force=True: going on)" if force else
                                                 ". Stop it, wait, or pass force=True when you "
                                                 "know it is stopped"), overridden=force)


# -- the requirements of a change written by Spark's state rewriter --------------------------------
@dataclass(frozen=True)
class RewriteChecks(RequirementList):
    """The checks of a change Spark's state rewriter writes: the provider before and after, and
    where the result goes."""
    provider_before: str  # hdfs or rocksdb: the kind pinned in the newest offsets entry
    provider_after: str
    output_path: str  # the new location, fully qualified; empty: in place

    @property
    def in_place(self) -> bool:
        return not self.output_path


def check_target_provider(target_provider: str) -> str:
    if target_provider not in TARGET_PROVIDERS:
        raise RunbookError(f"target_provider={target_provider!r} is not valid: use \"\" (keep the "
                           "pinned provider) or \"rocksdb\"")
    return target_provider


def rocksdb_class() -> str:
    return provider_classes().rocksdb


def pinned_kind(conf: dict) -> str:
    """The provider kind an offsets entry's conf pins (none pinned: Spark's default, HDFS)."""
    return provider_kind(conf.get(PROVIDER_CONF))


def format_v1(ckpt: Checkpoint, noun: str) -> Requirement:
    """A v2 commit names each version's unique id, which a change's commit of its new batch does
    not write: not verified, so refused."""
    return Requirement("format", ckpt.format_version == 1,
                       "checkpoint format v1" if ckpt.format_version == 1 else
                       f"checkpoint format v{ckpt.format_version}: the {noun} is verified on "
                       "format v1 checkpoints only; nothing will be changed")


def operator_metadata(ckpt: Checkpoint) -> Requirement:
    """Spark's rewriter finds the operators and their stores in the operator metadata."""
    missing = [op.operator_id for op in ckpt.operators() if op.source == "files"]
    if missing:
        return Requirement("metadata", False,
                           f"operator(s) {', '.join(map(str, missing))} have no operator "
                           "metadata (a query last run before Spark 4.0, or its _metadata was "
                           "lost): Spark's rewriter needs it; run the query once on Spark 4 first")
    return Requirement("metadata", True, "operator metadata present for every operator")


def writes_rocksdb(before: str, after: str, noun: str) -> Requirement:
    """Spark's rewriter writes with RocksDB only: an HDFS-backed checkpoint moves in the same
    change, when asked."""
    if after == "rocksdb":
        return Requirement("writes", True, "writes with RocksDB (" + (
            "pinned now)" if before == after else f"moved from {before})"))
    return Requirement("writes", False,
                       f"the checkpoint pins the {before} provider, and Spark's rewriter writes "
                       "with RocksDB only (the HDFS-backed provider cannot start a version "
                       f"empty): pass target_provider=rocksdb to move it in the same {noun}")


def output_location(ckpt: Checkpoint, output_path: str, noun: str) -> tuple[str, Requirement]:
    """The new location, qualified (empty: in place), and whether it can be written to: it must
    not overlap the checkpoint and must be absent or empty (a change never writes over
    anything)."""
    if not output_path.strip():
        return "", Requirement("output", True, f"in place: the {noun} is a new batch of this "
                                               "checkpoint, backed up and journaled first")
    out = open_fs(ckpt.spark, output_path.strip()).raw()
    root = ckpt.root
    if out.root == root or out.root.startswith(root + "/") or root.startswith(out.root + "/"):
        return out.root, Requirement(
            "output", False, f"output_path {out.root} overlaps the checkpoint {root}: pick a "
                             f"folder outside it (empty output_path: the {noun} in place)")
    if out.exists() and (not out.is_dir() or out.list()):
        return out.root, Requirement(
            "output", False, f"output_path {out.root} exists and is not empty: pick a new folder "
                             f"(the {noun} never writes over anything)")
    return out.root, Requirement("output", True,
                                 f"output_path {out.root} is absent: the original stays untouched")


def rewrite_start(ckpt: Checkpoint, target_provider: str, quiet_minutes: float) -> tuple:
    """What the checks of a change the rewriter writes start from, in this order: the activity
    guard's answer first (before anything a query could race), then the checkpoint's files as
    listed now, and the provider before and after (``target_provider``, checked)."""
    from .activity import check_activity
    check_target_provider(target_provider)
    activity = check_activity(ckpt, quiet_minutes)
    inventory = ckpt.inventory()
    before = ckpt.provider_kind
    return activity, inventory, before, target_provider or before


def rewriter_titles(noun: str) -> dict[str, str]:
    """The titles of :func:`rewriter_requirements`, and of the output and stopped requirements,
    for a change named ``noun``."""
    return {"spark_version": f"Spark 4.2 or later, a release this {noun} is verified on",
            "rewriter": "Spark's state rewriter in this session",
            "committed": "the last batch is committed",
            "format": f"a checkpoint format the {noun} is verified on",
            "metadata": "operator metadata",
            "operators": f"operators the {noun} supports",
            "writes": "a provider Spark's rewriter writes with",
            "output": "output_path empty or absent",
            "stopped": "the query is stopped"}


def rewriter_requirements(ckpt: Checkpoint, verified_families: tuple[str, ...], noun: str,
                          verb: str, provider_before: str, provider_after: str,
                          spark_version: str | None = None) -> list[Requirement]:
    """What every change Spark's state rewriter writes requires, in the order shown: a Spark
    release it is verified on, the rewriter in this session, the last batch committed, checkpoint
    format v1, operator metadata, operators it is verified on, and RocksDB to write with."""
    from .state_rewriter import MIN_SPARK, REWRITER_REFUSES, VERIFIED_SPARK, rewriter_presence
    version = spark_version or ckpt.spark.version
    presence = rewriter_presence(ckpt.spark) if version_tuple(version) >= MIN_SPARK else None
    return [
        spark_release(version, MIN_SPARK, VERIFIED_SPARK, "Spark's state rewriter"),
        Requirement("rewriter", bool(presence and presence.ok),
                    presence.seen if presence else "not looked for on this Spark"),
        committed(ckpt, verb),
        format_v1(ckpt, noun),
        operator_metadata(ckpt),
        operators_verified(
            ckpt, verified_families, REWRITER_REFUSES, noun,
            also=lambda model: f"join state format 3: its {noun} (one store of column families) "
                               "is not verified on this Spark" if model.join_state_format == 3
            else None),
        writes_rocksdb(provider_before, provider_after, noun)]
