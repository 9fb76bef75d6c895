"""07's checks and its forecast's arithmetic without Spark, on checkpoints held in memory: each
requirement of Spark's offline repartition as shown (Spark's own version given, so that no
session is asked)."""
from __future__ import annotations

import pytest
from memory_checkpoints import ROCKSDB, commit_entry, offsets_entry, stopped_checkpoint

from state_runbooks.common.errors import RunbookError
from state_runbooks.runbooks.repartition_state.checks import (
    check_requirements,
    current_partitions,
    target_partitions,
)
from state_runbooks.runbooks.repartition_state.forecast import UnitScan, rows_equal


def test_the_count_now_comes_from_the_pinned_partitions():
    assert current_partitions(stopped_checkpoint(partitions=3)) == 3


def test_the_count_asked_for():
    assert target_partitions(8, before=2) == 8
    assert target_partitions(0, before=3) == 6  # twice the current count, for a forecast
    with pytest.raises(RunbookError, match="num_partitions=-1 is not valid"):
        target_partitions(-1, before=2)


def requirements(ckpt, num_partitions: int, **kwargs) -> dict:
    checks = check_requirements(ckpt, num_partitions, spark_version="4.3.0", **kwargs)
    return {r.name: (r.ok, r.seen) for r in checks.requirements}


def test_every_requirement_of_a_repartitionable_checkpoint_but_the_api():
    ckpt = stopped_checkpoint(provider=ROCKSDB)
    checks = check_requirements(ckpt, 4, spark_version="4.3.0")
    assert (checks.num_partitions_before, checks.num_partitions_after) == (2, 4)
    seen = {r.name: r.ok for r in checks.requirements}
    assert seen == {"spark_version": True, "api": False, "committed": True, "new_count": True,
                    "provider": True, "operators": True, "stopped": True}
    assert checks.spark_cannot and checks.inventory is not None
    assert checks.get("operators").seen == ("operator 0 (stateStoreSave, aggregation): "
                                            "repartition verified")


def test_what_is_refused():
    ckpt = stopped_checkpoint()
    seen = requirements(ckpt, 2)
    assert seen["new_count"] == (False, "the query already runs on 2 partitions: pass another "
                                        "num_partitions")
    assert seen["provider"][0] is False and "HDFSBackedStateStoreProvider: Spark's repartition " \
        "refuses the HDFS-backed provider" in seen["provider"][1]
    assert check_requirements(ckpt, 4, spark_version="4.1.0").get("spark_version").seen == (
        "Spark 4.1.0: the offline repartition ships with 4.2 and later")


def test_a_batch_in_flight_and_a_live_query_are_refused():
    ckpt = stopped_checkpoint(provider=ROCKSDB)
    ckpt.fs.write_bytes("offsets/4", offsets_entry(4, ROCKSDB))
    seen = requirements(ckpt, 4)
    assert seen["committed"][0] is False and seen["committed"][1].startswith(
        "the last batch 4 has an offsets entry but no commit")
    assert seen["stopped"][0] is False  # offsets/4 was written just now
    ckpt.fs.write_bytes("commits/4", commit_entry(4))
    forced = check_requirements(ckpt, 4, force=True, spark_version="4.3.0").get("stopped")
    assert forced.overridden and forced.seen.endswith("(force=True: going on)")


def scan(label: str, rows: int, per_partition: list[int], checksum=("1", "2")) -> UnitScan:
    return UnitScan(label, rows, checksum, per_partition)


def test_skew_and_rows_equal_wherever_the_rows_sit():
    before = scan("0/default", 12, [6, 6])
    skewed = scan("0/default", 12, [9, 1, 1, 1])
    assert before.skew == 1.0 and skewed.skew == 3.0
    assert scan("0/default", 0, [0, 0]).skew is None
    assert skewed.skew_after is None
    skewed.after = [3, 3, 3, 3, 0, 0]
    assert skewed.skew_after == 1.5
    assert rows_equal([before], [skewed])
    assert not rows_equal([before], [scan("0/default", 12, [6, 6], ("1", "3"))])
    assert not rows_equal([before], [before, scan("1/default", 0, [0])])


def test_the_restart_compared_says_why_the_batch_ids_differ_and_why_nothing_was_written():
    from state_runbooks.runbooks.repartition_state.demo import restart_lines
    lines = restart_lines(4, 3, {4}, 2, (0, 0))
    assert lines[0] == ("restarted: batch 4 ran its stateful operators on 4 partitions "
                        "(numShufflePartitions in its progress)")
    assert lines[1] == ("never repartitioned: batch 3 ran on 2 partitions (the same input: the "
                        "repartition itself is batch 3, so the input reaches this checkpoint one "
                        "batch later)")
    assert lines[2].startswith("rows written: 0 here, 0 there, the same on both: the count writes "
                               "a window once the watermark passes its end")
    assert restart_lines(5, 5, {2}, 2, (3, 2))[1:] == [
        "never repartitioned: batch 5 ran on 2 partitions",
        "rows written: 3 here, 2 there, DIFFERENT"]
