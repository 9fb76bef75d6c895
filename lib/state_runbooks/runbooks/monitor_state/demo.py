"""The demo: a stream-stream join run in a child Python process whose Spark session has the event
log on (the event log has to be on when a SparkContext starts, and the notebook's has started), as
Spark 4 writes it by default: rolling and zstd-compressed. The runbook then reads it like any other.
"""
from __future__ import annotations

from state_runbooks.demos.event_logs import (
    DEMO_BATCHES,
    DEMO_WORKLOAD,
    DemoLog,
    write_demo_event_log,
)

# 20 batches of orders and payments (40 rows a batch), with a 2 s watermark.
DEMO = {"workload": DEMO_WORKLOAD, "batches": DEMO_BATCHES, "codec": "zstd", "rolling": True}


def run_demo(rb) -> DemoLog:
    """Write the demo's event log (``rb``: what ``start_runbook`` returned; the child process
    starts its own session) and return it with the progress its query reported."""
    return write_demo_event_log(**DEMO)
