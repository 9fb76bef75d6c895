"""Try it yourself: one key's category."""
from __future__ import annotations

from state_runbooks.demos.checkpoints import JOIN_PAYMENT_LATE_SECONDS, join_demo_key
from state_runbooks.running.exercise import Exercise

from .classification import CATEGORIES
from .verdicts import Diagnosis


def try_it(diagnosis: Diagnosis, rows_per_batch: int) -> Exercise:
    """The category of the demo's order whose payment is dated outside the time bounds."""
    key = join_demo_key("payment_outside_time_range", 1, rows_per_batch)
    verdict = diagnosis.verdicts([key])[0]
    return Exercise(f"Set ids_to_verify=['{key}'] (its payment is dated "
                    f"{JOIN_PAYMENT_LATE_SECONDS} s after the order). Which category does it get "
                    f"({', '.join(CATEGORIES)})?", verdict.category,
                    f"{CATEGORIES.get(verdict.category, verdict.category)}")
