"""The demo: a windowed count on RocksDB, repartitioned the whole way: from the plan the notebook's
steps made, applied (journaled and backed up), the query continued on the new count next to a run
that was never repartitioned (a copy kept before the change), then undone byte for byte."""
from __future__ import annotations

from dataclasses import dataclass, field

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import copy_tree, open_fs, tree_checksums
from state_runbooks.core.state_diff import KEY_AND_VALUE, all_equal, diff_checkpoints
from state_runbooks.demos.faults import restart_demo
from state_runbooks.safety.safekeeping import Outcome

from .apply import Repartitioned, repartition, undo
from .checks import current_partitions

# A 3-second windowed count per user on RocksDB (Spark's repartition does not take the
# HDFS-backed provider): three batches of 10 events in 2 partitions.
DEMO = {"workload": "window_agg", "provider": "rocksdb", "batches": 3, "rows_per_batch": 10,
        "partitions": 2}


@dataclass
class RestartCompared:
    partitions: set[int]  # numShufflePartitions of the restarted query's stateful operators
    same_state: bool  # every store: the same rows as the run never repartitioned
    output_rows: tuple[int, int]  # rows the restarted batches wrote: here, never repartitioned
    lines: list[str] = field(default_factory=list)


@dataclass
class DemoResult:
    """Everything the demo did, for :func:`~.report.what_this_showed`."""
    planned: Repartitioned  # the notebook's own step (a dry run): its checks and forecast
    done: Repartitioned  # applied with force=True (the demo is seconds old)
    backup_kept: bool  # the backup folder is there after the change
    continued: RestartCompared
    undone: Outcome
    same_bytes: bool  # after the undo, every file's checksum as before the repartition
    files: int  # the checkpoint's files before the repartition, sidecars included


def restart_lines(here: int, there: int, parts: set[int], there_parts: int,
                  written: tuple[int, int]) -> list[str]:
    """The restarted batch here and on the copy never repartitioned: the same input, one batch id
    apart when the repartition took one (Spark writes it as a batch of its own); the rows each
    wrote, and why none, in append mode, before the watermark passes a window's end."""
    apart = (f" (the same input: the repartition itself is batch {there}, so the input reaches "
             f"this checkpoint one batch later)" if here == there + 1 else "")
    same = "the same on both" if written[0] == written[1] else "DIFFERENT"
    why = (": the count writes a window once the watermark passes its end (append mode), and no "
           "window's end was behind it yet" if written == (0, 0) else "")
    return [f"restarted: batch {here} ran its stateful operators on "
            f"{', '.join(map(str, sorted(parts)))} partitions (numShufflePartitions in its "
            "progress)",
            f"never repartitioned: batch {there} ran on {there_parts} partitions{apart}",
            f"rows written: {written[0]} here, {written[1]} there, {same}{why}"]


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
    lines = [*restart_lines(a.last_committed_batch_id, b.last_committed_batch_id, parts,
                            current_partitions(b), written),
             "state after it: "
             + "; ".join(f"{d.label} {d.found} vs {d.expected} rows" for d in diffs)
             + (", equal (checksums of every key and value)" if same else ", DIFFERENT")]
    return RestartCompared(parts, same, written, lines)


def run_demo(rb, planned: Repartitioned) -> DemoResult:
    """The whole way on the demo (``rb``: what ``start_runbook`` returned), from the dry run the
    notebook's steps made: a copy kept first, the repartition applied on the count asked, one
    batch more here and on the copy, then the undo, compared file by file with before."""
    spark, ckpt = rb.spark, rb.checkpoint
    reference = copy_tree(spark, ckpt.root, ckpt.root + "-never-repartitioned")
    files_before = tree_checksums(spark, ckpt.root)
    done = repartition(ckpt, planned.checks.num_partitions_after, dry_run=False, force=True,
                       before=planned.before)
    backup_kept = open_fs(spark, done.backup_dir).exists()
    continued = continue_demo(spark, rb.demo, ckpt.root, reference, batches=1)
    undone = undo(ckpt.refresh(), done.journal_path, dry_run=False, force=True)
    same_bytes = tree_checksums(spark, ckpt.root) == files_before
    return DemoResult(planned, done, backup_kept, continued, undone, same_bytes,
                      len(files_before))
