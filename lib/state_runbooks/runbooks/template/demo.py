"""The template's demo: the smallest checkpoint with state, the answer known in advance, and the
steps only the demo runs (here: showing how a runbook answers bad input)."""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.store_scan import inspect_stores

from .count import RowCounts

# A deduplication with a 5 s watermark: 20 events per batch carry 10 distinct ids (each arrives
# twice), all with one event time, 1 s after the batch before's; four batches.
DEMO = {"workload": "dedup", "batches": 4, "rows_per_batch": 20}


@dataclass
class DemoResult:
    """What the demo showed, for :func:`~.report.what_this_showed` and the notebook's checks."""
    counts: RowCounts  # the runbook's step, on the demo
    expected_total: int  # known in advance, for the batch the step read
    refusal: str  # the one-line error a wrong operator id gets (shown, not raised)


def expected_rows(batches: int) -> int:
    """Rows the demo's store holds after ``batches`` batches: one per id, and nothing has
    expired yet (the watermark trails the newest event by 5 s, longer than four batches span)."""
    return batches * DEMO["rows_per_batch"] // 2


def run_demo(rb, counts: RowCounts) -> DemoResult:
    """The demo's own steps after the runbook's: the known answer, and a wrong operator id asked
    for, to show the one line a runbook answers bad input with."""
    wrong = max((r.operator_id for r in counts.reports), default=0) + 99
    try:
        inspect_stores(rb.checkpoint, operator_id=wrong)
        refusal = ""
    except RunbookError as error:
        refusal = f"RunbookError: {error}"
    batch = counts.reports[0].batch_id if counts.reports else rb.demo.batches - 1
    return DemoResult(counts, expected_rows(batch + 1), refusal)
