"""The demo: a deduplication feeding a windowed count on RocksDB with changelog checkpointing,
broken at set-up the way a storage incident does (one changelog cut in half: ``break_demo``,
start_runbook's ``prepare_demo``), and the whole way back taken on a copy of it from the main
step's diagnosis (``run_demo``): rolled back, restarted, compared with an intact copy, undone.
"""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import copy_tree, tree_checksums
from state_runbooks.core.state_diff import WITH_PARTITION, UnitDiff, all_equal, diff_checkpoints
from state_runbooks.demos import faults
from state_runbooks.safety.safekeeping import Outcome

from .apply import rollback, undo
from state_runbooks.safety.diagnosis.diagnose import Diagnosis
from .plan import Plan, plan_rollback

# Six batches of 10 events in 2 partitions: the windowed count is operator 0, the deduplication 1.
DEMO = {"workload": "two_operators", "provider": "rocksdb_changelog", "batches": 6,
        "rows_per_batch": 10, "partitions": 2}
FAULT = "break_middle"  # cuts state/1/0/4.changelog in half: batch 3's changes to partition 0


@dataclass
class BrokenDemo:
    """What set-up did to the demo, for :func:`run_demo` and the notebook's set-up line."""
    broken_file: str  # cut in half; empty: this session cannot change files, nothing was broken
    reference: Checkpoint | None = None  # the intact copy, kept before the break
    # The broken demo copied as the main step diagnoses it: the demo's own steps work on it, so a
    # rollback asked for in the main step cannot change what they start from.
    copy: Checkpoint | None = None

    @property
    def broke(self) -> bool:
        return bool(self.broken_file)

    def setup_line(self) -> str:
        if not self.broke:
            return ("demo: this session cannot change files (Spark Connect without dbutils.fs), "
                    "so the demo checkpoint stays intact; run the demo on a classic session to "
                    "see a broken one")
        return f"demo: {self.broken_file} cut in half; an intact copy is kept"


def break_demo(rb) -> BrokenDemo:
    """start_runbook's ``prepare_demo``: keep an intact copy of the demo (``rb``: the context on
    it), cut one changelog in half, and copy the broken checkpoint for :func:`run_demo`. Over
    Spark Connect outside Databricks (no dbutils.fs) no file can change: nothing is done."""
    if not rb.is_demo:  # start_runbook never calls it on a checkpoint given; no caller may
        raise RunbookError("only the demo checkpoint is broken on purpose")
    spark, ckpt = rb.spark, rb.checkpoint
    if not ckpt.fs.can_modify:
        return BrokenDemo("")
    reference = Checkpoint(spark, copy_tree(spark, ckpt.root, ckpt.root + "-reference"))
    broken = faults.inject_fault(ckpt, FAULT)
    copy = Checkpoint(spark, copy_tree(spark, ckpt.root, ckpt.root + "-copy"))
    return BrokenDemo(broken, reference, copy)


@dataclass
class DemoResult:
    """Everything the demo did beyond the run's steps, for :func:`~.report.what_this_showed`."""
    broken_file: str  # cut in half at set-up; empty: nothing was broken, nothing else done
    diagnosis: Diagnosis | None = None  # the main step's, of the broken demo
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
    def as_never_broken(self) -> bool:
        """The restarted state equals the intact copy's, store for store."""
        return all_equal(self.same or [])


def run_demo(rb, diag: Diagnosis) -> DemoResult:
    """The whole way back on the copy set-up made of the broken demo (``rb``: the context
    ``start_runbook`` returned with ``prepare_demo=break_demo``), from the main step's diagnosis
    of it (``diag``; the copy holds the same files, so it is not diagnosed again): the restart
    without the state folder, and the rollback to the last good batch, the restart, the
    comparison with the intact copy and the undo. Where set-up broke nothing, nothing is done."""
    broken = rb.demo_prepared
    if not isinstance(broken, BrokenDemo):
        raise RunbookError("the demo was not broken at set-up: start_runbook(..., "
                           "prepare_demo=break_demo)")
    if not broken.broke:
        return DemoResult("", diag)
    spark, copy = rb.spark, broken.copy
    deleted = faults.restart_without_state_folder(spark, rb.demo, copy)
    before = tree_checksums(spark, copy.root)
    plan = plan_rollback(copy, diag)
    done = rollback(copy, plan, dry_run=False, force=True)
    reruns = diag.last_committed_batch_id - diag.last_good_batch_id
    faults.restart_demo(spark, rb.demo, copy.root, reruns)
    batch = diag.last_committed_batch_id
    same = diff_checkpoints(copy.refresh(), broken.reference, batch, batch, WITH_PARTITION)
    undone = undo(copy, done.journal_path, dry_run=False, force=True)
    byte_for_byte = tree_checksums(spark, copy.root) == before
    return DemoResult(broken.broken_file, diag, plan, deleted, done, reruns, batch, same, undone,
                      byte_for_byte, len(before))
