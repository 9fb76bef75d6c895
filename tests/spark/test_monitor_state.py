"""Runbook 06 (monitor state): event logs written by real queries and a live query.

The event logs come from demo queries run once per module in a child process with the event log on
(``spark.eventLog.*`` only takes effect when a SparkContext starts): rolling and single-file logs,
compressed with each codec Spark offers for event logs and uncompressed. Every figure read back must
be exactly what the query itself reported (``query.lastProgress`` of each batch).
"""
from __future__ import annotations

import json
import os
import threading
import time

import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.demos.event_logs import write_event_logs
from state_runbooks.runbooks.monitor_state import event_log, listener, verdicts
from state_runbooks.runbooks.monitor_state.history import build_history, operators_summary
from state_runbooks.session.spark_session import progress_dict

# name -> (workload, batches, codec, rolling, provider, folder); "many" holds two applications
LOGS = {
    "two_ops_zstd_rolling": ("two_operators", 6, "zstd", True, "hdfs", "many"),
    "dedup_none_single": ("dedup", 3, "none", False, "hdfs", "many"),
    "dedup_lz4_rolling": ("dedup", 3, "lz4", True, "hdfs", "lz4"),
    "dedup_snappy_single": ("dedup", 3, "snappy", False, "hdfs", "snappy"),
    "dedup_rocksdb_zstd_single": ("dedup", 4, "zstd", False, "rocksdb", "rocksdb"),
    "batch_job_zstd": ("dedup", 0, "zstd", True, "hdfs", "no-streaming"),
}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("event-logs")
    specs = [{"event_log_dir": str(root / folder), "checkpoint": str(root / "checkpoints" / name),
              "workload": workload, "batches": batches, "codec": codec, "rolling": rolling,
              "provider": provider, "partitions": 2}  # the figures are the same on any number
             for name, (workload, batches, codec, rolling, provider, folder) in LOGS.items()]
    return dict(zip(LOGS, write_event_logs(specs)))


def _ops(progress: list[dict]) -> list[list[dict]]:
    return [p["stateOperators"] for p in progress]


def _figures(progress: list[dict]) -> list[dict]:
    """What a progress reports, without its serialisation: PySpark's ``progress.json`` rounds the
    rates to one decimal, parses the offsets and leaves out empty maps and
    ``snapshotCustomMetricNames``, while the event log keeps Spark's own JSON."""
    keys = ("id", "runId", "name", "timestamp", "batchId", "batchDuration", "durationMs",
            "eventTime")
    return [{**{k: p.get(k) for k in keys},
             "numInputRows": sum(s["numInputRows"] for s in p["sources"]),
             "stateOperators": [{k: v for k, v in op.items() if k != "snapshotCustomMetricNames"}
                                for op in p["stateOperators"]]} for p in progress]


@pytest.mark.parametrize("name", [n for n in LOGS if LOGS[n][1]])
def test_every_log_kind_gives_the_query_s_own_progress(spark, logs, name):
    demo = logs[name]
    path = demo.event_log_dir if LOGS[name][5] != "many" else None
    apps = event_log.find_applications(spark, demo.event_log_dir)
    app = next(a for a in apps if a.app_id == demo.app_id)
    assert {f.codec for f in app.files} == {demo.codec}
    assert app.files[0].name.startswith("events_") == demo.rolling
    log = event_log.read_application(spark, app)
    # Every figure of every batch, exactly as query.lastProgress returned it.
    assert _figures(log.progress) == _figures(demo.progress)
    history = build_history(log.progress)
    assert history.batches_seen == LOGS[name][1]
    table = history.series("num_rows_total")
    assert table.values.tolist() == [[op["numRowsTotal"] for op in ops] for ops in _ops(demo.progress)]
    for column, field in [("num_rows_updated", "numRowsUpdated"),
                          ("memory_used_bytes", "memoryUsedBytes"),
                          ("commit_time_ms", "commitTimeMs"),
                          ("num_rows_dropped_by_watermark", "numRowsDroppedByWatermark")]:
        assert history.series(column).values.tolist() == [
            [op[field] for op in ops] for ops in _ops(demo.progress)], column
    if path:  # the folder holds this application only: the newest with progress is it
        loaded, query_id, _ = event_log.load(spark, path)
        assert loaded.app_id == demo.app_id and query_id == demo.query_id


@pytest.mark.parametrize("name", ["two_ops_zstd_rolling", "dedup_none_single",
                                  "dedup_lz4_rolling", "dedup_snappy_single"])
def test_reading_through_spark_and_file_access_matches_the_local_read(spark, logs, name):
    demo = logs[name]
    app = next(a for a in event_log.find_applications(spark, demo.event_log_dir)
               if a.app_id == demo.app_id)
    remote = event_log.read_application(spark, app, local=False)  # spark.read.text / read_bytes
    assert _figures(remote.progress) == _figures(demo.progress)
    assert remote.queries == {demo.query_id: None}
    assert remote.properties["spark.master"] == "local[2]"


def test_paths_to_one_log_a_rolling_folder_and_a_uri(spark, logs):
    rolling = logs["two_ops_zstd_rolling"]
    folder = os.path.join(rolling.event_log_dir, f"eventlog_v2_{rolling.app_id}")
    single = logs["dedup_snappy_single"]
    file = os.path.join(single.event_log_dir, f"{single.app_id}.snappy")
    for path, demo in [(folder, rolling), (f"file://{folder}", rolling), (file, single)]:
        log, query_id, apps = event_log.load(spark, path)
        assert [a.app_id for a in apps] == [demo.app_id] and query_id == demo.query_id
        assert _figures(log.progress) == _figures(demo.progress)


def test_a_folder_of_many_applications(spark, logs):
    older, newer = logs["two_ops_zstd_rolling"], logs["dedup_none_single"]
    folder = older.event_log_dir
    apps = event_log.find_applications(spark, folder)
    assert [a.app_id for a in apps] == [newer.app_id, older.app_id]  # newest first
    assert event_log.load(spark, folder)[0].app_id == newer.app_id
    assert event_log.load(spark, folder, app_id=older.app_id)[1] == older.query_id
    # The query id picks the newest application holding that query's progress.
    assert event_log.load(spark, folder, query_id=older.query_id)[0].app_id == older.app_id
    with pytest.raises(RunbookError, match=f"applications: {newer.app_id}, {older.app_id}"):
        event_log.load(spark, folder, app_id="local-0")


def test_operator_positions_follow_the_checkpoint_operator_ids(spark, logs, tmp_path):
    demo = logs["two_ops_zstd_rolling"]
    history = build_history(event_log.load(spark, demo.event_log_dir, app_id=demo.app_id)[0].progress)
    checkpoint = os.path.join(os.path.dirname(demo.event_log_dir), "checkpoints",
                              "two_ops_zstd_rolling")
    metadata = spark.read.format("state-metadata").load(checkpoint).collect()
    assert history.operator_names() == sorted((r.operatorId, r.operatorName) for r in metadata)
    summary = operators_summary(history)
    assert [o["operator_index"] for o in summary] == [0, 1]
    assert [o["num_rows_total"] for o in summary] == [
        [ops[i]["numRowsTotal"] for ops in _ops(demo.progress)] for i in (0, 1)]


def test_rocksdb_custom_metrics_and_verdicts(spark, logs):
    demo = logs["dedup_rocksdb_zstd_single"]
    log = event_log.load(spark, demo.event_log_dir)[0]
    history = build_history(log.progress, facts={**log.properties, "executors": log.executors})
    assert history.operators["rocksdbSstFileSize"].tolist() == [
        ops[0]["customMetrics"]["rocksdbSstFileSize"] for ops in _ops(demo.progress)]
    found = {v.code: v.message for v in verdicts.judge(history)}
    assert {"rocksdb_memory", "rocksdb_disk"} <= set(found)
    # Four batches of a 5 s watermark evict nothing yet: the state rises, and the verdict says
    # that a young query looks the same; no heap projection for RocksDB's native memory.
    assert "nothing was evicted in this window" in found["state_growing"]
    assert "would reach" not in found["state_growing"]


def test_bad_inputs_say_what_was_found(spark, logs, tmp_path):
    with pytest.raises(RunbookError, match="does not exist"):
        event_log.load(spark, str(tmp_path / "missing"))
    checkpoint = os.path.join(os.path.dirname(logs["dedup_lz4_rolling"].event_log_dir),
                              "checkpoints", "dedup_lz4_rolling")
    with pytest.raises(RunbookError, match=r"no Spark event log at .*: it holds commits, metadata"):
        event_log.load(spark, checkpoint)
    batch_only = logs["batch_job_zstd"]
    with pytest.raises(RunbookError, match=f"no streaming progress in .*{batch_only.app_id}: "
                                           "no streaming query"):
        event_log.load(spark, batch_only.event_log_dir)
    demo = logs["dedup_lz4_rolling"]
    with pytest.raises(RunbookError) as excinfo:
        event_log.load(spark, demo.event_log_dir, query_name="orders")
    message = str(excinfo.value)
    assert "query_name='orders'" in message and demo.query_id in message and "\n" not in message


def test_a_log_still_being_written_gives_its_complete_batches(spark, logs, tmp_path):
    demo = logs["dedup_rocksdb_zstd_single"]
    source = os.path.join(demo.event_log_dir, f"{demo.app_id}.zstd")
    data = open(source, "rb").read()
    partial = tmp_path / f"{demo.app_id}.zstd.inprogress"
    partial.write_bytes(data[: int(len(data) * 0.8)])
    log, _, _ = event_log.load(spark, str(partial))
    assert 0 < len(log.progress) <= len(demo.progress)
    assert _figures(log.progress) == _figures(demo.progress[: len(log.progress)])


# -- a query running in this session ------------------------------------------------------------------
def _start_named_query(session, name: str, checkpoint: str):
    from pyspark.sql import functions as F
    df = (session.readStream.format("rate-micro-batch").option("rowsPerBatch", 10)
          .option("startTimestamp", 1_700_000_000_000).option("advanceMillisPerBatch", 1000).load()
          .withWatermark("timestamp", "3 seconds")
          .dropDuplicates(["value", "timestamp"]).select(F.col("value")))
    return (df.writeStream.format("noop").queryName(name).option("checkpointLocation", checkpoint)
            .trigger(processingTime="500 milliseconds").start())


def _stop_after(query, batches: int) -> threading.Thread:
    """Stop the query once it has reported ``batches`` batches (from another thread): the watch
    then ends with the query, whatever the machine's speed."""
    def run():
        while query.isActive and len(query.recentProgress) < batches:
            time.sleep(0.2)
        query.stop()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _watch_and_compare(session, name: str, checkpoint: str):
    query = _start_named_query(session, name, checkpoint)
    try:
        with pytest.raises(RunbookError, match=f"active queries: {name}"):
            listener.watch(session, query_name="not-running", watch_seconds=0)
        stopper = _stop_after(query, 3)
        watched = listener.watch(session, query_name=name, watch_seconds=600)
        stopper.join(60)
        reported = {p["batchId"]: p for p in map(progress_dict, query.recentProgress)}
    finally:
        query.stop()
    assert len(watched) >= 3
    assert [p["batchId"] for p in watched] == sorted({p["batchId"] for p in watched})
    # Every watched batch's figures exactly as the query reports them.
    assert _figures(watched) == _figures([reported[p["batchId"]] for p in watched])
    return build_history(watched)


def test_watch_a_live_query(spark, tmp_path):
    history = _watch_and_compare(spark, "monitored-classic", str(tmp_path / "checkpoint"))
    assert history.query_name == "monitored-classic"
    assert history.operator_names() == [(0, "dedupe")]


def test_watch_a_live_query_on_spark_connect(on_connect, tmp_path):
    with on_connect() as connect_spark:
        history = _watch_and_compare(connect_spark, "monitored-connect",
                                     str(tmp_path / "checkpoint"))
    assert history.operator_names() == [(0, "dedupe")]


# -- the notebook on a log it has never seen ---------------------------------------------------------
@pytest.mark.slow
@pytest.mark.notebook
def test_notebook_on_an_lz4_event_log(logs, run_notebook, tmp_path):
    demo = logs["dedup_lz4_rolling"]
    result = run_notebook("06_monitor_state", event_log_path=demo.event_log_dir,
                          summary_path=str(tmp_path / "summary.json"), fail_on="critical")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary == result.records["summary"]
    assert summary["runbook"] == "monitor_state" and summary["batches_seen"] == 3
    assert summary["source"] == {"kind": "event_log", "path": demo.event_log_dir,
                                 "app_id": demo.app_id}
    assert summary["operators"][0]["operator_name"] == "dedupe"
    assert summary["operators"][0]["num_rows_total"] == [
        ops[0]["numRowsTotal"] for ops in _ops(demo.progress)]


@pytest.mark.parametrize("name", ["two_ops_zstd_rolling", "dedup_lz4_rolling"])
def test_event_logs_on_spark_connect(on_connect, logs, name):
    """On Connect the server reads the log: zstd through spark.read.text, lz4 through binaryFile."""
    demo = logs[name]
    with on_connect() as connect_spark:
        log, query_id, _ = event_log.load(connect_spark, demo.event_log_dir, app_id=demo.app_id)
    assert query_id == demo.query_id
    assert _figures(log.progress) == _figures(demo.progress)
