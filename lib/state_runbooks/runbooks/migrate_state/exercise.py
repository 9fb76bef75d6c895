"""Try it yourself: the migration without its fill."""
from __future__ import annotations

from state_runbooks.running.exercise import Exercise

from .schema_change import compare_schemas


def try_it(spark, ckpt, job) -> Exercise | None:
    """The field the migration refuses to make up when no fill is given (None: none)."""
    change = compare_schemas(spark, ckpt, job, {})
    change.remove_fresh()
    missing = [s for s in change.stores for p in s.problems]
    if not missing:
        return None
    problem = change.all_problems()[0]
    field = problem.split(" ", 1)[0].rstrip(":")
    return Exercise("With fill={} (no fill), which new field of the state does the migration "
                    "refuse to make up?", field, f"the mapping says: {problem.split(': pass')[0]}")
