"""Try it yourself: a deduplication added in front of the aggregation."""
from __future__ import annotations

from state_runbooks.query.job import load_job
from state_runbooks.running.exercise import Exercise

from .check import check_query_change
from .demo import DEMO_JOB_FILE

FUNCTION = "build_deduplicated"


def try_it(spark, ckpt) -> Exercise | None:
    """The error class Spark's restart check raises for the demo job with ``dropDuplicates``
    added (None: Spark's check cannot run in this session)."""
    check = check_query_change(spark, ckpt, load_job(spark, DEMO_JOB_FILE, FUNCTION), False)
    if not check.probe.available:
        return None
    return Exercise(f"With query_function={FUNCTION} (the demo job with dropDuplicates added "
                    "before its aggregation), which error class does Spark raise at restart "
                    "(or none)?", check.error_class or "none",
                    check.probe.message or "Spark's restart check passes")
