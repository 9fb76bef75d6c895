"""Runbook 02 (estimate state size) on Spark: the object sizes against Spark's SizeEstimator on the
running JVM, the measurement against the state itself, the accuracy target against the
memoryUsedBytes real queries report, and the notebook under papermill.

The measured errors print with ``pytest -s``; ``make bench`` sweeps 10,000 to 1,000,000 rows.
"""
from __future__ import annotations

import dataclasses
from functools import reduce

import papermill
import pytest
import tiers
from pyspark.sql import functions as F

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.state_reader import read_state
from state_runbooks.runbooks import estimate_state_size as sizing


# -- the object sizes, against the running JVM ---------------------------------------------------
def test_object_sizes_match_size_estimator(spark):
    jvm, gateway = spark._jvm, spark.sparkContext._gateway
    estimate = jvm.org.apache.spark.util.SizeEstimator.estimate
    state = jvm.org.apache.spark.sql.execution.streaming.state
    layout = sizing.COMPRESSED_OOPS

    def row(fields, size):
        r = jvm.org.apache.spark.sql.catalyst.expressions.UnsafeRow(fields)
        r.pointTo(gateway.new_array(jvm.byte, size), size)
        return r

    assert estimate(row(2, 32)) == layout.key_overhead + 32 == 88
    assert estimate(state.StateStoreRow(row(1, 16))) == layout.value_overhead() + 16 == 88
    assert estimate(state.StateStoreRowWithChecksum(row(1, 16), 7)) == (
        layout.value_overhead(checksum=True) + 16)
    # One entry in Spark's own state map: node + key + value + a first table of 16 slots.
    schema = jvm.org.apache.spark.sql.types.DataType.fromJson(
        '{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{}}]}')
    empty = state.HDFSBackedStateStoreMap.create(schema, 0, jvm.scala.Option.empty())
    one = state.HDFSBackedStateStoreMap.create(schema, 0, jvm.scala.Option.empty())
    one.put(row(1, 16), state.StateStoreRow(row(1, 16)))
    assert estimate(one) - estimate(empty) == (layout.map_node + layout.key_overhead + 16
                                               + layout.value_overhead() + 16
                                               + layout.reference_array(16))
    # The versions' TreeMap (reverse order, as in the provider) with one empty version: the fixed
    # parts. A version number above 2^31 travels to the JVM as a Long.
    long_ordering = jvm.java.lang.Class.forName("scala.math.Ordering$Long$").getField(
        "MODULE$").get(None)
    versions = jvm.java.util.TreeMap(long_ordering.reverse())
    versions.put(2 ** 31 + 1, empty)
    assert estimate(versions) == layout.fixed_per_store + layout.fixed_per_version


def test_hash_table_lengths_match_the_jvm(spark):
    """A map filled by put and one started with putAll of it (how each batch copies the previous
    version) have the table lengths the model gives them, on this JVM."""
    jvm = spark._jvm
    table = jvm.java.lang.Class.forName("java.util.concurrent.ConcurrentHashMap").getDeclaredField(
        "table")
    table.setAccessible(True)
    for n in (100, 1000, 3000):
        filled = jvm.java.util.concurrent.ConcurrentHashMap()
        for i in range(n):
            filled.put(i, i)
        copied = jvm.java.util.concurrent.ConcurrentHashMap()
        copied.putAll(filled)
        assert len(table.get(filled)) == sizing.filled_capacity(n)
        assert len(table.get(copied)) == sizing.copied_capacity(n, n)


# -- real queries: measurement and accuracy --------------------------------------------------------
def _demo(demo_factory, workload, rows):
    rows_per_batch, batches = sizing.demo_run_for_rows(workload, rows)
    return demo_factory(workload, batches=batches, rows_per_batch=rows_per_batch)


_MEASURED: dict = {}


def _measure(spark, run):
    """The estimate of a demo checkpoint (restarted for every batch, as the demo runs), once."""
    if run.checkpoint_path not in _MEASURED:
        _MEASURED[run.checkpoint_path] = sizing.measure_stores(
            Checkpoint(spark, run.checkpoint_path), restarted_each_batch=True)
    return _MEASURED[run.checkpoint_path]


def test_measured_rows_and_bytes_equal_the_state(spark, demo_factory):
    run = _demo(demo_factory, "join", 10_000)
    ckpt = Checkpoint(spark, run.checkpoint_path)
    measurements = _measure(spark, run)
    assert [m.store_name for m in measurements] == [s.store_name for s in ckpt.stores()]
    # Rows per store and partition, counted independently in one job over the four stores.
    states = [read_state(ckpt, m.operator_id, m.store_name).select(
        F.lit(m.store_name).alias("store"), "partition_id") for m in measurements]
    counted = reduce(lambda a, b: a.unionByName(b), states).groupBy("store", "partition_id").count()
    counts = {(r["store"], r["partition_id"]): r["count"] for r in counted.collect()}
    for m in measurements:
        expected = [counts.get((m.store_name, p), 0) for p in range(m.num_partitions)]
        assert m.rows_per_partition == expected and m.rows == sum(expected) == m.estimate.rows
        assert sum(m.payload_bytes_per_partition) == m.key_bytes + m.value_bytes
        assert m.churn_source == "change feed"
        assert [p.rows for p in m.partitions] == m.rows_per_partition
    # Spark's numRowsTotal for a join counts its keyWithIndexToValue stores.
    assert sum(m.rows for m in measurements if m.store_name.endswith("keyWithIndexToValue")) == \
        sizing.reported(run.progress[-1])["num_rows_total"]


# make test: 02's demo asserts the same bounds on every compared workload (nbval); make bench:
# every workload up to 1,000,000 rows.
@pytest.mark.slow
@tiers.EXTENDED
@pytest.mark.parametrize("workload,rows", [
    ("dedup", 10_000), ("window_agg_many_users", 10_000), ("join", 10_000), ("dedup", 100_000),
    ("join", 100_000)])
def test_accuracy_target_against_memory_used_bytes(spark, demo_factory, workload, rows):
    run = _demo(demo_factory, workload, rows)
    comparison = sizing.compare(spark, run, _measure(spark, run))
    sigmas = (comparison.estimated_bytes - comparison.reported_bytes) / comparison.estimated_sd
    print(f"\n{workload} at {comparison.rows:,} rows: estimate "
          f"{comparison.estimated_bytes:,.0f} B, "
          f"memoryUsedBytes {comparison.reported_bytes:,} B, error {comparison.error:+.1%} "
          f"({sigmas:+.1f} sd); rule of thumb x1.5 {comparison.rule_of_thumb_bytes:,.0f} B")
    assert 0.5 * rows <= comparison.rows <= 1.5 * rows  # the demo's size, roughly
    assert abs(comparison.error) <= sizing.ACCURACY_TARGET
    assert comparison.reported_bytes > 3 * comparison.rule_of_thumb_bytes


@pytest.mark.slow
def test_continuous_query_counts_shared_rows_once(spark, tmp_path):
    """One query running batch after batch: both kept versions are copies with tables of the same
    length, so memoryUsedBytes counts the rows they share once, and the estimate follows; the same
    state modelled as restarted for every batch (tables of different lengths) reads far higher."""
    import time

    from state_runbooks.demos.checkpoints import demo_query, provider_conf
    from state_runbooks.session.spark_session import session_conf

    path = str(tmp_path / "continuous")
    conf = {"spark.sql.shuffle.partitions": "8",
            "spark.sql.streaming.noDataMicroBatches.enabled": "false", **provider_conf("hdfs")}
    with session_conf(spark, conf):
        query = (demo_query(spark, "dedup", 8000).writeStream.format("noop").outputMode("append")
                 .option("checkpointLocation", path).start())
        while not (query.lastProgress and query.lastProgress["batchId"] >= 8):
            time.sleep(0.2)
        query.stop()
    progress = query.lastProgress
    reported = sizing.reported(progress)["memory_used_bytes"]
    ckpt = Checkpoint(spark, path)
    measurements = sizing.measure_stores(ckpt, progress["batchId"])
    assert all(p.old_capacity == p.new_capacity for p in measurements[0].partitions)
    continuous = sizing.measured_totals(measurements)
    restarted = sizing.measured_totals(
        sizing.measure_stores(ckpt, progress["batchId"], restarted_each_batch=True))
    error = continuous.reported_bytes / reported - 1
    print(f"\ncontinuous deduplication at {continuous.rows:,} rows, batch {progress['batchId']}: "
          f"estimate {continuous.reported_bytes:,.0f} B, memoryUsedBytes {reported:,} B, error "
          f"{error:+.1%}; modelled as restarted: {restarted.reported_bytes / reported - 1:+.1%}")
    assert continuous.rows == 24_000
    assert abs(error) <= sizing.ACCURACY_TARGET
    assert restarted.reported_bytes > 1.4 * reported  # shared rows counted twice
    assert reported < continuous.heap_bytes  # once: SizeEstimator's sampling reads low


def _measured_both_ways(ckpt, monkeypatch, earlier_rows_source: str):
    """The newest batch's single store measured with its earlier rows from ``earlier_rows_source``,
    checked equal to the measurement that reads the state at those batches and, independently, to
    Spark's count per partition of the batch before and its count of the two batches before (which
    the growth table reuses); returns the first measurement."""
    from state_runbooks.core import growth as state_growth
    from state_runbooks.runbooks.estimate_state_size import measurement

    measured = sizing.measure_checkpoint(ckpt)
    (m,) = measured.stores
    assert m.earlier_rows_source == earlier_rows_source
    monkeypatch.setattr(measurement, "EARLIER_ROWS_FROM_CHANGES", False)
    read_back = sizing.measure_checkpoint(ckpt)
    (read,) = read_back.stores
    assert read.earlier_rows_source == "state"
    assert m.partitions == read.partitions and m.estimate == read.estimate
    batch = ckpt.last_committed_batch_id
    counted = read_state(ckpt, 0, batch_id=batch - 1).groupBy("partition_id").count().collect()
    before = {r["partition_id"]: r["count"] for r in counted}
    assert [p.old_rows for p in m.partitions] == [before.get(p, 0)
                                                  for p in range(len(m.partitions))]
    assert measured.earlier_rows == read_back.earlier_rows == {
        (m.label, b): read_state(ckpt, 0, batch_id=b).count() for b in (batch - 1, batch - 2)}
    assert sizing.growth(ckpt, measured).equals(state_growth.growth(ckpt))
    return m


def test_a_deduplication_s_earlier_rows_come_from_its_change_feed(spark, tmp_path, monkeypatch):
    """A deduplication puts only keys it does not hold and removes only keys it holds: the rows
    of the two batches before, per partition, follow from the change feed alone, and the
    measurement equals the one that reads the state at those batches (the watermark evicting:
    4 s of event time per batch behind a 5 s delay; duplicates within and across batches)."""
    from state_runbooks.core.state_reader import read_state_changes
    from state_runbooks.demos.checkpoints import provider_conf
    from state_runbooks.runbooks.estimate_state_size import measurement
    from state_runbooks.session.spark_session import session_conf

    path = str(tmp_path / "dedup")
    events = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 12)
              .option("numPartitions", 2).option("startTimestamp", 1_700_000_000_000)
              .option("advanceMillisPerBatch", 4000).load()
              .select((F.col("value") % 9).alias("id"), "timestamp")
              .withWatermark("timestamp", "5 seconds").dropDuplicates(["id", "timestamp"]))
    conf = {"spark.sql.shuffle.partitions": "3",
            "spark.sql.streaming.noDataMicroBatches.enabled": "false",
            **provider_conf("rocksdb_changelog")}  # the production shape's (HDFS: the next test)
    dropped = []
    with session_conf(spark, conf):
        for _ in range(4):
            query = (events.writeStream.format("noop").option("checkpointLocation", path)
                     .trigger(availableNow=True).start())
            query.awaitTermination()
            dropped.append(query.lastProgress["stateOperators"][0]["customMetrics"]
                           ["numDroppedDuplicateRows"])
    ckpt = Checkpoint(spark, path)
    m = _measured_both_ways(ckpt, monkeypatch, "change feed")
    assert m.churn_source == "change feed"
    assert any(p.removed for p in m.partitions) and any(p.inserted for p in m.partitions)
    # Its changes are counted line by line: Spark's feed holds each key at most once per batch
    # and kind, though every batch repeats keys.
    assert all(n > 0 for n in dropped), dropped
    feed = read_state_changes(ckpt, 0, "default", 0, ckpt.last_committed_batch_id)
    assert feed.groupBy("batch_id", "key", "change_type").count().where("count > 1").count() == 0
    # Were the feed not to add up, the rows are read and the changes counted again, by key.
    monkeypatch.undo()
    monkeypatch.setattr(measurement, "_rows_before_from_changes", lambda *args: False)
    (recounted,) = sizing.measure_stores(ckpt)
    assert recounted.earlier_rows_source == "state" and recounted.partitions == m.partitions


def test_earlier_rows_replayed_from_two_batches_back_equal_the_state(spark, demo_factory,
                                                                     monkeypatch):
    """An aggregation updates keys it holds: the rows of the batch before come from the state two
    batches back replayed through the change feed of the batch between, and the measurement equals
    the one that reads the state at both batches."""
    from state_runbooks.runbooks.estimate_state_size import measurement

    run = demo_factory("window_agg")
    ckpt = Checkpoint(spark, run.checkpoint_path)
    (m,) = sizing.measure_stores(ckpt)
    monkeypatch.setattr(measurement, "EARLIER_ROWS_FROM_CHANGES", False)
    (read,) = sizing.measure_stores(ckpt)
    assert (m.earlier_rows_source, read.earlier_rows_source) == ("state and change feed", "state")
    assert m.partitions == read.partitions and m.estimate == read.estimate
    assert any(p.replaced for p in m.partitions)  # keys it held, updated


def test_replayed_rows_with_keys_put_updated_and_evicted_equal_the_state(spark, tmp_path,
                                                                        monkeypatch):
    """A windowed count on RocksDB with changelog checkpointing (the production shape's
    provider): 4 s windows, 2 s of event time per batch and a 1 s watermark, so each window is
    put, updated a batch later and evicted by the watermark. The batch replayed (the one before
    the newest) both puts new keys and removes evicted ones; the rows of the two batches before,
    per partition, equal the measurement that reads them (and Spark's own count of the batch
    before)."""
    from state_runbooks.core.state_reader import read_state_changes
    from state_runbooks.demos.checkpoints import provider_conf
    from state_runbooks.session.spark_session import session_conf

    path = str(tmp_path / "window")
    counts = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 12)
              .option("numPartitions", 2).option("startTimestamp", 1_700_000_000_000)
              .option("advanceMillisPerBatch", 2000).load()
              .withWatermark("timestamp", "1 second")
              .groupBy(F.window("timestamp", "4 seconds"), (F.col("value") % 5).alias("user"))
              .count())
    conf = {"spark.sql.shuffle.partitions": "3",
            "spark.sql.streaming.noDataMicroBatches.enabled": "false",
            **provider_conf("rocksdb_changelog")}
    with session_conf(spark, conf):
        for _ in range(6):
            (counts.writeStream.format("noop").outputMode("append")
             .option("checkpointLocation", path).trigger(availableNow=True).start()
             .awaitTermination())
    ckpt = Checkpoint(spark, path)
    batch = ckpt.last_committed_batch_id
    between = {r["change_type"] for r in read_state_changes(ckpt, 0, "default", batch - 1,
                                                            batch - 1).collect()}
    assert between == {"update", "delete"}  # keys put and keys evicted in the batch replayed
    from state_runbooks.runbooks.estimate_state_size import measurement

    monkeypatch.setattr(measurement, "MAX_BROADCAST_KEYS", 0)  # changed keys joined by a shuffle
    (shuffled,) = sizing.measure_stores(ckpt)
    monkeypatch.undo()
    m = _measured_both_ways(ckpt, monkeypatch, "state and change feed")
    assert any(p.replaced for p in m.partitions)  # keys it held, updated
    assert shuffled.partitions == m.partitions


def test_rocksdb_checkpoint_without_change_feed(spark, demo_factory):
    run = demo_factory("dedup", "rocksdb")
    ckpt = Checkpoint(spark, run.checkpoint_path)
    (m,) = sizing.measure_stores(ckpt)
    assert m.churn_source == "state at both batches"
    assert m.rows == read_state(ckpt, 0).count() == run.last_state_operators[0]["numRowsTotal"]
    comparison = sizing.compare(spark, run, [m])
    assert comparison.error is None and comparison.rocksdb_sst_bytes is not None
    lines = sizing.estimate_lines([m], False, ckpt.provider_kind)
    assert lines[0].startswith("This checkpoint's provider is rocksdb: the figures below are what")


def test_a_unit_the_reader_refuses_is_reported_not_measured(spark, demo_factory):
    """A unit Spark's reader refuses is set aside with the reader's error, and the summary says so.
    (Every shape the reader takes is measured in the checkpoint corpus:
    test_checkpoint_corpus.py, test_02_measures_every_unit.)"""
    from state_runbooks.core import store_scan
    from state_runbooks.running.results import Summary
    v3 = Checkpoint(spark, demo_factory("join_v3", "rocksdb", batches=3).checkpoint_path)
    unit = store_scan.inspect_stores(v3, top_keys=0)[0]
    refused = dataclasses.replace(unit, rows=None, reader_error="[STDS_X] refused",
                                  reader_error_class="STDS_X")
    only_refused = sizing.CheckpointMeasurement(2, [], [refused])
    (line,) = only_refused.lines()
    assert line.startswith("0/left-keyToNumValues (symmetricHashJoin): not measured, Spark's "
                           "statestore reader refused it (STDS_X)")
    assert sizing.growth(v3, only_refused).empty
    assert sizing.project(sizing.growth(v3, only_refused), [], 10).rows == 0
    out = Summary("estimate_state_size", v3.root, spark.version)
    sizing.summarize(out, sizing.Sizing(None, only_refused, True, None, None))
    assert [f.code for f in out.findings] == ["stores_not_measured"]
    assert store_scan.StoreReport.summary(refused)["reader_error_class"] == "STDS_X"


def test_the_same_figures_over_connect(spark, demo_factory, on_connect):
    path = demo_factory("dedup").checkpoint_path
    classic = sizing.measured_summary(
        sizing.measure_stores(Checkpoint(spark, path), restarted_each_batch=True), True)
    with on_connect() as connect:
        over = sizing.measured_summary(
            sizing.measure_stores(Checkpoint(connect, path), restarted_each_batch=True), True)
    assert over == classic


# -- the notebook under papermill ------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.notebook
def test_notebook_on_a_given_checkpoint_with_a_larger_plan(spark, demo_factory, run_notebook):
    run = _demo(demo_factory, "dedup", 10_000)
    result = run_notebook("02_estimate_state_size", checkpoint_path=run.checkpoint_path,
                          input_rows_per_second=10_000.0, watermark_seconds=600.0,
                          trigger_seconds=10.0, key_bytes=64, num_partitions=200,
                          horizon_batches=50, restarted_each_batch=True)
    summary = result.summary
    assert summary["runbook"] == "estimate_state_size" and summary["status"] == "ok"
    napkin = summary["napkin"]
    assert napkin["rows"] == 6_100_000 and napkin["recommended_provider"] == "rocksdb"
    assert [f["code"] for f in summary["findings"]] == ["napkin_provider"]
    measured = summary["measured"]
    assert measured["rows"] == 10_000 == read_state(Checkpoint(spark, run.checkpoint_path)).count()
    assert measured["restarted_each_batch"] is True
    assert set(measured) >= {"rows", "payload_bytes", "estimated_memory_bytes", "disk_bytes",
                             "per_store"}
    expected = _measure(spark, run)
    assert measured["estimated_memory_bytes"] == round(expected[0].estimate.reported_bytes)
    assert summary["reported_memory_bytes"] is None and "comparison" not in summary
    assert summary["projection"]["horizon_batches"] == 50
    assert summary["projection"]["growth_rows_per_batch"] > 0  # two batches: still growing


@pytest.mark.slow
@pytest.mark.notebook
def test_notebook_rejects_bad_napkin_inputs_before_starting_spark(run_notebook):
    with pytest.raises(papermill.PapermillExecutionError) as excinfo:
        run_notebook("02_estimate_state_size", input_rows_per_second=-100.0, num_partitions=0)
    assert excinfo.value.ename == "RunbookError"
    assert "input_rows_per_second=-100.0 is negative" in excinfo.value.evalue
    assert "\n" not in excinfo.value.evalue


@tiers.EXTENDED  # make test: the checkpoint corpus's 02 test names each variable
def test_each_state_variable_is_its_own_entry_in_the_summary(spark, shape_demo):
    """transformWithState keeps its variables in one store: the summary names each variable."""
    from state_runbooks.runbooks.estimate_state_size.report import measured_summary
    ckpt = Checkpoint(spark, shape_demo("transform_with_state").checkpoint_path)
    measured = sizing.measure_checkpoint(ckpt)
    entries = measured_summary(measured.stores, False)["per_store"]
    units = [e["unit"] for e in entries]
    assert len(units) == len(set(units)) > 1, units
    assert all(e.get("state_variable") for e in entries
               if e["unit"] != f"{e['operator_id']}/default")


def _rows_by_identity(ckpt, unit, batch):
    """{(partition, identity): sorted values} of a unit at a batch, collected (the test's own
    count, independent of the library's Spark job)."""
    df = read_state(ckpt, unit.operator_id, unit.store_name, batch, unit.state_variable)
    ident = [c for c in ("key", "user_map_key", "expiration_timestamp_ms") if c in df.columns]
    values = [c for c in df.columns if c not in ident and c != "partition_id"]
    out = {}
    for row in df.collect():
        k = (row["partition_id"], tuple(str(row[c]) for c in ident))
        out.setdefault(k, []).append(tuple(str(row[c]) for c in values))
    return {k: sorted(v) for k, v in out.items()}


def test_churn_of_state_variables_is_what_the_batch_changed(spark, shape_demo):
    """A batch that rewrites every active user's variables leaves row counts unchanged: the churn
    comes from the state at both batches, and equals a key-by-key comparison made here."""
    from state_runbooks.core.operators import state_units
    ckpt = Checkpoint(spark, shape_demo("transform_with_state").checkpoint_path)
    batch = ckpt.last_committed_batch_id
    measured = {m.label: m for m in sizing.measure_checkpoint(ckpt).stores}
    for unit in state_units(ckpt):
        old, new = (_rows_by_identity(ckpt, unit, b) for b in (batch - 1, batch))
        inserted = sum(len(v) for k, v in new.items() if k not in old)
        removed = sum(len(v) for k, v in old.items() if k not in new)
        changed = [(old[k], v) for k, v in new.items() if k in old and old[k] != v]
        replaced = sum(min(len(a), len(b)) for a, b in changed)
        inserted += sum(max(0, len(b) - len(a)) for a, b in changed)
        removed += sum(max(0, len(a) - len(b)) for a, b in changed)
        m = measured[unit.label]
        assert m.churn_source == "state at both batches"
        got = [sum(getattr(p, f) for p in m.partitions) for f in ("inserted", "removed",
                                                                  "replaced")]
        assert got == [inserted, removed, replaced], unit.label
    # The batch rewrote the count of each active user: replaced, not "0 changed".
    events = measured["0/events"]
    assert sum(p.replaced for p in events.partitions) > 0


@pytest.mark.parametrize("workload", ["limit", "session_window"])
def test_memory_estimate_of_a_global_limit_and_session_windows(spark, demo_factory, workload):
    """A global limit keeps its state in partition 0 only: the partitions without files hold no
    memory. Session windows keep a second map per version (session key -> its sessions), counted
    apart. Both estimates are within the accuracy target of Spark's memoryUsedBytes."""
    run = demo_factory(workload, "hdfs", batches=6, rows_per_batch=40, partitions=2)
    comparison = sizing.compare(spark, run)
    (m,) = sizing.measure_stores(Checkpoint(spark, run.checkpoint_path), restarted_each_batch=True)
    assert abs(comparison.error) <= sizing.ACCURACY_TARGET, comparison
    assert not m.lower_bound
    assert (m.estimate.index_bytes > 0) == (workload == "session_window")
