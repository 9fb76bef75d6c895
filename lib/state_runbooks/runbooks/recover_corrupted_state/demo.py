"""The demo: a deduplication feeding a windowed count on RocksDB with changelog checkpointing,
broken the way a storage incident does (one changelog cut in half), and the whole way back taken
on a copy of it: rolled back, restarted, compared with an intact copy, undone.
"""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import copy_tree, tree_checksums
from state_runbooks.core.state_diff import WITH_PARTITION, UnitDiff, all_equal, diff_checkpoints
from state_runbooks.demos import faults
from state_runbooks.safety.safekeeping import Outcome

from .apply import rollback, undo
from .diagnose import Diagnosis, diagnose
from .plan import Plan, plan_rollback

# Six batches of 10 events in 2 partitions: the windowed count is operator 0, the deduplication 1.
DEMO = {"workload": "two_operators", "provider": "rocksdb_changelog", "batches": 6,
        "rows_per_batch": 10, "partitions": 2}
FAULT = "break_middle"  # cuts state/1/0/4.changelog in half: batch 3's changes to partition 0


@dataclass
class DemoResult:
    """Everything the demo did beyond the run's steps, for :func:`~.report.what_this_showed`."""
    broken_file: str  # cut in half; empty: this session cannot change files, nothing was broken
    diagnosis: Diagnosis | None = None  # of a copy of the broken demo, which the rest works on
    plan: Plan | None = None  # the rollback to its last good batch
    deleted: str = ""  # what Spark answers to "delete the state folder and restart"
    rolled_back: Outcome | None = None  # with force=True: the demo is seconds old
    reruns: int = 0  # batches the restart ran again after the rollback
    batch_id: int | None = None  # the last batch, where the state is compared
    same: list[UnitDiff] | None = None  # each store against the intact copy, row for row
    undone: Outcome | None = None
    byte_for_byte: bool = False  # the checksums after the undo are those before the rollback
    files: int = 0  # of the copy, sidecars included

    @property
    def broke(self) -> bool:
        return bool(self.broken_file)

    @property
    def as_never_broken(self) -> bool:
        """The restarted state equals the intact copy's, store for store."""
        return all_equal(self.same or [])

    def setup_line(self) -> str:
        if not self.broke:
            return ("demo: this session cannot change files (Spark Connect without dbutils.fs), "
                    "so the demo checkpoint stays intact; run the demo on a classic session to "
                    "see a broken one")
        return f"demo: {self.broken_file} cut in half; an intact copy is kept"


def run_demo(rb) -> DemoResult:
    """Break the demo (``rb``: what ``start_runbook`` returned on it) after keeping an intact copy,
    then take the whole way on copies of it: the restart without the state folder, and the
    rollback to the last good batch, the restart, the comparison with the intact copy and the
    undo. Over Spark Connect outside Databricks (no dbutils.fs) no file can change: the demo stays
    intact and nothing else is done."""
    spark, ckpt = rb.spark, rb.checkpoint
    if not ckpt.fs.can_modify:
        return DemoResult("")
    reference = Checkpoint(spark, copy_tree(spark, ckpt.root, ckpt.root + "-reference"))
    broken = faults.inject_fault(ckpt, FAULT)
    deleted = faults.restart_without_state_folder(spark, rb.demo, ckpt)
    copy = Checkpoint(spark, copy_tree(spark, ckpt.root, ckpt.root + "-copy"))
    before = tree_checksums(spark, copy.root)
    diag = diagnose(copy)
    plan = plan_rollback(copy, diag)
    done = rollback(copy, plan, dry_run=False, force=True)
    reruns = diag.last_committed_batch_id - diag.last_good_batch_id
    faults.restart_demo(spark, rb.demo, copy.root, reruns)
    batch = diag.last_committed_batch_id
    same = diff_checkpoints(copy.refresh(), reference, batch, batch, WITH_PARTITION)
    undone = undo(copy, done.journal_path, dry_run=False, force=True)
    byte_for_byte = tree_checksums(spark, copy.root) == before
    return DemoResult(broken, diag, plan, deleted, done, reruns, batch, same, undone,
                      byte_for_byte, len(before))
