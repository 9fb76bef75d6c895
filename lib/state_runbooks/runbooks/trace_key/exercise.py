"""Try it yourself: when the first window leaves the state."""
from __future__ import annotations

from state_runbooks.running.exercise import Exercise

from .trace import Trace


def try_it(evicted: Trace) -> Exercise:
    """The first batch whose state no longer holds the demo's first window."""
    status = evicted.status
    return Exercise("The demo's first window of user-0 ends 1 s after the first event, and the "
                    "watermark trails the newest event by 5 s, one batch behind. At which batch "
                    "does the state no longer hold it?", status.evicted_at_batch,
                    status.line.split(": ", 1)[1])
