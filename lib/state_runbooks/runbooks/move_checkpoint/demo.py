"""The demo: a windowed count on a file source whose input folder moves (``input`` becomes
``moved input``, and one more file arrives there). The checkpoint is moved onto the moved folder
at a new location; the job continues there for a batch and is compared with a run that never
moved over the same files; then the move in place on a copy, undone byte for byte.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import copy_tree, tree_checksums
from state_runbooks.demos.checkpoints import build_demo_checkpoint, new_demo_folder
from state_runbooks.demos.continuation import continue_query
from state_runbooks.demos.jobs import files_per_window

from .apply import Moved, move, undo
from .checks import check_requirements
from .what_moves import compare_move

DEMO_JOB_FILE = files_per_window.__file__
DEMO_FUNCTION = "build"
# The checkpoint before the move: 3 batches, one file of 10 events each, 2 partitions, RocksDB.
DEMO = {"workload": "files_window_agg", "provider": "rocksdb", "batches": 3,
        "rows_per_batch": files_per_window.ROWS_PER_FILE, "partitions": 2}
MOVED_FOLDER = "moved input"  # with a space: paths are logged URL-encoded
NEW_FILES = 1  # arrive in the moved folder after the move


@dataclass
class DemoResult:
    """Everything the demo did, for :func:`~.report.what_this_showed`."""
    moved: Moved  # at a new location
    original_untouched: bool
    rows_read: int | None  # by the first batch after the move
    same_output: bool  # as the run that never moved, batch for batch
    output_rows: int
    state_rows: int
    same_state: bool
    in_place: Moved  # on a copy, with backup and journal
    undone_same_bytes: bool
    files: int


def prepare_demo(rb) -> str:
    """The folder moves and a new file arrives; the job reads the moved folder from now on.
    Returns the moved folder."""
    old = files_per_window.input_folder(rb.checkpoint.root)
    moved = os.path.join(os.path.dirname(old), MOVED_FOLDER)
    shutil.move(old, moved)
    for number in range(DEMO["batches"], DEMO["batches"] + NEW_FILES):
        files_per_window.write_file(moved, number)
    rb.spark.conf.set(files_per_window.INPUT_CONF, moved)
    return moved


def job_to_move(is_demo: bool, query_file: str, query_function: str) -> tuple[str, str]:
    """The job file and function: the ones given, or on the demo its job."""
    if str(query_file or "").strip() or not is_demo:
        return query_file, query_function
    return DEMO_JOB_FILE, DEMO_FUNCTION


def _never_moved(spark) -> tuple[str, list]:
    """The same files read by a query whose folder never moved: its checkpoint and the rows its
    last batch wrote."""
    run = build_demo_checkpoint(spark, **DEMO, checkpoint_path=os.path.join(new_demo_folder(),
                                                                            "reference"))
    folder = files_per_window.input_folder(run.checkpoint_path)
    for number in range(DEMO["batches"], DEMO["batches"] + NEW_FILES):
        files_per_window.write_file(folder, number)
    df = files_per_window.counts(files_per_window.events(spark, folder))
    return run.checkpoint_path, continue_query(spark, df, run.checkpoint_path,
                                               provider="rocksdb", mode="update").output


def _state(spark, root: str) -> list:
    return sorted(map(repr, spark.read.format("statestore").load(Checkpoint(spark, root).root)
                      .select("key", "value").collect()))


def run_demo(rb, planned: Moved) -> DemoResult:
    """The whole way on the demo (see the module's docstring), from the dry run the notebook's
    steps made: its checks and job."""
    spark, ckpt, job = rb.spark, rb.checkpoint, planned.job
    before = tree_checksums(spark, ckpt.root)
    output = ckpt.root + "-moved"
    moves = compare_move(spark, ckpt, job)
    checks = check_requirements(spark, ckpt, moves, "source", output_path=output, force=True)
    moved = move(ckpt, checks, job, dry_run=False)
    untouched = tree_checksums(spark, ckpt.root) == before
    continued = continue_query(spark, job.df, output, provider="rocksdb", mode="update")
    reference, reference_output = _never_moved(spark)
    state, reference_state = _state(spark, output), _state(spark, reference)
    # In place, on a copy: backup and journal, the move, then undo.
    copy = Checkpoint(spark, copy_tree(spark, ckpt.root, ckpt.root + "-in-place"))
    copy_before = tree_checksums(spark, copy.root)
    in_place_checks = check_requirements(spark, copy, compare_move(spark, copy, job), "source",
                                         force=True)
    done = move(copy, in_place_checks, job, dry_run=False)
    back = undo(copy.refresh(), done.journal_path, dry_run=False, force=True)
    same_bytes = bool(back.verified) and tree_checksums(spark, copy.root) == copy_before
    rows_read = (moved.rehearsal.sources[0].rows_read
                 if moved.rehearsal and moved.rehearsal.sources else None)
    return DemoResult(moved, untouched, rows_read, continued.output == reference_output,
                      len(continued.output), len(state), state == reference_state, done,
                      same_bytes, len(copy_before))
