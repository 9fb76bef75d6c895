"""Try it yourself: another partition count."""
from __future__ import annotations

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.running.exercise import Exercise

from .forecast import scan_state

NUM_PARTITIONS = 3


def try_it(ckpt: Checkpoint, batch_id: int, num_partitions: int) -> Exercise:
    """The rows the first store would hold in all on 3 partitions (Spark's placement, summed)."""
    scan = scan_state(ckpt, batch_id, num_partitions, NUM_PARTITIONS)[0]
    after = scan.after or []
    return Exercise(f"With num_partitions={NUM_PARTITIONS}, how many rows in all would "
                    f"{scan.label} hold after the repartition, over its {NUM_PARTITIONS} "
                    "partitions?", sum(after),
                    f"the repartition moves each row to the partition pmod(hash(key), "
                    f"{NUM_PARTITIONS}) gives and drops none: {', '.join(map(str, after))} rows "
                    f"in partitions 0..{NUM_PARTITIONS - 1}, the {scan.rows} of today")
