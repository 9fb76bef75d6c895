"""The demo's last claim: the query continues on the new count and keeps the same state as a run
that was never repartitioned (a copy kept before the change)."""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.state_diff import KEY_AND_VALUE, all_equal, diff_checkpoints
from state_runbooks.demos.faults import restart_demo

from .checks import current_partitions


@dataclass
class RestartCompared:
    partitions: set[int]  # numShufflePartitions of the restarted query's stateful operators
    same_state: bool  # every store: the same rows as the run never repartitioned
    output_rows: tuple[int, int]  # rows the restarted batches wrote: here, never repartitioned
    lines: list[str] = field(default_factory=list)


def continue_demo(spark, demo, path: str, reference: str, batches: int = 1) -> RestartCompared:
    """Restart the demo's query for ``batches`` on the repartitioned checkpoint and on the
    reference, and compare what they did and the state they left (by key and value: the rows
    sit on other partitions)."""
    ours = restart_demo(spark, demo, path, batches)
    theirs = restart_demo(spark, demo, reference, batches)
    parts = {op["numShufflePartitions"] for op in ours[-1]["stateOperators"]}
    a, b = Checkpoint(spark, path), Checkpoint(spark, reference)
    diffs = diff_checkpoints(a, b, columns=KEY_AND_VALUE)
    same = all_equal(diffs)
    written = tuple(sum(p["sink"]["numOutputRows"] for p in run) for run in (ours, theirs))
    lines = [f"restarted: batch {a.last_committed_batch_id} ran its stateful operators on "
             f"{', '.join(map(str, sorted(parts)))} partitions (numShufflePartitions in its "
             "progress)",
             f"never repartitioned: batch {b.last_committed_batch_id} ran on "
             f"{current_partitions(b)} partitions",
             f"rows written: {written[0]} here, {written[1]} there",
             "state after it: "
             + "; ".join(f"{d.label} {d.found} vs {d.expected} rows" for d in diffs)
             + (", equal (checksums of every key and value)" if same else ", DIFFERENT")]
    return RestartCompared(parts, same, written, lines)
