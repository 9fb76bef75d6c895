"""Try it yourself: the verdict on the first window, traced from a later batch."""
from __future__ import annotations

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.running.exercise import Exercise, with_change

from .trace import Trace, trace_key
from .verdict import STATUSES


def try_it(ckpt: Checkpoint, evicted: Trace, from_batch: int) -> Exercise:
    """The verdict on the demo's first window traced from the batch that evicted it: the state of
    no batch of that range holds it."""
    start = evicted.status.evicted_at_batch
    status = trace_key(ckpt, evicted.key_where, from_batch=start).status
    change = with_change("from_batch", start, from_batch)
    return Exercise(f"{change} the trace reads only the state batch {start} committed (after "
                    f"it ran), and a status judges only the batches it reads. Which status would "
                    f"step 3 give user-0's first window ({', '.join(STATUSES)})?", status.status,
                    f"a trace judges only its range, and batch {start}'s state no longer holds "
                    f"the window: {status.line}")
