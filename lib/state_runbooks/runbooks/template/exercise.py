"""Try it yourself: the store at an earlier batch."""
from __future__ import annotations

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.store_scan import inspect_stores
from state_runbooks.running.exercise import Exercise, with_change

BATCH = 1


def try_it(ckpt: Checkpoint, batch_id: int = -1) -> Exercise:
    """How many rows the store held at batch 1, read with Spark's reader; ``batch_id``: the
    run's own parameter (-1: the last committed batch)."""
    rows = sum(r.rows for r in inspect_stores(ckpt, batch_id=BATCH))
    last = ckpt.last_committed_batch_id
    current = batch_id if batch_id >= 0 else f"-1 (the last committed, {last})"
    return Exercise(f"{with_change('batch_id', BATCH, current)} how many rows does the store "
                    f"hold at batch {BATCH}, the second batch?", rows,
                    f"Spark's statestore reader read {rows} rows at batch {BATCH}: one per id "
                    "seen by then, none behind the watermark yet")
