"""What a change to a checkpoint requires, each requirement checked and shown (07's repartition,
09's rewrite): one shape for both, so a refusal reads the same in every runbook."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Requirement:
    name: str  # e.g. spark_version, committed, operators, stopped
    ok: bool
    seen: str  # what was looked at, and what it said
    overridden: bool = False  # not met, and force=True says to go on (only "stopped")

    @property
    def blocks(self) -> bool:
        return not self.ok and not self.overridden


class RequirementList:
    """For a dataclass with ``requirements``: the ones that block, and each by name."""
    requirements: tuple[Requirement, ...]

    @property
    def blocking(self) -> list[Requirement]:
        return [r for r in self.requirements if r.blocks]

    @property
    def ok(self) -> bool:
        return not self.blocking

    def get(self, name: str) -> Requirement:
        return next(r for r in self.requirements if r.name == name)
