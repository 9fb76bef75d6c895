"""Try it yourself: the store at an earlier batch."""
from __future__ import annotations

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.store_scan import inspect_stores
from state_runbooks.running.exercise import Exercise

BATCH = 1


def try_it(ckpt: Checkpoint) -> Exercise:
    """How many rows the store held at batch 1, read with Spark's reader."""
    rows = sum(r.rows for r in inspect_stores(ckpt, batch_id=BATCH))
    return Exercise(f"With batch_id={BATCH} (the second batch) instead of the last one, how many "
                    "rows does the store hold?", rows,
                    f"Spark's statestore reader read {rows} rows at batch {BATCH}: one per id "
                    "seen by then, none behind the watermark yet")
