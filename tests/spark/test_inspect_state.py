"""The inspect-state logic on real demo checkpoints: figures equal what Spark reads and reports."""
from __future__ import annotations

import pytest
import tiers
from pyspark.sql import functions as F

from state_runbooks.common.errors import RunbookError
from state_runbooks.core import growth as state_growth
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import StateUnit
from state_runbooks.core.state_reader import read_state
from state_runbooks.runbooks import inspect_state
from state_runbooks.running.results import Summary


# make test: RocksDB (the checkpoint corpus compares every provider's figures with Spark's reader)
@pytest.mark.parametrize("provider", tiers.tiered(["hdfs", "rocksdb", "rocksdb_changelog"],
                                                  {"rocksdb"}))
def test_store_figures_equal_spark(spark, demo_factory, provider):
    run = demo_factory("two_operators", provider)
    ckpt = Checkpoint(spark, run.checkpoint_path)
    reports = {r.operator_name: r for r in inspect_state.inspect_stores(ckpt)}
    reported = {op["operatorName"]: op["numRowsTotal"] for op in run.last_state_operators}
    for name, report in reports.items():
        assert report.rows == reported[name]
        counts = dict(read_state(ckpt, report.operator_id).groupBy("partition_id").count()
                      .collect())
        assert report.rows_per_partition == [counts.get(p, 0) for p in range(run.partitions)]
    # Dedup key: event_id ("evt-N", <= 8 bytes) and event_time: 8 + 2*8 + 8; value: one null field.
    dedup = reports["dedupe"]
    assert dedup.key_bytes == dedup.rows * 32
    assert dedup.value_bytes == dedup.rows * 16


def test_rows_behind_watermark(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("two_operators").checkpoint_path)
    reports = {r.operator_name: r for r in inspect_state.inspect_stores(ckpt)}
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
    (right,) = inspect_state.inspect_stores(ckpt, store_name="right-keyWithIndexToValue",
                                            top_keys=50)
    # Split payments: order ord-<v+1> (v % 10 == 4) gets its own payment and a second one.
    assert right.hot_keys
    assert all(k["rows"] == 2 and k["key"].endswith("5") for k in right.hot_keys)
    expected = (read_state(ckpt, 0, "right-keyWithIndexToValue").groupBy("key.field0").count()
                .where("count > 1").count())
    assert len(right.hot_keys) == expected


def test_store_filter_and_unknown_store(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("join").checkpoint_path)
    reports = inspect_state.inspect_stores(ckpt, operator_id=0, store_name="left-keyToNumValues")
    assert [r.store_name for r in reports] == ["left-keyToNumValues"]
    with pytest.raises(RunbookError, match="no operator has a store named 'nope'"):
        inspect_state.inspect_stores(ckpt, store_name="nope")


def test_growth_over_batches(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("two_operators").checkpoint_path)
    table = state_growth.growth(ckpt)
    assert list(table.index) == [0, 1, 2, 3]
    # 20 events per batch carry 10 ids; nothing is behind the 5 s watermark yet.
    assert table["1/default"].tolist() == [10, 20, 30, 40]
    assert state_growth.growth_verdicts(table)["1/default"]["only_grew"]


def test_checklist_on_a_query_without_watermark(spark, tmp_path):
    path = str(tmp_path / "no-watermark")
    df = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 8).load()
          .dropDuplicates(["value"]))
    for _ in range(3):
        q = (df.writeStream.format("noop").option("checkpointLocation", path)
             .trigger(availableNow=True).start())
        q.awaitTermination()
    ckpt = Checkpoint(spark, path)
    reports = inspect_state.inspect_stores(ckpt)
    items = {i.details["item"]: i for i in inspect_state.production_checklist(ckpt, reports,
                                                                state_growth.growth(ckpt))}
    assert items["Watermark"].details["status"] == "warn"
    assert items["State growth"].details["status"] == "warn"
    assert "8 -> 24 rows" in items["State growth"].message
    # A scheduled run's summary: a finding per warned item, named by its code (fail_on warning
    # then fails the run: the notebook tests, on 01).
    summary = Summary("inspect_state", ckpt.root, spark.version)
    inspection = inspect_state.Inspection(reports, None, list(items.values()))
    inspect_state.summarize(summary, inspection)
    written = summary.to_dict()
    assert written["status"] == "warning"
    assert {f["code"] for f in written["findings"]} == {"no_watermark", "state_growth"}


def test_checklist_flags_skew_over_the_threshold(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("two_operators").checkpoint_path)
    reports = inspect_state.inspect_stores(ckpt)
    items = {i.details["item"]: i for i in inspect_state.production_checklist(ckpt, reports, None,
                                                                skew_warning_ratio=1.0)}
    assert items["Partition balance"].details["status"] == "warn"
    relaxed = {i.details["item"]: i for i in inspect_state.production_checklist(ckpt, reports, None)}
    assert relaxed["Partition balance"].details["status"] == "pass"
    assert relaxed["Changelog checkpointing"].details["status"] == "info"


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
    reports = inspect_state.inspect_stores(ckpt)
    items = {i.details["item"]: i for i in inspect_state.production_checklist(ckpt, reports,
                                                                state_growth.growth(ckpt))}
    assert items["Watermark"].details["status"] == "warn"
    assert "never evicts them" in items["Watermark"].message
    assert items["State growth"].details["status"] == "warn"


def test_young_query_growth_is_not_a_warning(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("two_operators").checkpoint_path)
    items = {i.details["item"]: i for i in inspect_state.production_checklist(
        ckpt, inspect_state.inspect_stores(ckpt), state_growth.growth(ckpt))}
    assert items["State growth"].details["status"] == "info"
    assert items["Watermark"].details["status"] == "pass"


def test_growth_reuses_the_inspected_counts(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("join").checkpoint_path)
    reports = inspect_state.inspect_stores(ckpt)
    assert state_growth.growth(ckpt, reports=reports).equals(state_growth.growth(ckpt))
    one_batch = state_growth.growth(ckpt, max_points=1, reports=reports)
    assert one_batch.loc[3].tolist() == [r.rows for r in reports]


def test_growth_replayed_from_the_change_feed_equals_state_reads(spark, tmp_path):
    """Growth counts each unit from its state at the first retained batch and the change feed
    after it; they equal Spark's own reads of the state at every sampled batch, also where old
    versions were cleaned up and keys are updated and evicted (windows of many users)."""
    from state_runbooks.demos.checkpoints import build_demo_checkpoint
    run = build_demo_checkpoint(
        spark, "window_agg_many_users", str(tmp_path / "c"), batches=7,
        provider="rocksdb_changelog", rows_per_batch=20, partitions=2,
        extra_conf={"spark.sql.streaming.minBatchesToRetain": "2",
                    "spark.sql.streaming.stateStore.maintenanceInterval": "100ms"})
    ckpt = Checkpoint(spark, run.checkpoint_path)
    lo, hi = ckpt.retained_batch_range()
    assert lo > 0, "state maintenance should have cleaned up the oldest versions"
    table = state_growth.growth(ckpt)
    expected = [read_state(ckpt, 0, batch_id=b).count() for b in table.index]
    assert table["0/default"].tolist() == expected
    # A replay that disagrees with the inspected batch's scan is not trusted: state reads decide.
    (report,) = inspect_state.inspect_stores(ckpt)
    report.rows += 1
    recounted = state_growth.growth(ckpt, reports=[report])
    assert recounted["0/default"].tolist() == expected[:-1] + [report.rows]


@pytest.mark.parametrize("workload", tiers.tiered(  # make test: one deduplication
    ["dedup", "dedup_within_watermark"], {"dedup"}))
def test_growth_of_a_young_deduplication_from_change_feed_counts(spark, tmp_path, workload):
    """A young RocksDB changelog checkpoint has no snapshot to read key counts from. A
    deduplication only puts keys it lacks: each batch's rows are the next one's minus its puts
    plus its removals, from the feed's line counts; they equal Spark's reads of the state at every
    batch, through the fill-up and the evictions."""
    from state_runbooks.demos.checkpoints import build_demo_checkpoint
    run = build_demo_checkpoint(spark, workload, str(tmp_path / "c"), batches=9,
                                provider="rocksdb_changelog", rows_per_batch=20, partitions=2)
    ckpt = Checkpoint(spark, run.checkpoint_path)
    assert not [f for f in ckpt.state_files() if f.kind == "zip"], "a snapshot was written"
    reports = inspect_state.inspect_stores(ckpt)
    table = state_growth.growth(ckpt, reports=reports)
    assert set(table.attrs["methods"].values()) == {state_growth.FEED_COUNTS}
    expected = [read_state(ckpt, 0, batch_id=b).count() for b in table.index]
    assert table["0/default"].tolist() == expected and list(table.index) == list(range(9))
    if workload == "dedup":  # its 5 s watermark evicts from the seventh batch on
        assert expected[-1] == expected[-2], "the evictions did not balance the new keys"
    # Without the newest batch's scan there is nothing to count back from: state reads instead.
    assert state_growth.FEED_COUNTS not in state_growth.growth(ckpt).attrs["methods"].values()
    # A scan that the feed does not add up to (rows below zero) is not trusted.
    reports[0].rows = 1
    methods = state_growth.growth(ckpt, reports=reports).attrs["methods"]
    assert state_growth.FEED_COUNTS not in methods.values()


def test_growth_from_rocksdb_snapshot_key_counts(spark, demo_factory):
    """RocksDB without changelog writes a snapshot per version, each with the key count Spark
    kept: growth sums them, no state loaded, and they equal Spark's reads of the state."""
    ckpt = Checkpoint(spark, demo_factory("two_operators", "rocksdb").checkpoint_path)
    reports = inspect_state.inspect_stores(ckpt)
    table = state_growth.growth(ckpt, reports=reports)
    assert set(table.attrs["methods"].values()) == {state_growth.KEY_COUNTS}
    assert list(table.index) == [0, 1, 2, 3]
    for label in table.columns:
        op = int(label.split("/")[0])
        assert table[label].tolist() == [read_state(ckpt, op, batch_id=b).count()
                                         for b in table.index]
    assert state_growth.method_lines(table) == [
        "counted by RocksDB snapshot key counts (exact): 0/default, 1/default"]
    # Counts that disagree with the inspected batch's scan are not trusted.
    reports[0].rows += 1
    methods = state_growth.growth(ckpt, reports=reports).attrs["methods"]
    assert state_growth.KEY_COUNTS not in methods.values()


# -- every operator shape ------------------------------------------------------------------------
# workload -> the units Spark's reader reads, with the options written out by hand
SHAPE_READS = {
    "dedup_within_watermark": {"0/default": {"storeName": "default"}},
    "session_window": {"0/default": {"storeName": "default"}},
    "pandas_with_state": {"0/default": {"storeName": "default"}},
    "limit": {"0/default": {"storeName": "default"}},
    "join_v3": {f"0/{side}-{kind}": {"storeName": f"{side}-{kind}"} for side in ("left", "right")
                for kind in ("keyToNumValues", "keyWithIndexToValue")},
    "transform_with_state": {"0/events": {"stateVarName": "events"},
                             "0/recent_ids": {"stateVarName": "recent_ids"},
                             "0/amount_by_bucket": {"stateVarName": "amount_by_bucket"},
                             "0/timers": {"readRegisteredTimers": "true"}},
}


def _statestore(spark, path, options, batch):
    reader = spark.read.format("statestore").option("batchId", batch)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load(path)


@pytest.fixture(scope="module")
def shape_reports(spark, shape_demo):
    """workload -> (checkpoint, reports) on the small shape checkpoints."""
    out = {}
    for workload in SHAPE_READS:
        ckpt = Checkpoint(spark, shape_demo(workload).checkpoint_path)
        out[workload] = (ckpt, {r.label: r for r in inspect_state.inspect_stores(ckpt)})
    return out


@pytest.mark.parametrize("workload", sorted(SHAPE_READS))
def test_figures_of_every_shape_equal_spark(spark, shape_reports, workload):
    ckpt, reports = shape_reports[workload]
    assert set(reports) == set(SHAPE_READS[workload])
    for label, options in SHAPE_READS[workload].items():
        report = reports[label]
        counts = dict(_statestore(spark, ckpt.root, options, 2).groupBy("partition_id").count()
                      .collect())
        assert report.readable and report.rows == sum(counts.values())
        assert report.rows_per_partition == [counts.get(p, 0) for p in range(2)]


def test_transform_with_state_summary_has_one_entry_per_variable(spark, shape_reports):
    from state_runbooks.running.results import Summary
    ckpt, reports = shape_reports["transform_with_state"]
    summary = Summary("inspect_state", ckpt.root, spark.version)
    inspection = inspect_state.Inspection(list(reports.values()), None, [])
    inspect_state.summarize(summary, inspection)
    entries = {e["state_variable"]: e for e in summary.details["stores"]}
    assert set(entries) == {"events", "recent_ids", "amount_by_bucket",
                            "$procTimers_keyToTimestamp"}
    flattened = _statestore(spark, ckpt.root, {"stateVarName": "recent_ids"}, 2).count()
    assert entries["recent_ids"]["rows"] == flattened == 3 * 5  # 3 newest ids of 5 users
    events = reports["0/events"]
    assert events.expiry_rule == "ttl" and events.expiry_column == "value.ttlExpirationMs"
    batch_ms = ckpt.offsets(2).timestamp_ms
    assert events.rows_due == _statestore(spark, ckpt.root, {"stateVarName": "events"}, 2).where(
        F.col("value.ttlExpirationMs") <= batch_ms).count()
    lines = "\n".join(inspect_state.expiry_lines(list(reports.values())))
    assert "0/timers (transformWithStateInPySparkExec): 5 registered timers (processing time)" \
        in lines
    assert "list state without TTL (15 rows): kept until the processor clears it" in lines


def test_expiry_sentences_of_watermark_shapes(spark, shape_reports):
    watermark = F.timestamp_millis(F.lit(shape_reports["session_window"][0].next_watermark_ms(2)))
    ckpt, reports = shape_reports["session_window"]
    (session,) = reports.values()
    assert session.expiry_column == "value.session_window.end"
    assert session.rows_due == _statestore(spark, ckpt.root, {}, 2).where(
        F.col("value.session_window.end") <= watermark).count()
    ckpt, reports = shape_reports["dedup_within_watermark"]
    (dedup,) = reports.values()
    wm_micros = ckpt.next_watermark_ms(2) * 1000
    assert dedup.rows_due == _statestore(spark, ckpt.root, {}, 2).where(
        F.col("value.expiresAtMicros") <= wm_micros).count()
    _, join = shape_reports["join_v3"]
    lines = inspect_state.expiry_lines([session, dedup, *join.values()])
    assert not any("does not evict" in line for line in lines)
    assert "sessions have value.session_window.end <=" in lines[0]
    assert "keys have value.expiresAtMicros <=" in lines[1]
    assert "the watermark evicts the left side's rows" in lines[2]


def test_group_state_timeouts(spark, shape_reports):
    ckpt, reports = shape_reports["pandas_with_state"]
    (state,) = reports.values()
    assert state.expiry_rule == "timeout"
    assert state.rows_with_deadline == _statestore(spark, ckpt.root, {}, 2).where(
        F.col("value.timeoutTimestamp") > 0).count()
    assert ("keys have a timeout set (value.timeoutTimestamp"
            in inspect_state.expiry_lines([state])[0])


def test_limit_is_not_judged_for_skew_nor_asked_for_a_watermark(shape_reports):
    ckpt, reports = shape_reports["limit"]
    (limit,) = reports.values()
    assert limit.rows_per_partition == [1, 0] and limit.skew_ratio is None
    items = {i.details["item"]: i for i in inspect_state.production_checklist(ckpt, [limit], None)}
    assert items["Partition balance"].details["status"] == "info"
    assert "keeps its state in one partition by design" in items["Partition balance"].message
    assert items["Watermark"].details["status"] == "info"


def test_join_format_3_read_as_one_store_is_reported_not_raised(spark, shape_reports):
    ckpt, _ = shape_reports["join_v3"]
    (store,) = ckpt.stores(0)
    with pytest.raises(RunbookError) as refused:
        inspect_state.inspect_store(ckpt, store, 2)
    unit = StateUnit(0, store.operator_name, "default", None, "store", 2, (0, 1),
                                {"storeName": "default"})
    report = inspect_state.unreadable_report(ckpt, unit, 2, refused.value)
    (line,) = inspect_state.reader_lines([report], ckpt)
    assert "STDS_FAILED_TO_READ_STATE_SCHEMA: a limit of Spark's statestore reader, not damage" \
        in line
    assert "partitions 0..1, state versions 1..3" in line  # ranges written one way (id_ranges)
    items = {i.details["item"]: i for i in inspect_state.production_checklist(ckpt, [report], None)}
    assert items["State loads"].details["status"] == "info"


def test_watermark_of_batch_0_is_read_from_its_commit(spark, shape_demo):
    ckpt = Checkpoint(spark, shape_demo("session_window", batches=1).checkpoint_path)
    assert ckpt.offsets(0).watermark_ms == 0 and ckpt.next_watermark_ms(0) > 0
    items = {i.details["item"]: i for i in inspect_state.production_checklist(
        ckpt, inspect_state.inspect_stores(ckpt), None)}
    assert items["Watermark"].details["status"] == "pass" and "commits/0" in items["Watermark"].message


def test_retention_counts_batches_from_the_logs(spark, tmp_path):
    from state_runbooks.demos.checkpoints import build_demo_checkpoint
    run = build_demo_checkpoint(spark, "dedup", str(tmp_path / "c"), batches=5, rows_per_batch=4,
                                partitions=1,
                                extra_conf={"spark.sql.streaming.minBatchesToRetain": "2"})
    ckpt = Checkpoint(spark, run.checkpoint_path)
    assert ckpt.offset_batch_ids[0] > 0  # Spark purged the oldest log entries
    # The setting is not in the offsets log; the purged logs show the query's own value.
    assert "minBatchesToRetain" not in str(ckpt.pinned_conf)
    assert ckpt.retention() == (2, f"from the logs: Spark purged the entries before "
                                   f"{ckpt.offset_batch_ids[0]}")
    item = inspect_state.retention_check(ckpt)
    assert "minBatchesToRetain=2" in item.message
    oldest_state = min(f.batch_id for f in ckpt.state_files())
    # Files older than the logs are said to be on disk, never "cleaned".
    assert (item.details["status"] == "pass") == (oldest_state >= ckpt.offset_batch_ids[0]), item.message


def test_offsets_gaps_without_state_is_a_clear_error(spark, tmp_path):
    import os
    path = str(tmp_path / "stateless")
    df = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 2).load()
    for _ in range(3):
        df.writeStream.format("noop").option("checkpointLocation", path) \
            .trigger(availableNow=True).start().awaitTermination()
    os.remove(os.path.join(path, "offsets", "1"))
    with pytest.raises(RunbookError, match=r"no stateful operator.*offsets log has gaps "
                                           r"\(batches 0, 2\)"):
        Checkpoint(spark, path)


def test_checkpoint_without_operator_metadata_says_what_it_does_not_know(spark, demo_factory,
                                                                         copy_checkpoint):
    import shutil
    path = copy_checkpoint(demo_factory("dedup").checkpoint_path)
    shutil.rmtree(f"{path}/state/0/_metadata")  # as Spark 3.4 and older wrote it
    ckpt = Checkpoint(spark, path)
    (report,) = inspect_state.inspect_stores(ckpt)
    assert report.rows == read_state(ckpt, 0).count()
    assert "not one the runbooks know" not in " ".join(inspect_state.operator_lines(ckpt))
    assert "inferred from the folder layout" in " ".join(inspect_state.operator_lines(ckpt))
    assert inspect_state.expiry_lines([report]) == [
        "0/default (unknown): an operator the runbooks do not know; no expiry figure."]


@pytest.mark.parametrize("workload", tiers.tiered(  # make test: one, and 03 whole over Connect
    ["transform_with_state", "join_v3", "limit"], {"limit"}))  # in test_notebooks_on_servers.py
def test_every_shape_over_connect_equals_classic(spark, on_connect, shape_reports, workload):
    _, classic = shape_reports[workload]
    keys = ("rows", "rows_per_partition", "key_bytes", "value_bytes", "skew_ratio", "expiry_rule",
            "rows_due", "rows_with_deadline", "state_variable")
    with on_connect() as connect_spark:
        ckpt = Checkpoint(connect_spark, shape_reports[workload][0].root)
        remote = {r.label: r for r in inspect_state.inspect_stores(ckpt)}
    assert {label: [getattr(r, k) for k in keys] for label, r in remote.items()} == \
        {label: [getattr(r, k) for k in keys] for label, r in classic.items()}


@tiers.EXTENDED  # make test: 03's demo prints these lines, compared by nbval
def test_python_stateful_apis_and_where_their_expiry_lives(spark):
    """PySpark has no mapGroupsWithState; its counterparts keep expiry in their own columns, none
    called expirationMs, and Spark's memory report is not the sum of the rows' bytes."""
    presence = inspect_state.api_presence()
    assert not presence["mapGroupsWithState"] and not presence["flatMapGroupsWithState"]
    assert presence["applyInPandasWithState"] and presence["transformWithStateInPandas"]
    demos = {d.workload: d for d in inspect_state.python_state_demos(spark)}
    (group_state,) = demos["pandas_with_state"].units
    assert (group_state.expiry_rule, group_state.expiry_column) == ("timeout",
                                                                    "value.timeoutTimestamp")
    units = {u.label: u for u in demos["transform_with_state"].units}
    assert (units["0/events"].expiry_rule, units["0/events"].expiry_column) == (
        "ttl", "value.ttlExpirationMs")
    assert units["0/timers"].expiry_column == "expiration_timestamp_ms"
    lines = inspect_state.python_state_lines(list(demos.values()), presence)
    assert lines[-1] == ("No unit has a column named expirationMs: each line above says where "
                         "its expiry is.")
    for demo in demos.values():
        assert demo.memory_used_bytes != sum(u.row_bytes for u in demo.units)
