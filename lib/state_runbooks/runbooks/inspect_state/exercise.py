"""Try it yourself: a stricter skew threshold."""
from __future__ import annotations

from state_runbooks.running.exercise import Exercise, with_change

from state_runbooks.running.checklist import production_checklist

SKEW_RATIO = 1.1


def try_it(ckpt, reports, growth, skew_warning_ratio: float = 2.0) -> Exercise:
    """The status of the checklist's partition balance item with a skew threshold of 1.1 (the
    run's own: ``skew_warning_ratio``)."""
    items = production_checklist(ckpt, reports, growth, SKEW_RATIO)
    item = next(i for i in items if i.code == "partition_skew")
    change = with_change("skew_warning_ratio", SKEW_RATIO, float(skew_warning_ratio))
    return Exercise(f"{change} which status does the checklist's partition balance item get "
                    "(pass, warn or info)?",
                    item.details["status"], f"the checklist says: {item.message}")
