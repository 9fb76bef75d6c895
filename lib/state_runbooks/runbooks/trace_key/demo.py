"""The demo: 3-second windows of events per user (RocksDB, 4 partitions, 8 batches of 10 events,
a 5 s watermark), and three keys traced through them: a window still open, an early window the
watermark evicted, and a user who never sent an event."""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.formatting import format_utc
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.demos.checkpoints import DEMO_START_MS

from .trace import Trace, trace_key

DEMO = {"workload": "window_agg", "provider": "rocksdb", "batches": 8, "rows_per_batch": 10,
        "partitions": 4}
WINDOW_MS = 3_000


def window_key(user: str, start_ms: int) -> str:
    # The time zone in the literal: a session's own zone must not move the window.
    return (f"key.user_id = '{user}' AND key.window.start = TIMESTAMP '{format_utc(start_ms)}' "
            f"AND key.window.end = TIMESTAMP '{format_utc(start_ms + WINDOW_MS)}'")


def first_window_ms() -> int:
    return DEMO_START_MS - DEMO_START_MS % WINDOW_MS


def first_window_words() -> str:
    """Where the demo's first window lies, and why it starts before the first event: Spark aligns
    tumbling windows to the epoch, not to the first event."""
    start, size = first_window_ms(), WINDOW_MS / 1000
    return (f"Spark starts {size:g}-second windows at whole multiples of {size:g} s since the "
            f"epoch (1970-01-01 00:00:00 UTC), not at the first event, so user-0's first window "
            f"is [{format_utc(start)}, {format_utc(start + WINDOW_MS)}): it opened "
            f"{(DEMO_START_MS - start) / 1000:g} s before the first event "
            f"({format_utc(DEMO_START_MS)}) and ends {(start + WINDOW_MS - DEMO_START_MS) / 1000:g}"
            " s after it")


# The demo's keys: its first window (evicted), its last (open), a user it never saw.
EVICTED = window_key("user-0", first_window_ms())
NEVER_SEEN = window_key("user-9", first_window_ms())


def present_key(batches: int = DEMO["batches"]) -> str:
    newest = DEMO_START_MS + (batches - 1) * 1000
    return window_key("user-0", newest - newest % WINDOW_MS)


@dataclass
class DemoTraces:
    present: Trace
    evicted: Trace
    never_seen: Trace


def trace_demo_keys(ckpt: Checkpoint) -> DemoTraces:
    """The demo's three keys, each traced through ``ckpt``."""
    return DemoTraces(trace_key(ckpt, present_key()), trace_key(ckpt, EVICTED),
                      trace_key(ckpt, NEVER_SEEN))


def run_demo(rb) -> DemoTraces:
    """The demo's three keys traced (``rb``: what ``start_runbook`` returned)."""
    return trace_demo_keys(rb.checkpoint)
