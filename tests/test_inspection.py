"""The inspect-state logic on real demo checkpoints: figures equal what Spark reads and reports."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from state_runbooks import inspection
from state_runbooks.checkpoint import Checkpoint
from state_runbooks.errors import RunbookError
from state_runbooks.state_reader import read_state


@pytest.mark.parametrize("rows,ratio", [([0, 0, 4, 0], 4.0), ([2, 2], 1.0), ([3, 1], 1.5),
                                        ([0, 0], None), ([], None)])
def test_skew_ratio_counts_empty_partitions(rows, ratio):
    assert inspection.skew_ratio(rows) == ratio


@pytest.mark.parametrize("first,last,points,expected", [
    (0, 3, 12, [0, 1, 2, 3]), (5, 5, 12, [5]), (0, 99, 5, [0, 25, 50, 74, 99]), (0, 9, 1, [9])])
def test_sample_batches(first, last, points, expected):
    assert inspection.sample_batches(first, last, points) == expected


@pytest.mark.parametrize("provider", ["hdfs", "rocksdb", "rocksdb_changelog"])
def test_store_figures_equal_spark(spark, demo_factory, provider):
    run = demo_factory("two_operators", provider)
    ckpt = Checkpoint(spark, run.checkpoint_path)
    reports = {r.operator_name: r for r in inspection.inspect_stores(ckpt)}
    reported = {op["operatorName"]: op["numRowsTotal"] for op in run.last_state_operators}
    for name, report in reports.items():
        assert report.rows == reported[name]
        counts = dict(read_state(ckpt, report.operator_id).groupBy("partition_id").count()
                      .collect())
        assert report.rows_per_partition == [counts.get(p, 0) for p in range(4)]
    # Dedup key: event_id ("evt-N", <= 8 bytes) and event_time: 8 + 2*8 + 8; value: one null field.
    dedup = reports["dedupe"]
    assert dedup.key_bytes == dedup.rows * 32
    assert dedup.value_bytes == dedup.rows * 16


def test_rows_behind_watermark(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("two_operators").checkpoint_path)
    reports = {r.operator_name: r for r in inspection.inspect_stores(ckpt)}
    dedup, windows = reports["dedupe"], reports["stateStoreSave"]
    assert windows.event_time_column == "key.window.end"
    assert dedup.event_time_column == "key.event_time"
    watermark = F.timestamp_millis(F.lit(ckpt.next_watermark_ms(3)))
    expected = read_state(ckpt, 1).where(F.col("key.event_time") <= watermark).count()
    assert dedup.rows_behind_watermark == expected
    assert windows.rows_behind_watermark == read_state(ckpt, 0).where(
        F.col("key.window.end") <= watermark).count()


def test_hot_keys_of_a_join(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("join", batches=4).checkpoint_path)
    (right,) = inspection.inspect_stores(ckpt, store_name="right-keyWithIndexToValue", top_keys=50)
    # Split payments: order ord-<v+1> (v % 10 == 4) gets its own payment and a second one.
    assert right.hot_keys
    assert all(k["rows"] == 2 and k["key"].endswith("5") for k in right.hot_keys)
    expected = (read_state(ckpt, 0, "right-keyWithIndexToValue").groupBy("key.field0").count()
                .where("count > 1").count())
    assert len(right.hot_keys) == expected


def test_store_filter_and_unknown_store(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("join").checkpoint_path)
    reports = inspection.inspect_stores(ckpt, operator_id=0, store_name="left-keyToNumValues")
    assert [r.store_name for r in reports] == ["left-keyToNumValues"]
    with pytest.raises(RunbookError, match="no operator has a store named 'nope'"):
        inspection.inspect_stores(ckpt, store_name="nope")


def test_growth_over_batches(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("two_operators").checkpoint_path)
    table = inspection.growth(ckpt)
    assert list(table.index) == [0, 1, 2, 3]
    # 20 events per batch carry 10 ids; nothing is behind the 5 s watermark yet.
    assert table["1/default"].tolist() == [10, 20, 30, 40]
    assert inspection.growth_verdicts(table)["1/default"]["only_grew"]


def test_checklist_on_a_query_without_watermark(spark, tmp_path):
    path = str(tmp_path / "no-watermark")
    df = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 8).load()
          .dropDuplicates(["value"]))
    for _ in range(3):
        q = (df.writeStream.format("noop").option("checkpointLocation", path)
             .trigger(availableNow=True).start())
        q.awaitTermination()
    ckpt = Checkpoint(spark, path)
    reports = inspection.inspect_stores(ckpt)
    items = {i.item: i for i in inspection.production_checklist(ckpt, reports,
                                                                inspection.growth(ckpt))}
    assert items["Watermark"].status == "warn"
    assert items["State growth"].status == "warn"
    assert "8 -> 24 rows" in items["State growth"].evidence


def test_checklist_flags_skew_over_the_threshold(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("two_operators").checkpoint_path)
    reports = inspection.inspect_stores(ckpt)
    items = {i.item: i for i in inspection.production_checklist(ckpt, reports, None,
                                                                skew_warning_ratio=1.0)}
    assert items["Partition balance"].status == "warn"
    relaxed = {i.item: i for i in inspection.production_checklist(ckpt, reports, None)}
    assert relaxed["Partition balance"].status == "pass"
    assert relaxed["Changelog checkpointing"].status == "info"


def test_watermark_that_cannot_evict_is_flagged(spark, tmp_path):
    """The classic leak: a watermark is set, but the dedup key has no event-time column."""
    path = str(tmp_path / "dedup-on-id")
    df = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 8)
          .option("startTimestamp", 1_700_000_000_000).load()
          .withWatermark("timestamp", "1 second").dropDuplicates(["value"]))
    for _ in range(3):
        df.writeStream.format("noop").option("checkpointLocation", path) \
            .trigger(availableNow=True).start().awaitTermination()
    ckpt = Checkpoint(spark, path)
    reports = inspection.inspect_stores(ckpt)
    items = {i.item: i for i in inspection.production_checklist(ckpt, reports,
                                                                inspection.growth(ckpt))}
    assert items["Watermark"].status == "warn"
    assert "never evicts them" in items["Watermark"].evidence
    assert items["State growth"].status == "warn"


def test_young_query_growth_is_not_a_warning(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("two_operators").checkpoint_path)
    items = {i.item: i for i in inspection.production_checklist(
        ckpt, inspection.inspect_stores(ckpt), inspection.growth(ckpt))}
    assert items["State growth"].status == "info"
    assert items["Watermark"].status == "pass"


def test_growth_reuses_the_inspected_counts(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("join").checkpoint_path)
    reports = inspection.inspect_stores(ckpt)
    assert inspection.growth(ckpt, reports=reports).equals(inspection.growth(ckpt))
    one_batch = inspection.growth(ckpt, max_points=1, reports=reports)
    assert one_batch.loc[3].tolist() == [r.rows for r in reports]
