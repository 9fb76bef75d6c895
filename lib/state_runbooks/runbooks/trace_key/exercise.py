"""Try it yourself: when the first window leaves the state."""
from __future__ import annotations

from state_runbooks.common.formatting import format_utc
from state_runbooks.demos.checkpoints import DEMO_START_MS
from state_runbooks.running.exercise import Exercise

from .demo import WINDOW_MS, first_window_ms
from .trace import Trace


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


def try_it(evicted: Trace) -> Exercise:
    """The first batch whose state no longer holds the demo's first window."""
    status = evicted.status
    return Exercise(f"{first_window_words()}. The watermark trails the newest event by 5 s, one "
                    "batch behind. At which batch does the state no longer hold it?",
                    status.evicted_at_batch, status.line.split(": ", 1)[1])
