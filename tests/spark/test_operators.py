"""The operator model on checkpoints written by real queries of every shape."""
from __future__ import annotations

import os
import shutil

import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.core import operators
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.state_loads import READER_LIMIT, load_failure_kind
from state_runbooks.core.state_reader import read_state, read_unit

# workload -> (family, {unit label: (kind, reader options)})
SHAPES = {
    "dedup_within_watermark": ("dedup_within_watermark",
                               {"0/default": ("store", {"storeName": "default"})}),
    "session_window": ("session_window", {"0/default": ("store", {"storeName": "default"})}),
    "pandas_with_state": ("group_state", {"0/default": ("store", {"storeName": "default"})}),
    "limit": ("limit", {"0/default": ("store", {"storeName": "default"})}),
    "join_v3": ("join", {f"0/{name}": ("join_rows" if name.endswith("Value") else "join_count",
                                       {"storeName": name})
                         for name in operators.JOIN_STORES}),
    "transform_with_state": ("transform_with_state", {
        "0/amount_by_bucket": ("map", {"stateVarName": "amount_by_bucket"}),
        "0/events": ("value", {"stateVarName": "events"}),
        "0/recent_ids": ("list", {"stateVarName": "recent_ids"}),
        "0/timers": ("timers", {"readRegisteredTimers": "true"}),
    }),
}


def _spark_read(spark, path, options):
    reader = spark.read.format("statestore")
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load(path)


@pytest.mark.parametrize("workload", sorted(SHAPES))
def test_units_of_every_shape_are_what_spark_reads(spark, shape_demo, workload):
    run = shape_demo(workload)
    ckpt = Checkpoint(spark, run.checkpoint_path)
    family, expected = SHAPES[workload]
    assert operators.operator_model(ckpt, 0).family == family
    units = operators.state_units(ckpt)
    assert {u.label: (u.kind, u.options) for u in units} == expected
    for unit in units:
        # The same figure Spark's reader gives with the options written out by hand.
        assert read_unit(ckpt, unit).count() == _spark_read(spark, run.checkpoint_path,
                                                            expected[unit.label][1]).count()


def test_transform_with_state_variables_and_timers(spark, shape_demo):
    ckpt = Checkpoint(spark, shape_demo("transform_with_state").checkpoint_path)
    model = operators.operator_model(ckpt, 0)
    assert (model.operator_name, model.time_mode) == ("transformWithStateInPySparkExec",
                                                      "ProcessingTime")
    assert ckpt.operator(0).metadata_version == 2
    units = {u.label: u for u in operators.state_units(ckpt)}
    assert units["0/events"].ttl and units["0/events"].expiry.rule == "ttl"
    assert units["0/recent_ids"].expiry.rule == "processor"  # no TTL: the processor clears it
    assert units["0/timers"].expiry == operators.Expiry("timer", "expiration_timestamp_ms",
                                                        "processing_time")
    # Lists come flattened by default (one row per element); unflattened, one row per key.
    flat = read_state(ckpt, 0, state_variable="recent_ids").count()
    per_key = read_state(ckpt, 0, state_variable="recent_ids",
                         options={"flattenCollectionTypes": "false"}).count()
    assert flat > per_key == read_state(ckpt, 0, state_variable="events").count()
    with pytest.raises(RunbookError, match="pass state_variable, one of .*events"):
        read_state(ckpt, 0)


def test_join_format_3_is_read_by_side_store_names(spark, shape_demo):
    ckpt = Checkpoint(spark, shape_demo("join_v3").checkpoint_path)
    model = operators.operator_model(ckpt, 0)
    assert model.join_state_format == 3
    assert [s.store_name for s in ckpt.operator(0).stores] == ["default"]
    assert {u.files_store for u in operators.state_units(ckpt)} == {"default"}
    # Read as its one metadata store, Spark's reader refuses: a reader limit, not damage.
    with pytest.raises(RunbookError) as refused:
        read_state(ckpt, 0, "default").count()
    assert refused.value.error_class == "STDS_FAILED_TO_READ_STATE_SCHEMA"
    assert load_failure_kind(refused.value.error_class) == READER_LIMIT


def test_limit_keeps_state_in_partition_0_only(spark, shape_demo):
    run = shape_demo("limit")
    ckpt = Checkpoint(spark, run.checkpoint_path)
    assert ckpt.operator(0).num_partitions == 2  # what the operator metadata says
    assert operators.state_partitions(ckpt, 0) == (0,)
    on_disk = sorted(e for e in os.listdir(os.path.join(run.checkpoint_path, "state", "0"))
                     if e.isdigit())
    assert on_disk == ["0"]


def test_join_format_2_stores_and_expiry(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("join").checkpoint_path)
    model = operators.operator_model(ckpt, 0)
    assert (model.family, model.join_state_format, model.expiry.rule) == ("join", 2, "join_side")
    assert [u.store_name for u in operators.state_units(ckpt)] == sorted(operators.JOIN_STORES)


def test_checkpoint_without_operator_metadata_falls_back_to_folders(spark, demo_factory,
                                                                    copy_checkpoint):
    path = copy_checkpoint(demo_factory("join").checkpoint_path)
    shutil.rmtree(os.path.join(path, "state", "0", "_metadata"))  # as Spark 3.4 and older wrote
    ckpt = Checkpoint(spark, path)
    model = operators.operator_model(ckpt, 0)
    assert model.metadata == "files" and model.operator_name == "unknown"
    assert model.family == "join"  # recognized by its four store folders
    assert "inferred from the folder layout" in model.notes[0]
    assert {u.store_name for u in operators.state_units(ckpt)} == set(operators.JOIN_STORES)


