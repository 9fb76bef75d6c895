"""Try it yourself: one key's category under a wider time bound."""
from __future__ import annotations

from dataclasses import replace

from state_runbooks.demos.checkpoints import JOIN_PAYMENT_LATE_SECONDS, join_demo_key
from state_runbooks.running.exercise import Exercise, with_change

from .classification import CATEGORIES, classify
from .verdicts import Diagnosis

WIDER_LOWER_BOUND_SECONDS = 10.0  # wide enough for the demo's payments dated 8 s late


def try_it(diagnosis: Diagnosis, rows_per_batch: int) -> Exercise:
    """The category of the demo's order whose payment is dated outside the time bounds, when the
    lower bound given is wide enough to hold that pair: every key classified again from the
    history the diagnosis read, with that bound."""
    key = join_demo_key("payment_outside_time_range", 1, rows_per_batch)
    spec = replace(diagnosis.spec, lower_bound_seconds=WIDER_LOWER_BOUND_SECONDS, bounds=None)
    per_key, counts = classify(diagnosis.history, spec, diagnosis.batch_id, diagnosis.method)
    wider = replace(diagnosis, spec=spec, per_key=per_key, counts=counts)
    verdict = wider.verdicts([key])[0]
    change = with_change("lower_bound_seconds", WIDER_LOWER_BOUND_SECONDS,
                         diagnosis.spec.lower_bound_seconds)
    return Exercise(f"{change} the bound this diagnosis is given (the query and its state "
                    f"unchanged), which category does {key} get (its payment is dated "
                    f"{JOIN_PAYMENT_LATE_SECONDS} s after the order; one of "
                    f"{', '.join(CATEGORIES)})?", verdict.category,
                    wider.explain(verdict).removeprefix(f"{key}: {verdict.category}. "))
