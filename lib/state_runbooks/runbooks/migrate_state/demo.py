"""The demo: 08's example job, whose checkpoint Spark refuses to restart after an aggregate is
added (``build_with_max``), migrated with a ``fill`` for the new aggregate's buffer; the changed
query continued on the result and compared with the same query run from scratch over the same
input; then the migration in place, undone byte for byte.
"""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import copy_tree, tree_checksums
from state_runbooks.demos.checkpoints import new_demo_folder
from state_runbooks.demos.continuation import continue_query
from state_runbooks.demos.jobs import events_per_window

from .apply import Migrated, migrate, undo
from .checks import check_requirements
from .plan import Plan, plan_migration
from .schema_change import SchemaChange, compare_schemas

DEMO_JOB_FILE = events_per_window.__file__
DEMO_FUNCTION = "build_with_max"
# The checkpoint of the job as deployed (``build``): 3 batches of 10 events, 2 partitions.
DEMO = {"workload": "window_agg", "provider": "rocksdb", "batches": 3, "rows_per_batch": 10,
        "partitions": 2}
# max(amount) of the events before the migration is not in the old state: NULL is what Spark's
# max starts from, so the new aggregate covers the events from the migration on.
DEMO_FILL = {"value.max": "CAST(NULL AS DOUBLE)"}
CONTINUED_BATCHES = 2


@dataclass
class DemoResult:
    """Everything the demo did, for :func:`~.report.what_this_showed`."""
    change: SchemaChange
    plan: Plan
    migrated: Migrated  # at a new location
    original_untouched: bool
    batches: int  # continued on the result
    keys: int  # in the state after them
    same_as_scratch: int  # keys whose state equals a run from scratch over the same input
    only_filled_differ: int  # keys that differ in the filled fields alone
    still_filled: int  # of those, keys no event reached after the migration: the fill, unchanged
    in_place: Migrated  # on a copy, with backup and journal
    undone_same_bytes: bool  # then undone
    files: int


def job_to_migrate(is_demo: bool, query_file: str, query_function: str) -> tuple[str, str]:
    """The job file and function: the ones given, or on the demo its refused change."""
    if str(query_file or "").strip() or not is_demo:
        return query_file, query_function
    return DEMO_JOB_FILE, DEMO_FUNCTION


def compare_with_scratch(spark, migrated: str, scratch: str, filled: list[str]) -> tuple:
    """(keys, keys whose value equals the run from scratch, keys that differ in ``filled``
    value fields alone, and of those the keys whose filled fields are still NULL: no event
    reached them after the migration), over the last committed state of each, default store."""
    from pyspark.sql import functions as F
    a = spark.read.format("statestore").load(Checkpoint(spark, migrated).root)
    b = spark.read.format("statestore").load(Checkpoint(spark, scratch).root)
    names = [f.name for f in a.schema["value"].dataType.fields]
    kept = [n for n in names if f"value.{n}" not in filled]
    joined = a.select("key", F.col("value").alias("a")).join(
        b.select("key", F.col("value").alias("b")), "key", "full_outer")
    same = F.col("a").eqNullSafe(F.col("b"))
    kept_same = F.struct(*[F.col(f"a.{n}") for n in kept]).eqNullSafe(
        F.struct(*[F.col(f"b.{n}") for n in kept]))
    untouched_fill = F.lit(True)
    for name in filled:
        untouched_fill = untouched_fill & F.col(f"a.{name.removeprefix('value.')}").isNull()
    row = joined.agg(F.count(F.lit(1)).alias("keys"),
                     F.count(F.when(same, 1)).alias("same"),
                     F.count(F.when(~same & kept_same, 1)).alias("filled"),
                     F.count(F.when(~same & kept_same & untouched_fill, 1)).alias("unreached")
                     ).first()
    return int(row["keys"]), int(row["same"]), int(row["filled"]), int(row["unreached"])


def run_demo(rb, planned: Migrated) -> DemoResult:
    """The whole way on the demo (see the module's docstring; ``rb``: what ``start_runbook``
    returned), from the dry run the notebook's steps made: its job, schema change, plan and
    fill."""
    spark, ckpt = rb.spark, rb.checkpoint
    job, change, plan, fill = planned.job, planned.change, planned.plan, planned.fill
    before = tree_checksums(spark, ckpt.root)
    output = ckpt.root + "-migrated"
    checks = check_requirements(ckpt, change, "", output, force=True)
    moved = migrate(ckpt, checks, change, plan, fill, job, dry_run=False)
    untouched = tree_checksums(spark, ckpt.root) == before
    continue_query(spark, job.df, output, batches=CONTINUED_BATCHES, provider="rocksdb",
                   mode="update")
    scratch = new_demo_folder() + "/scratch"
    continue_query(spark, job.df, scratch, batches=plan.batch_id + 1 + CONTINUED_BATCHES,
                   provider="rocksdb", partitions=2, mode="update")
    filled = [s.field for store in change.changed for s in store.value.sources
              if s.kind == "fill"]
    keys, same, only_filled, still_filled = compare_with_scratch(spark, output, scratch, filled)
    # In place, on a copy: backup and journal, the new batch, then undo.
    copy = Checkpoint(spark, copy_tree(spark, ckpt.root, ckpt.root + "-in-place"))
    copy_before = tree_checksums(spark, copy.root)
    in_place_change = compare_schemas(spark, copy, job, fill)
    try:
        in_place = check_requirements(copy, in_place_change, force=True)
        done = migrate(copy, in_place, in_place_change,
                       plan_migration(copy, in_place_change, fill), fill, job, dry_run=False)
        back = undo(copy.refresh(), done.journal_path, dry_run=False, force=True)
    finally:
        in_place_change.remove_fresh()
    same_bytes = bool(back.verified) and tree_checksums(spark, copy.root) == copy_before
    return DemoResult(change, plan, moved, untouched, CONTINUED_BATCHES, keys, same,
                      only_filled, still_filled, done, same_bytes, len(copy_before))
