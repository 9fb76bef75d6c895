"""Try it yourself: a laxer late-rows threshold."""
from __future__ import annotations

import dataclasses

from state_runbooks.running.exercise import Exercise, with_change

from .history import History
from .verdicts import Thresholds, late_rows

LATE_ROWS_WARNING = 100


def try_it(history: History, thresholds: Thresholds) -> Exercise:
    """The severity of the late-rows verdict with late_rows_warning=100 (none: no verdict)."""
    changed = dataclasses.replace(thresholds, late_rows_warning=LATE_ROWS_WARNING)
    found = late_rows(history, changed)
    answer = found[0].severity if found else "none"
    dropped = int(history.operators["num_rows_dropped_by_watermark"].fillna(0).sum())
    change = with_change("late_rows_warning", LATE_ROWS_WARNING, thresholds.late_rows_warning)
    return Exercise(f"{change} which severity does the late-rows verdict get (warning, info or "
                    "none)?", answer,
                    f"{dropped:,} rows were dropped behind the watermark in all, "
                    + ("fewer" if dropped < LATE_ROWS_WARNING else "no fewer")
                    + f" than {LATE_ROWS_WARNING}")
