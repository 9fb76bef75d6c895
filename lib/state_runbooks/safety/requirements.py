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


def requirement_lines(checks: RequirementList, titles: dict[str, str], skip: tuple[str, ...] = (),
                      only: tuple[str, ...] | None = None) -> list[str]:
    """One line per requirement under its title (``skip`` some, or show ``only`` some), then the
    verdict (not with ``only``)."""
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
