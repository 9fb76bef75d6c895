"""Try it yourself: the skew on one partition."""
from __future__ import annotations

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.running.exercise import Exercise

from .forecast import scan_state

NUM_PARTITIONS = 1


def try_it(ckpt: Checkpoint, batch_id: int, num_partitions: int) -> Exercise:
    """The largest/mean step 1's forecast gives the first store on 1 partition: reasoned from
    the definition of skew alone (one partition holds every row), computed by Spark's placement."""
    scan = scan_state(ckpt, batch_id, num_partitions, NUM_PARTITIONS)[0]
    after = scan.after or []
    return Exercise(f"With num_partitions={NUM_PARTITIONS}, what largest/mean would step 1's "
                    f"forecast give {scan.label} on the new count?", round(scan.skew_after, 2),
                    f"on {NUM_PARTITIONS} partition every row lands in it ({after}): the largest "
                    "partition is the mean, whatever the keys. No skew, and no parallelism: one "
                    "task would hold the whole state")
