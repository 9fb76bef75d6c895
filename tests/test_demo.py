"""Demo checkpoints: exactly N batches, deterministic, continuable, with clear errors."""
from __future__ import annotations

import pytest

from state_runbooks.checkpoint import Checkpoint
from state_runbooks.demo import build_demo_checkpoint, run_demo_batches
from state_runbooks.errors import RunbookError
from state_runbooks.state_reader import read_state


def _rows(spark, path, operator_id=0, store="default"):
    ckpt = Checkpoint(spark, path)
    return sorted(map(str, read_state(ckpt, operator_id, store).collect()))


def test_same_demo_gives_the_same_state(spark, demo_factory, tmp_path):
    first = demo_factory("window_agg")
    second = build_demo_checkpoint(spark, "window_agg", str(tmp_path / "again"), batches=4)
    assert _rows(spark, first.checkpoint_path) == _rows(spark, second.checkpoint_path)


def test_continuing_adds_exactly_the_asked_batches(spark, demo_factory, copy_checkpoint):
    path = copy_checkpoint(demo_factory("dedup").checkpoint_path)
    progress = run_demo_batches(spark, "dedup", path, 2)
    assert [p["batchId"] for p in progress] == [4, 5]
    assert Checkpoint(spark, path).commit_batch_ids == list(range(6))


def test_join_demo_builds_the_mismatch_cases(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("join").checkpoint_path)
    right = {r.key.field0 for r in read_state(ckpt, 0, "right-keyWithIndexToValue").collect()}
    assert any(k.startswith("missing-") for k in right)  # payments for orders that do not exist


@pytest.mark.parametrize("kwargs,message", [
    ({"workload": "sessions"}, "demo workload 'sessions' is not known"),
    ({"provider": "memory"}, "provider 'memory' is not known"),
    ({"batches": 0}, "batches must be at least 1"),
])
def test_bad_demo_arguments(spark, tmp_path, kwargs, message):
    with pytest.raises(RunbookError, match=message):
        build_demo_checkpoint(spark, checkpoint_path=str(tmp_path / "c"), **kwargs)


# The operator each newer demo workload runs, as Spark's state-metadata names it.
SHAPE_OPERATORS = {
    "dedup_within_watermark": "dedupeWithinWatermark",
    "join_v3": "symmetricHashJoin",
    "session_window": "sessionWindowStateStoreSaveExec",
    "pandas_with_state": "applyInPandasWithState",
    "transform_with_state": "transformWithStateInPySparkExec",
    "limit": "globalLimit",
}


@pytest.mark.parametrize("workload", sorted(SHAPE_OPERATORS))
def test_shape_workloads_write_state_that_spark_describes(spark, shape_demo, workload):
    run = shape_demo(workload)
    rows = spark.read.format("state-metadata").load(run.checkpoint_path).collect()
    assert {r.operatorName for r in rows} == {SHAPE_OPERATORS[workload]}
    assert {r.maxBatchId for r in rows} == {2}
    assert [p["batchId"] for p in run.progress] == [0, 1, 2]
    assert run.last_state_operators[0]["numRowsTotal"] > 0
