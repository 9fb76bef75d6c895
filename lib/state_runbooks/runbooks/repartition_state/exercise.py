"""Try it yourself: another partition count."""
from __future__ import annotations

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.running.exercise import Exercise

from .forecast import scan_state

NUM_PARTITIONS = 3


def try_it(ckpt: Checkpoint, batch_id: int, num_partitions: int) -> Exercise:
    """The rows partition 0 of the first store would hold on 3 partitions (Spark's placement)."""
    scan = scan_state(ckpt, batch_id, num_partitions, NUM_PARTITIONS)[0]
    after = scan.after or []
    return Exercise(f"With num_partitions={NUM_PARTITIONS}, how many rows of {scan.label} would "
                    "partition 0 hold after the repartition?", after[0] if after else 0,
                    f"Spark places a row by the hash of its key modulo {NUM_PARTITIONS}: "
                    f"{', '.join(map(str, after))} rows in partitions 0..{NUM_PARTITIONS - 1} of "
                    f"{scan.rows}")
