"""Runbook 02's arithmetic: the napkin estimate against hand-computed cases, one-line refusals of
bad inputs, Java object sizes, and the sampling model against a simulation."""
from __future__ import annotations

import math
import random
import statistics

import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.runbooks import estimate_state_size as sizing

DEDUP = dict(input_rows_per_second=2000.0, watermark_seconds=5.0, trigger_seconds=1.0,
             key_cardinality=0, key_bytes=32, value_bytes=16, num_partitions=4, provider="hdfs")


# -- the napkin, by hand ---------------------------------------------------------------------------
def test_napkin_of_the_demo_deduplication_by_hand():
    est = sizing.napkin(sizing.NapkinInputs(**DEDUP))
    # 2,000 rows/s x (5 s watermark + 1 s batch) = 12,000 rows; 3,000 per partition, 500 of them
    # new in each batch and 500 evicted (still held by the older version).
    assert (est.rows, est.arrivals_per_batch) == (12_000, 2_000)
    assert est.payload_bytes == 12_000 * (32 + 16)
    assert est.rule_of_thumb_bytes() == (576_000, 864_000)
    key, value, node = 40 + 16 + 32, 16 + 40 + 16 + 16, 32  # UnsafeRow + byte[]; wrapper too
    table = 16 + 4 * 16_384  # putAll of 3,000 rows: twice the power of two >= 4,501
    per_partition = (3_000 * (key + value) + 500 * (key + value) + 2 * 3_000 * node + 2 * table
                     + 96 + 2 * 152)
    assert per_partition == 939_504
    assert est.memory.heap_bytes == 4 * per_partition == est.memory_bytes
    assert est.bytes_per_partition == per_partition
    assert est.memory.heap_bytes > 4 * est.rule_of_thumb_bytes()[1]  # the rule of thumb undercounts
    assert (est.recommendation.provider, est.recommendation.partitions) == ("hdfs", 4)
    summary = est.summary()
    assert {"rows", "payload_bytes", "memory_bytes", "bytes_per_partition",
            "recommended_provider"} <= set(summary)


def test_napkin_with_keys_that_are_updated_by_hand():
    est = sizing.napkin(sizing.NapkinInputs(50.0, 600.0, 10.0, 1000, 24, 16, 2, "hdfs"))
    # 1,000 keys (fewer than 50 x 610 rows); each 10 s batch replaces 500 values, 250 per partition.
    assert est.rows == 1000 and est.partition.replaced == 250 and est.partition.inserted == 0
    key, value = 56 + 24, 72 + 16
    table = 16 + 4 * 2048  # putAll of 500 rows: twice the power of two >= 751
    per_partition = 500 * (key + value) + 250 * value + 1000 * 32 + 2 * table + 96 + 2 * 152
    assert est.memory.heap_bytes == 2 * per_partition == 309_632


def test_napkin_recommends_rocksdb_above_a_million_rows():
    est = sizing.napkin(sizing.NapkinInputs(10_000.0, 600.0, 10.0, 0, 64, 16, 200, "hdfs"))
    assert est.rows == 6_100_000
    rec = est.recommendation
    assert (rec.provider, rec.partitions) == ("rocksdb", 200)
    assert "6,100,000 rows > 1,000,000" in rec.reason
    assert est.summary()["memory_bytes"] == round(est.memory.heap_bytes)  # planned: hdfs
    assert sizing.napkin(sizing.NapkinInputs(10_000.0, 600.0, 10.0, 0, 64, 16, 200, "rocksdb")
                         ).memory_bytes == 200 * (8 + 2 * 64) * 1024 ** 2


def test_napkin_adds_partitions_for_large_rows_on_hdfs():
    est = sizing.napkin(sizing.NapkinInputs(1000.0, 599.0, 1.0, 0, 32, 4096, 4, "hdfs"))
    rec = est.recommendation
    assert est.rows == 600_000 and rec.provider == "hdfs"
    assert rec.partitions == math.ceil(est.memory.heap_bytes / sizing.HDFS_HEAP_PER_PARTITION)
    assert rec.partitions > 4 and "256 MiB" in rec.reason


def test_napkin_lines_fill_in_the_numbers():
    lines = sizing.napkin_lines(sizing.napkin(sizing.NapkinInputs(**DEDUP)))
    text = "\n".join(lines)
    assert "2,000 rows/s x (5 s + 1 s)" in text and "= 12,000" in text
    assert "32 + 88 + 88" in text and "16,384 slots" in text
    assert text.count("\n1") == 1 and len(lines) == 10


@pytest.mark.parametrize("field,value,message", [
    ("input_rows_per_second", -5.0, "input_rows_per_second=-5.0 is negative"),
    ("num_partitions", 0, "num_partitions=0 is not valid"),
    ("watermark_seconds", -1.0, "watermark_seconds=-1.0 is negative"),
    ("trigger_seconds", 0.0, "trigger_seconds=0.0 is not positive"),
    ("key_bytes", 4, "key_bytes=4 is too small"),
    ("key_cardinality", -3, "key_cardinality=-3 is not valid"),
    ("provider", "memory", "provider='memory' is not known: use one of hdfs, rocksdb"),
    ("input_rows_per_second", float("nan"), "is not a number"),
])
def test_bad_napkin_inputs_get_one_line(field, value, message):
    with pytest.raises(RunbookError) as excinfo:
        sizing.NapkinInputs(**{**DEDUP, field: value})
    assert message in str(excinfo.value) and "\n" not in str(excinfo.value)


def test_bad_horizon_gets_one_line():
    import pandas as pd
    with pytest.raises(RunbookError, match="horizon_batches=-1 is not valid"):
        sizing.project(pd.DataFrame({"0/default": [1, 2]}), [], -1)


# -- the model's pieces ----------------------------------------------------------------------------
def test_table_lengths_follow_jdk17():
    # Filled by put: doubles when the entries reach 3/4 of the length.
    assert [sizing.filled_capacity(n) for n in (10, 12, 3000, 3071, 3072)] == [
        16, 32, 4096, 4096, 8192]
    # putAll into an empty map: twice the power of two >= 1.5 n + 1 (measured with a Java probe:
    # 100 -> 512, 500 -> 2048, 1000 -> 4096, 2500 -> 8192, 3000 -> 16384).
    assert [sizing.copied_capacity(n, n) for n in (100, 500, 1000, 2500, 3000)] == [
        512, 2048, 4096, 8192, 16384]
    assert sizing.copied_capacity(3000, 20_000) == 32_768  # then grown by the batch's inserts


def test_size_estimator_sampling_model_against_a_simulation():
    """SizeEstimator's figure for a table of 1,024 slots, simulated with random hashing: the
    model's mean and standard deviation match."""
    rng = random.Random(7)
    length, entries, per_entry = 1024, 600, 200

    def figure():
        slots = [0] * length
        for _ in range(entries):
            slots[rng.randrange(length)] += 1
        drawn = rng.sample(range(length), 200)
        s1 = sum(slots[i] for i in drawn[:100]) * per_entry
        s2 = sum(slots[i] for i in drawn[100:]) * per_entry
        return max(s1, s2) + min(s1, s2) * ((length - 100) // 100)

    runs = [figure() for _ in range(600)]
    mean = sizing.estimated_slots_bytes(length, entries, per_entry)
    sd = math.sqrt(sizing.estimated_slots_variance(length, entries, per_entry))
    assert abs(statistics.mean(runs) / mean - 1) < 0.02
    assert abs(statistics.stdev(runs) / sd - 1) < 0.15
    assert mean < entries * per_entry  # it reads low: the smaller sample is extrapolated


def test_two_versions_with_the_same_table_count_shared_rows_once():
    same = sizing.PartitionVersions(3000, 500, 500, 0, 16_384, 16_384)
    other = sizing.PartitionVersions(3000, 500, 500, 0, 16_384, 8_192)
    a, b = sizing.estimate_partition(same, 32, 16), sizing.estimate_partition(other, 32, 16)
    assert a.row_object_bytes == b.row_object_bytes == 3500 * 176  # each object once on the heap
    assert b.reported_bytes > 1.3 * a.reported_bytes  # ... but reported twice with other lengths
    one = sizing.estimate_partition(same, 32, 16, versions_in_memory=1)
    assert one.entry_bytes == 3000 * 32 and one.table_bytes == 16 + 4 * 16_384


def test_no_napkin_on_a_real_checkpoint_without_a_rate():
    """The demo's napkin inputs describe the demo only: on a given checkpoint without a rate there
    is no napkin, and nothing of the demo's job appears in the summary."""
    from state_runbooks.running.results import Summary
    assert sizing.DEMO_NAPKIN == DEDUP
    none_given = {**DEDUP, "input_rows_per_second": 0.0}
    assert sizing.napkin_inputs(False, **none_given) is None
    assert sizing.napkin_inputs(True, **none_given) == sizing.NapkinInputs(**DEDUP)
    # the exercise's rerun: the demo's job with the watermark delay it names
    shorter = sizing.napkin_inputs(True, **{**none_given, "watermark_seconds": 2.0})
    assert shorter == sizing.NapkinInputs(**{**DEDUP, "watermark_seconds": 2.0})
    assert sizing.napkin_heading(True, shorter, 0.0) == (
        "Napkin for the demo's job with watermark_seconds=2 instead of its 5 (no "
        "input_rows_per_second given).")
    assert sizing.napkin_heading(True, sizing.NapkinInputs(**DEDUP), 0.0) == (
        "Napkin for the demo's job (no input_rows_per_second given).")
    assert sizing.try_it(sizing.napkin(shorter)).question.startswith(
        "With watermark_seconds=2, as this run has it, how many rows")
    planned = sizing.napkin_inputs(False, **{**none_given, "input_rows_per_second": 500.0})
    assert planned == sizing.NapkinInputs(**{**DEDUP, "input_rows_per_second": 500.0})
    summary = Summary("estimate_state_size", "x", "4")
    nothing = sizing.CheckpointMeasurement(0, [], [])
    sizing.summarize(summary, sizing.Sizing(None, nothing, False, None, None))
    assert summary.details["napkin"] is None and not summary.findings
    assert sizing.recommendation_lines(None, [], None) == []


def test_the_exercise_tells_a_right_prediction_from_a_wrong_one():
    from state_runbooks.runbooks import estimate_state_size as sizing
    exercise = sizing.try_it(sizing.napkin(sizing.NapkinInputs(**sizing.DEMO_NAPKIN)))
    assert exercise.answer == 2000 * (2 + 1)  # new keys a second x (watermark delay + batch)
    assert exercise.check("6,000").startswith("right: 6000")
    assert exercise.check(12_000).startswith("not quite: you said 12000; the run says 6000")


def test_the_accuracy_lines_say_which_rule_answers_what():
    """Within the 25% target: close enough to size memory with; more than 2 sd off: more than
    sampling explains, however small the percent (02's windowed aggregation: -10.6%, -2.5 sd)."""
    from state_runbooks.runbooks.estimate_state_size.demo import Comparison, accuracy_lines

    def compared(workload, estimate, sd, reported):
        return Comparison(workload, "hdfs", "", 1, 1, 1, 1, 1.0, estimate, sd, 1.0, reported)
    lines = accuracy_lines([compared("dedup", 1_000_000, 50_000, 1_040_000),
                            compared("window_agg_many_users", 4_350_000, 210_000, 4_870_000)])
    assert lines[0].endswith("(-0.8 sd of SizeEstimator's sampling: sampling explains it)")
    assert lines[1].endswith("(-2.5 sd of SizeEstimator's sampling: more than sampling explains)")
    assert lines[2].startswith("largest error 10.7%: within the 25% target on 2 workloads: close "
                               "enough to size memory with; windowed aggregation more than 2 sd "
                               "off: the estimate misses part")
