"""The demo: a query with two stateful operators (a deduplication feeding a windowed count), and,
only on the demo, two more kinds of state: a session window's, and the state of PySpark's
stateful APIs as Spark's reader reads it."""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.store_scan import StoreReport, inspect_stores
from state_runbooks.demos.checkpoints import build_demo_checkpoint

from state_runbooks.running.checklist import Inspection
from .python_apis import PythonStateDemo, api_presence, python_state_demos

# 8 batches of 40 events (20 distinct ids, 1 s of event time each), 5 s watermark.
DEMO = {"workload": "two_operators", "batches": 8, "rows_per_batch": 40}
# The session-window query of step 7: each user's events grouped with a 2 s gap.
SESSION_DEMO = {"batches": 4, "rows_per_batch": 10, "partitions": 2}


@dataclass
class DemoResult:
    """What the demo-only steps found, with the inspection they follow."""
    inspection: Inspection
    sessions: Checkpoint  # the session-window query's checkpoint
    session_reports: list[StoreReport]
    python_demos: list[PythonStateDemo]
    api_presence: dict[str, bool]  # which stateful APIs PySpark's GroupedData has


def run_demo(rb, inspection: Inspection) -> DemoResult:
    """Steps 7 and 8 on the demo: the session-window query's state, and the Python APIs' state."""
    run = build_demo_checkpoint(rb.spark, "session_window", **SESSION_DEMO)
    sessions = Checkpoint(rb.spark, run.checkpoint_path)
    return DemoResult(inspection, sessions, inspect_stores(sessions),
                      python_state_demos(rb.spark), api_presence())
