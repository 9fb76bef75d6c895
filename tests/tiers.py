"""The two tiers of the test run, over the same tests (and a third apart: ``make test-load`` runs
``make demo`` and ``make book`` on a busy machine, tests/load).

``make test`` runs every behaviour at least once: each runbook on classic Spark and over Spark
Connect, 03 on a standalone cluster, every notebook under nbval, each kind of damage, each provider
and checkpoint format; its aim is 20 minutes on two cores (CI prints the time measured).
``make test-extended`` (CI runs both) runs the rest of each matrix: the same checks on more shapes,
providers, faults and damages. A matrix names its core cases where it is written, so that a reader
sees which cases run every time and why.
"""
from __future__ import annotations

import pytest

EXTENDED = pytest.mark.extended


def tiered(cases, core) -> list:
    """``cases`` (single values) for ``parametrize``, each one not in ``core`` marked extended."""
    unknown = set(core) - set(cases)
    assert not unknown, f"core cases that are not cases: {sorted(unknown)}"
    return [case if case in core else pytest.param(case, marks=EXTENDED) for case in cases]


def case(*values, core: bool, id: str | None = None):
    """One case of several values, marked extended unless ``core``."""
    return pytest.param(*values, id=id, marks=() if core else EXTENDED)
