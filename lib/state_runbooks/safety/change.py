"""Changing a checkpoint, the steps every runbook that changes one takes in the same order.

First of them, here: the state a change plans from (a repartition's forecast, a rewrite's rows)
is read at the batch the checks saw committed, never at one a listing taken later names; a read
that fails while the checkpoint's logs moved since the checks listed them is a live writer racing
the read (it committed or purged a batch under it), and the checks then say so, with that
evidence, instead of passing on the read's error.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, TypeVar

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint

from .requirements import Requirement, RequirementList
from .watch import log_changes, signs_line

T = TypeVar("T")
C = TypeVar("C", bound=RequirementList)


def last_committed(ckpt: Checkpoint, checks) -> int | None:
    """The last batch committed when the checks listed the checkpoint (their ``inventory``),
    else as listed now."""
    inventory = getattr(checks, "inventory", None)
    if inventory is None:
        return ckpt.last_committed_batch_id
    found = [int(rel.split("/", 1)[1]) for rel in inventory
             if rel.startswith("commits/") and rel.split("/", 1)[1].isdigit()]
    return max(found, default=None)


def read_for_plan(ckpt: Checkpoint, checks: C, read: Callable[[], T]) -> tuple[T | None, C]:
    """``read()``, and the checks; a read that fails because a live writer moved the logs under
    it gives None, and the checks' ``stopped`` requirement then refuses with the evidence."""
    try:
        return read(), checks
    except RunbookError:
        inventory = getattr(checks, "inventory", None)
        moved = log_changes(ckpt, inventory) if inventory is not None else []
        if not moved:
            raise
        seen = ("the query looks active: the checkpoint's logs changed while its state was read "
                f"({signs_line(_files_only(moved))}). Stop the query, wait, then run again")
        live = Requirement("stopped", False, seen)
        requirements = tuple(live if r.name == "stopped" else r for r in checks.requirements)
        return None, dataclasses.replace(checks, requirements=requirements)


def _files_only(signs: list[str]) -> list[str]:
    """The signs without Hadoop's ``.crc`` sidecars where the file itself is named too."""
    named = [s for s in signs if "/." not in s.split(" ", 1)[0]]
    return named or signs


def logs_moved(ckpt: Checkpoint, inventory: dict, verb: str) -> str | None:
    """The refusal when a batch ran since the checks listed the checkpoint (``inventory``): its
    logs moved, with what appeared as the evidence; None when they did not."""
    moved = log_changes(ckpt, inventory)
    if not moved:
        return None
    return (f"the query looks active: its offsets or commits changed since the requirements "
            f"were checked ({signs_line(_files_only(moved))}): stop it, check again (run the "
            f"notebook from the top), then {verb}; nothing was changed")
