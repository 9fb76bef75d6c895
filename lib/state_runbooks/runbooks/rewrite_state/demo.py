"""The demo, the whole way: a windowed count on the HDFS-backed provider moved to RocksDB at a new
location, its query continued there next to a copy never rewritten; then a second checkpoint, a
deduplication without a watermark (its keys never expire), its oldest keys dropped in place, after
which those keys come through again, and the drop undone byte for byte.
"""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import copy_tree, open_fs, tree_checksums
from state_runbooks.core.state_diff import WITH_PARTITION, diff_checkpoints
from state_runbooks.demos.checkpoints import DEMO_START_MS, demo_query, new_demo_folder
from state_runbooks.demos.continuation import Continued, continue_query
from state_runbooks.safety.safekeeping import Outcome

from .apply import Rewritten, rewrite, undo
from .plan import plan_rewrite

# A 3-second windowed count per user on the HDFS-backed provider: three batches of 10 events in
# 2 partitions. With nothing asked, the notebook plans its move to RocksDB at a new location.
DEMO = {"workload": "window_agg", "provider": "hdfs", "batches": 3, "rows_per_batch": 10,
        "partitions": 2}
CONTINUED_BATCHES = 2
DROP_OLDEST = "key.id < 10"  # the deduplication's ids of batch 0
DEDUP_IDS = 30  # the deduplicated ids cycle through 0..29: batch 3 brings batch 0's ids again
DEDUP_ROWS_PER_BATCH = 10
MOVED_SUFFIX = "-rocksdb"  # the demo's move writes beside the demo checkpoint, with this suffix


def demo_move(ckpt: Checkpoint) -> tuple[str, str]:
    """The demo's own change, planned by the notebook's steps where none is asked:
    ``(target_provider, output_path)``, a move to RocksDB at a new location."""
    return "rocksdb", ckpt.root + MOVED_SUFFIX


def dedup_query(spark, rows_per_batch: int = DEDUP_ROWS_PER_BATCH):
    """``dropDuplicates(["id"])`` without a watermark over ids ``value % DEDUP_IDS``: every id
    stays in the state for good, and an id seen once never comes through again."""
    from pyspark.sql import functions as F
    return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", rows_per_batch)
            .option("numPartitions", 1).option("startTimestamp", DEMO_START_MS)
            .option("advanceMillisPerBatch", 1000).load()
            .select((F.col("value") % DEDUP_IDS).alias("id"), F.col("value").alias("event"))
            .dropDuplicates(["id"]))


def build_dedup_demo(spark, path: str, batches: int = 3, provider: str = "rocksdb") -> Continued:
    """The deduplication demo checkpoint: ``batches`` batches of 10 events, ids 0..29."""
    return continue_query(spark, dedup_query(spark), path, batches, provider)


def operator_provider(progress: dict) -> str:
    """Which provider ran a batch's first stateful operator, from its metrics: RocksDB reports
    ``rocksdb*`` metrics, the HDFS-backed provider does not."""
    metrics = progress["stateOperators"][0].get("customMetrics", {})
    return "rocksdb" if any(k.startswith("rocksdb") for k in metrics) else "hdfs"


def state_comparison(spark, path: str, other: str) -> str:
    """Every store of two checkpoints at their last committed batch, compared row by row (by
    key, value and partition), as one line."""
    diffs = diff_checkpoints(Checkpoint(spark, path), Checkpoint(spark, other),
                             columns=WITH_PARTITION)
    return "; ".join(f"{d.label} {d.found} vs {d.expected} rows, "
                     f"{'equal' if d.equal else 'DIFFERENT'} row by row" for d in diffs)


@dataclass
class DemoResult:
    """Everything the demo did, for :func:`~.report.what_this_showed`."""
    planned: Rewritten  # the notebook's own step (a dry run): its checks and plan
    moved: Rewritten  # to RocksDB at the new location, with force=True (it is seconds old)
    there: Continued  # the query continued on the result
    here: Continued  # and on a copy never rewritten
    state_after: str  # the state the two left, compared row by row, in one line
    original_untouched: bool  # the demo checkpoint's files, checksummed before and after
    dropped: Rewritten  # the deduplication's oldest keys dropped in place (its checks and plan)
    backup_kept: bool  # the drop's backup folder is there
    again: Continued  # the deduplication continued after the drop
    never: Continued  # and on a copy never rewritten
    undone: Outcome  # the drop undone
    same_bytes: bool  # after the undo, every file's checksum as before the drop
    files: int  # the deduplication's files before the drop, sidecars included

    @property
    def providers(self) -> tuple[str, str]:
        """The providers that ran the continued batches: on the result, on the copy."""
        return (operator_provider(self.there.progress[-1]),
                operator_provider(self.here.progress[-1]))


def run_demo(rb, planned: Rewritten) -> DemoResult:
    """The whole way on the demo (``rb``: what ``start_runbook`` returned), from the dry run the
    notebook's steps made (``planned``): the move applied (with that plan, when the steps planned
    the demo's move) and continued, then the drop on the deduplication, continued, and undone."""
    spark, ckpt = rb.spark, rb.checkpoint
    target, output = demo_move(ckpt)
    # the steps' plan is the move's unless the run asked for another change (a drop, say)
    is_the_move = (planned.plan is not None and not planned.plan.drop_keys_where
                   and (planned.checks.provider_after, planned.checks.output_path) == (target,
                                                                                       output))
    move_plan = planned.plan if is_the_move else plan_rewrite(ckpt, "")
    reference = copy_tree(spark, ckpt.root, ckpt.root + "-never-rewritten")
    original = tree_checksums(spark, ckpt.root)
    moved = rewrite(ckpt, target, "", output, dry_run=False, force=True, plan=move_plan)
    query = demo_query(spark, DEMO["workload"], rb.demo.rows_per_batch)
    there = continue_query(spark, query, output, batches=CONTINUED_BATCHES, mode="update")
    here = continue_query(spark, query, reference, batches=CONTINUED_BATCHES, mode="update")
    state_after = state_comparison(spark, output, reference)
    untouched = tree_checksums(spark, ckpt.root) == original

    dedup_path = new_demo_folder() + "/dedup_no_watermark"
    build_dedup_demo(spark, dedup_path, batches=3)
    dedup = Checkpoint(spark, dedup_path)
    dedup_reference = copy_tree(spark, dedup.root, dedup.root + "-never-rewritten")
    dedup_before = tree_checksums(spark, dedup.root)
    dropped = rewrite(dedup, "", DROP_OLDEST, dry_run=False, force=True,
                      plan=plan_rewrite(dedup, DROP_OLDEST))
    backup_kept = open_fs(spark, dropped.backup_dir).exists()
    again = continue_query(spark, dedup_query(spark), dedup.root)
    never = continue_query(spark, dedup_query(spark), dedup_reference)
    undone = undo(dedup.refresh(), dropped.journal_path, dry_run=False, force=True)
    same_bytes = tree_checksums(spark, dedup.root) == dedup_before
    return DemoResult(planned, moved, there, here, state_after, untouched, dropped, backup_kept,
                      again, never, undone, same_bytes, len(dedup_before))
