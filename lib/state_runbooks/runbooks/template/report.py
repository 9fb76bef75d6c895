"""What a reader of the template sees: its findings, and what its demo showed."""
from __future__ import annotations

from state_runbooks.running.results import Summary

from .count import RowCounts
from .demo import DEMO, DemoResult


def summarize(summary: Summary, result: RowCounts) -> None:
    """The summary's figures and findings: the status a scheduler acts on."""
    summary.details["total_rows"] = result.total
    if not result.total:
        summary.add_finding("info", "empty_state", "every store is empty")


def what_this_showed(demo: DemoResult) -> list[str]:
    """The demo's closing bullets, computed from this run's one demo result."""
    reports = demo.counts.reports
    total, stores = demo.counts.total, len(reports)
    batch = reports[0].batch_id if reports else None
    valid = ", ".join(f"{r.operator_id} ({r.operator_name})" for r in reports)
    batches = batch + 1 if batch is not None else 0
    due = [r.rows_due for r in reports if r.rows_due is not None]
    return [
        f"one scan per store with Spark's statestore reader: {total} rows in {stores} "
        f"store{'s' if stores != 1 else ''} at batch {batch}",
        f"the deduplication keeps one row per id: {total} rows from the "
        f"{batches * DEMO['rows_per_batch']} events of {batches} batches"
        + (f", {sum(due)} of them behind the watermark" if due else ""),
        f"a wrong operator id got one line naming the valid ones ({valid}), printed, not raised",
    ]
