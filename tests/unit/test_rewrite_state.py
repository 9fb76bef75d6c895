"""09's checks and plan arithmetic without Spark, on checkpoints held in memory: the
requirements that read only the checkpoint's files (an older Spark given, so that no session is
asked for its rewriter), what a plan says before and after, and when no transform is needed."""
from __future__ import annotations

import pytest
from memory_checkpoints import ROCKSDB, stopped_checkpoint

from state_runbooks.common.errors import RunbookError
from state_runbooks.runbooks.rewrite_state.checks import check_requirements
from state_runbooks.runbooks.rewrite_state.plan import Plan, StorePlan
from state_runbooks.runbooks.rewrite_state.transforms import make_transform


def requirements(ckpt, **kwargs) -> dict:
    checks = check_requirements(ckpt, spark_version="4.1.0", **kwargs)
    return {r.name: (r.ok, r.seen) for r in checks.requirements}


def test_what_the_files_say_of_a_rocksdb_checkpoint():
    seen = requirements(stopped_checkpoint(provider=ROCKSDB), drop_keys_where="key.k = 1")
    assert seen["spark_version"][0] is False
    assert seen["rewriter"] == (False, "not looked for on this Spark")
    assert seen["committed"] == (True, "the last batch 3 is committed")
    assert seen["format"] == (True, "checkpoint format v1")
    assert seen["metadata"] == (True, "operator metadata present for every operator")
    assert seen["operators"][0] is True
    assert seen["writes"] == (True, "writes with RocksDB (pinned now)")
    assert seen["something"] == (True, "asked: drop the keys where key.k = 1")
    assert seen["output"][0] is True and seen["output"][1].startswith("in place")
    assert seen["stopped"][0] is True


def test_nothing_asked_and_hdfs_without_a_move_are_refused():
    ckpt = stopped_checkpoint(provider=ROCKSDB)
    assert requirements(ckpt)["something"] == (
        False, "nothing asked: the checkpoint already pins rocksdb, no drop_keys_where and no "
               "output_path")
    checks = check_requirements(ckpt, spark_version="4.1.0")
    assert checks.spark_cannot and checks.in_place
    with pytest.raises(RunbookError, match="target_provider='hdfs' is not valid"):
        check_requirements(ckpt, target_provider="hdfs", spark_version="4.1.0")


def test_a_new_location_must_be_outside_and_empty():
    ckpt = stopped_checkpoint(provider=ROCKSDB)
    inside = requirements(ckpt, output_path=ckpt.root + "/state/new")["output"]
    assert inside[0] is False and "overlaps the checkpoint" in inside[1]
    ckpt.spark.open("mem:/elsewhere").write_bytes("x", b"1")
    taken = requirements(ckpt, output_path="mem:/elsewhere")["output"]
    assert taken[0] is False and "exists and is not empty" in taken[1]
    fresh = check_requirements(ckpt, output_path="mem:/new", spark_version="4.1.0")
    assert fresh.output_path == "mem:/new" and not fresh.in_place
    assert fresh.get("something").seen == "asked: write to a new location"


def plan(drop: str, *stores: StorePlan) -> Plan:
    return Plan(3, 4, drop, list(stores))


def test_a_plan_says_rows_before_after_and_dropped():
    p = plan("key.k = 1", StorePlan("0/left", 0, 10, dropped=4), StorePlan("0/right", 0, 6))
    assert p.rows_before == {"0/left": 10, "0/right": 6}
    assert p.rows_after == {"0/left": 6, "0/right": 6}
    assert p.rows_dropped == {"0/left": 4, "0/right": 0}


def test_a_drop_that_matches_nothing_has_nothing_to_do_unless_more_is_asked():
    ckpt = stopped_checkpoint(provider=ROCKSDB)
    in_place = check_requirements(ckpt, drop_keys_where="key.k = 1", spark_version="4.1.0")
    elsewhere = check_requirements(ckpt, drop_keys_where="key.k = 1", output_path="mem:/new",
                                   spark_version="4.1.0")
    nothing = plan("key.k = 1", StorePlan("0/default", 0, 10))
    assert nothing.nothing_to_do(in_place) and not nothing.nothing_to_do(elsewhere)
    assert not plan("key.k = 1", StorePlan("0/default", 0, 10, dropped=1)).nothing_to_do(in_place)


def test_rows_of_rocksdb_go_as_they_are_without_a_drop():
    ckpt = stopped_checkpoint(provider=ROCKSDB)
    assert make_transform(ckpt, plan("", StorePlan("0/default", 0, 10)), "rocksdb") is None
    assert make_transform(ckpt, plan("", StorePlan("0/default", 0, 10)), "hdfs") is not None


def test_the_dropped_ids_again_are_named_by_the_batch_each_checkpoint_ran_them_as():
    """The rewrite writes a batch of its own: the same input runs as batch 4 on the rewritten
    checkpoint and as batch 3 on its copy never rewritten."""
    from types import SimpleNamespace

    from state_runbooks.runbooks.rewrite_state import again_lines
    demo = SimpleNamespace(
        again=SimpleNamespace(progress=[{"batchId": 4}], output=["Row(id=0, event=30)"] * 10),
        never=SimpleNamespace(progress=[{"batchId": 3}], output=[]),
        dropped=SimpleNamespace(plan=SimpleNamespace(new_batch_id=3)))
    assert again_lines(demo)[0] == (
        "the source's next rows bring ids 0..9 again, as batch 4 here (batch 3 is the rewrite) "
        "and as batch 3 on the copy never rewritten: 10 rows come through here, 0 on the copy")
