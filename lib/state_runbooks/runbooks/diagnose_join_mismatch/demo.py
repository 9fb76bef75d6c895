"""The demo: an orders/payments join on ``order_id`` with the usual mismatches built in on purpose
(:func:`state_runbooks.demos.checkpoints.join_demo_key` names the key of each case), and the
classic examples of blog posts about join mismatches rebuilt from its last batch.
"""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.demos.checkpoints import JOIN_DEMO_BATCHES, join_demo_key

from .verdicts import Diagnosis, KeyVerdict

# 8 batches of 20 orders and 20 payments: enough for the watermark to evict batch 0's rows.
DEMO = {"workload": "join", "batches": JOIN_DEMO_BATCHES, "rows_per_batch": 20}
# The four orders blog posts walk through, found in the last batch: one in the output, one whose
# payment is too far away in time, two still waiting for a payment.
CLASSIC_CASES = ("normal", "payment_outside_time_range", "payment_for_missing_order",
                 "payment_for_next_order")


@dataclass
class DemoResult:
    """What the demo showed beyond the run's steps, for :func:`~.report.what_this_showed`."""
    diagnosis: Diagnosis
    # The classic cases, then the two the current state cannot tell apart: an order the
    # watermark evicted, and one that never reached the join.
    examples: list[KeyVerdict]


def run_demo(rb, diagnosis: Diagnosis) -> DemoResult:
    """The verdicts of the classic examples (``rb``: what ``start_runbook`` returned on the demo;
    ``diagnosis``: the run's diagnosis of it)."""
    last, rows = diagnosis.batch_id, rb.demo.rows_per_batch
    keys = [join_demo_key(case, last, rows) for case in CLASSIC_CASES]
    beyond = [join_demo_key("payment_for_missing_order", 0, rows),
              join_demo_key("order_filtered_payment_late", last, rows)]
    return DemoResult(diagnosis, diagnosis.verdicts(keys + beyond))
