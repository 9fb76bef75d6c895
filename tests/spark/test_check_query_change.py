"""08 check query change, on real queries: for each operator shape a compatible change, one Spark
rejects and one setting Spark overrides, each predicted (Spark's own check) and rehearsed (the
changed query restarted for one batch on a copy); the prediction must agree with the rehearsal,
and the original checkpoint's files must hash the same before and after every check."""
from __future__ import annotations

import json
import textwrap

import pytest
import tiers

from state_runbooks.common.errors import RunbookError
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs import tree_checksums
from state_runbooks.runbooks import check_query_change as qc
from state_runbooks.runbooks.check_query_change.plan_text import explain_text, plan_facts
from state_runbooks.query.rehearsal import plan_copy

KEY = "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"
VALUE = "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE"

# One job file per shape: ``same`` is the query that wrote the checkpoint; the others change it.
JOBS = {
    "window_agg": """
        from pyspark.sql import functions as F
        from state_runbooks.demos.checkpoints import _events, _rate, demo_query

        def same(spark):
            return demo_query(spark, "window_agg", 10)

        def compatible(spark):  # a filter before the aggregation: the state is the same
            return (_events(spark, 10).where("amount >= 0")
                    .groupBy(F.window("event_time", "3 seconds"), "user_id")
                    .agg(F.count("*").alias("events"), F.sum("amount").alias("amount"))
                    .writeStream.outputMode("update"))

        def rejected(spark):  # a grouping key of another type
            return (_events(spark, 10)
                    .groupBy(F.window("event_time", "3 seconds"),
                             F.length("user_id").alias("user_id"))
                    .agg(F.count("*").alias("events"), F.sum("amount").alias("amount")))

        def ignored(spark):
            spark.conf.set("spark.sql.shuffle.partitions", "5")
            return demo_query(spark, "window_agg", 10)

        def no_aggregation(spark):  # the stateful operator removed
            return _events(spark, 10).writeStream.outputMode("append")

        def longer_watermark(spark):  # the state's schemas carry the delay only as metadata
            events = _rate(spark, 10).select(
                F.concat(F.lit("user-"), (F.col("value") % 5).cast("string")).alias("user_id"),
                (F.col("value") % 100).cast("double").alias("amount"),
                F.col("timestamp").alias("event_time"))
            return (events.withWatermark("event_time", "10 seconds")
                    .groupBy(F.window("event_time", "3 seconds"), "user_id")
                    .agg(F.count("*").alias("events"), F.sum("amount").alias("amount")))

        def renamed_key(spark):  # the same types under another name
            return (_events(spark, 10).withColumnRenamed("user_id", "user")
                    .groupBy(F.window("event_time", "3 seconds"), "user")
                    .agg(F.count("*").alias("events"), F.sum("amount").alias("amount")))
    """,
    "dedup": """
        from state_runbooks.demos.checkpoints import _events, demo_query

        def same(spark):
            return demo_query(spark, "dedup", 10)

        def compatible(spark):  # a projection after the deduplication
            return demo_query(spark, "dedup", 10).select("event_id", "user_id")

        def rejected(spark):  # deduplicated on fewer columns: another key
            return _events(spark, 10).dropDuplicates(["event_id"])

        def ignored(spark):
            spark.conf.set("spark.sql.streaming.stateStore.providerClass",
                           "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
            return demo_query(spark, "dedup", 10)
    """,
    "join": """
        from pyspark.sql import functions as F
        from state_runbooks.demos.checkpoints import _join, demo_query

        def same(spark):
            return demo_query(spark, "join", 10)

        def compatible(spark):  # a column computed after the join
            return demo_query(spark, "join", 10).withColumn("total",
                                                            F.expr("amount + payment_amount"))

        def fewer_columns(spark):  # Spark prunes them below the join: each side's value changes
            return demo_query(spark, "join", 10).select("order_id", "payment_id")

        def rejected(spark):  # joined on (order_id, customer_id): another key
            return _join(spark, 10, composite=True)

        def ignored(spark):
            spark.conf.set("spark.sql.streaming.join.stateFormatVersion", "1")
            return demo_query(spark, "join", 10)
    """,
    "session_window": """
        from pyspark.sql import functions as F
        from state_runbooks.demos.checkpoints import SESSION_GAP_SECONDS, _users, demo_query

        def same(spark):
            return demo_query(spark, "session_window", 10)

        def compatible(spark):
            return demo_query(spark, "session_window", 10).where("events > 0")

        def rejected(spark):  # another aggregate: the state's value changes
            events = _users(spark, 10).where((F.col("second") + F.col("user")) % 4 < 2)
            return (events.groupBy(F.session_window("event_time", f"{SESSION_GAP_SECONDS} seconds"),
                                   "user_id")
                    .agg(F.count("*").alias("events"), F.sum("amount").alias("amount")))

        def ignored(spark):
            spark.conf.set("spark.sql.shuffle.partitions", "5")
            return demo_query(spark, "session_window", 10)
    """,
    "pandas_with_state": """
        import pandas as pd
        from pyspark.sql.streaming.state import GroupStateTimeout
        from state_runbooks.demos.checkpoints import _idle_users, demo_query

        def same(spark):
            return demo_query(spark, "pandas_with_state", 10)

        def compatible(spark):
            return demo_query(spark, "pandas_with_state", 10).where("events >= 0")

        def _count_and_newest(key, frames, state):
            count = state.get[0] if state.exists else 0
            newest = 0
            for frame in frames:
                count += len(frame)
                newest = max(newest, int(frame["event_time"].max().timestamp() * 1000))
            state.update((count, newest))
            state.setTimeoutTimestamp(newest + 3000)
            yield pd.DataFrame({"user_id": [key[0]], "events": [count], "expired": [False]})

        def rejected(spark):  # the state gains a field
            return (_idle_users(spark, 10).select("user_id", "event_time").groupBy("user_id")
                    .applyInPandasWithState(_count_and_newest,
                                            "user_id string, events long, expired boolean",
                                            "events long, newest long", "append",
                                            GroupStateTimeout.EventTimeTimeout))

        def ignored(spark):
            spark.conf.set("spark.sql.shuffle.partitions", "5")
            return demo_query(spark, "pandas_with_state", 10)
    """,
    "transform_with_state": """
        from state_runbooks.demos.checkpoints import _idle_users, demo_query
        from state_runbooks.demos.processor import TTL_MS, UserActivity

        def same(spark):
            return demo_query(spark, "transform_with_state", 10)

        def compatible(spark):
            return demo_query(spark, "transform_with_state", 10).where("events >= 0")

        class CountAsInt(UserActivity):
            def init(self, handle):
                self.handle = handle
                self.events = handle.getValueState("events", "count int", TTL_MS)
                self.recent = handle.getListState("recent_ids", "event_id string")
                self.buckets = handle.getMapState("amount_by_bucket", "bucket int", "events long")

        def rejected(spark):  # a state variable's type changes
            return (_idle_users(spark, 10).select("user_id", "event_id", "amount", "event_time")
                    .groupBy("user_id")
                    .transformWithState(CountAsInt(), "user_id string, events long", "Append",
                                        "ProcessingTime"))

        def ignored(spark):
            spark.conf.set("spark.sql.shuffle.partitions", "5")
            return demo_query(spark, "transform_with_state", 10)
    """,
}
IGNORED_KEY = {"dedup": "spark.sql.streaming.stateStore.providerClass",
               "join": "spark.sql.streaming.join.stateFormatVersion"}
REJECTED_CLASS = {"window_agg": KEY, "dedup": KEY, "join": KEY}


@pytest.fixture(scope="module")
def job_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jobs")
    paths = {}
    for shape, source in JOBS.items():
        paths[shape] = folder / f"{shape}_job.py"
        paths[shape].write_text(textwrap.dedent(source))
    return paths


def rows_agree_with_the_verdict(check) -> None:
    """No row contradicts the verdict: it fails where a row fails, restarts where none fails
    or is undecided, and is unknown otherwise."""
    grades = {r.verdict for r in check.comparison.rows}
    if check.restart == "fails":
        assert "fails" in grades
    elif check.restart == "restarts":
        assert not grades & {"fails", "unknown"} and not check.verdict.not_checked
    else:
        assert "fails" not in grades and ("unknown" in grades or check.verdict.not_checked)


def _check(spark, shape_demo, job_files, shape, function):
    demo = shape_demo(shape)
    ckpt = Checkpoint(spark, demo.checkpoint_path)
    before = tree_checksums(spark, ckpt.root)
    job = qc.load_job(spark, str(job_files[shape]), function)
    check = qc.check_query_change(spark, ckpt, job)
    assert tree_checksums(spark, ckpt.root) == before, "the checkpoint changed"
    assert check.rehearsal.removed
    # Spark's own check predicted what the restart did; every check ran.
    assert check.probe.available and check.probe.new_known
    assert check.rehearsed, check.rehearsal.note
    assert check.disagreement is None
    assert check.prediction == (check.rehearsal.restart, check.rehearsal.error_class)
    assert check.verdict.not_checked == []
    rows_agree_with_the_verdict(check)
    return check


def _judge(spark, shape_demo, job_files, shape):
    same = _check(spark, shape_demo, job_files, shape, "same")
    assert (same.status, same.restart, same.ignored_settings) == ("ok", "restarts", [])
    assert all(r.verdict in ("same", "accepted") for r in same.comparison.rows)
    compatible = _check(spark, shape_demo, job_files, shape, "compatible")
    assert (compatible.restart, compatible.error_class) == ("restarts", None)
    rejected = _check(spark, shape_demo, job_files, shape, "rejected")
    assert rejected.restart == "fails" and rejected.status == "critical"
    if shape in REJECTED_CLASS:
        assert rejected.error_class == REJECTED_CLASS[shape]
    ignored = _check(spark, shape_demo, job_files, shape, "ignored")
    key = IGNORED_KEY.get(shape, "spark.sql.shuffle.partitions")
    assert (ignored.restart, ignored.status, ignored.ignored_settings) == (
        "restarts", "warning", [key])
    if key == "spark.sql.shuffle.partitions":  # the restart ran on the pinned count, not 5
        assert ignored.rehearsal.shuffle_partitions == [2]
    return {"compatible": compatible, "rejected": rejected, "ignored": ignored}


@pytest.mark.parametrize("shape", ["window_agg", "dedup", "join"])
def test_prediction_agrees_with_the_restart(spark, shape_demo, job_files, shape):
    _judge(spark, shape_demo, job_files, shape)


@pytest.mark.slow
@pytest.mark.parametrize("shape", tiers.tiered(  # make test: one of them
    ["session_window", "pandas_with_state", "transform_with_state"], {"session_window"}))
def test_prediction_agrees_with_the_restart_of_more_shapes(spark, shape_demo, job_files, shape):
    _judge(spark, shape_demo, job_files, shape)


def test_columns_dropped_after_a_join_change_its_state_value(spark, shape_demo, job_files):
    check = _check(spark, shape_demo, job_files, "join", "fewer_columns")
    assert (check.restart, check.error_class) == ("fails", VALUE)


def test_removing_the_stateful_operator_fails_on_its_own_row(spark, shape_demo, job_files):
    check = _check(spark, shape_demo, job_files, "window_agg", "no_aggregation")
    row = next(r for r in check.comparison.rows if r.aspect == "stateful operators")
    assert (check.restart, check.error_class) == ("fails", qc.compare.OPERATOR_NOT_MATCH)
    assert (row.verdict, row.error_class) == ("fails", qc.compare.OPERATOR_NOT_MATCH)


def test_what_spark_accepts_shows_no_false_difference(spark, shape_demo, job_files):
    """A longer watermark changes only the metadata Spark keeps on the window's fields: no row;
    a renamed key column is accepted, and the row says which name changed."""
    watermark = _check(spark, shape_demo, job_files, "window_agg", "longer_watermark")
    assert watermark.restart == "restarts"
    assert all(r.verdict == "same" for r in watermark.comparison.rows
               if r.aspect.endswith((": key", ": value")))
    renamed = _check(spark, shape_demo, job_files, "window_agg", "renamed_key")
    key = next(r for r in renamed.comparison.rows if r.aspect.endswith(": key"))
    assert (renamed.restart, key.verdict) == ("restarts", "accepted")
    assert "user_id -> user" in key.action and (key.old, key.new) == (
        "1 same field, user_id string", "1 same field, user string")


def test_the_rejected_key_is_named_with_both_schemas(spark, shape_demo, job_files):
    check = _check(spark, shape_demo, job_files, "window_agg", "rejected")
    row = next(r for r in check.comparison.rows if r.verdict == "fails")
    assert row.aspect == "0 stateStoreSave default: key" and row.error_class == KEY
    assert "user_id string" in row.old and "_groupingexpression integer" in row.new
    assert details_mention_checks(check)
    details = json.loads(json.dumps(qc.summary_details(check)))
    assert details["restart"] == "fails" and details["error_class"] == KEY
    assert details["rehearsed"] is True and details["ignored_settings"] == []


def test_the_copy_holds_only_what_the_next_batch_loads(spark, demo_factory):
    # 12 batches on HDFS: snapshots every 10 versions, so version 12 loads snapshot 10 + deltas
    demo = demo_factory("window_agg", batches=12, rows_per_batch=10, partitions=2)
    ckpt = Checkpoint(spark, demo.checkpoint_path)
    plan = plan_copy(ckpt)
    assert plan.batch_id == 11
    state = [f for f in plan.files if f.startswith("state/") and f.endswith((".delta",
                                                                          ".snapshot"))]
    versions = {int(f.rsplit("/", 1)[1].split(".")[0]) for f in state}
    assert max(versions) == 11 and 12 not in versions  # version 11 is what batch 11 starts from
    assert "commits/11" not in plan.files and "commits/10" in plan.files
    assert {"offsets/10", "offsets/11"} <= set(plan.files) and "offsets/9" not in plan.files
    assert plan.copy_bytes < plan.checkpoint_bytes


def details_mention_checks(check) -> bool:
    details = qc.summary_details(check)
    return set(details) >= {"checked", "not_checked", "restart", "error_class", "message"}


def test_over_spark_connect_a_change_spark_refuses_is_unknown_never_restarts(
        shape_demo, on_connect):
    """The client cannot call Spark's planning nor copy files: the added aggregate Spark refuses
    is ``unknown`` (a warning: a gate with fail_on warning stops), and the summary says which
    checks did not run."""
    path = shape_demo("window_agg").checkpoint_path
    with on_connect() as connect:
        ckpt = Checkpoint(connect, path)
        checks = {f: qc.check_query_change(connect, ckpt, qc.load_job(connect, qc.DEMO_JOB_FILE, f))
                  for f in ("build_with_max", "build_more_partitions")}
        halves = qc.halves(checks["build_with_max"], connect)
    for check in checks.values():
        assert not check.probe.available and not check.rehearsed
        assert (check.restart, check.status) == ("unknown", "warning")
        rows_agree_with_the_verdict(check)
        assert [n.split(":")[0] for n in check.verdict.not_checked] == [
            "operators and state schemas", "rehearsal"]
    assert checks["build_more_partitions"].ignored_settings == ["spark.sql.shuffle.partitions"]
    assert "Spark Connect" in halves and "cannot copy files" in halves
    value = next(r for r in checks["build_with_max"].comparison.rows
                 if r.aspect.endswith(": value"))
    assert (value.verdict, value.new) == ("unknown", "not known here")
    assert "unknown: not checked here" in qc.verdict_line(checks["build_with_max"])


# -- the job's file: one-line errors -----------------------------------------------------------
def test_job_file_errors_are_one_line(spark, tmp_path):
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent("""
        def build(spark):
            return spark.range(3)

        def helper(spark):
            return 42

        def started(spark):
            return (spark.readStream.format("rate").load().writeStream.format("noop")
                    .start())
    """))
    cases = [(str(tmp_path / "missing.py"), "build", "query_file not found"),
             (str(job), "nope", "has no function 'nope': pass query_function, one of: build, "
                                "helper, started"),
             (str(job), "build", "returned a batch DataFrame"),
             (str(job), "helper", "returned int: return the changed streaming DataFrame"),
             (str(job), "started", "started the query (it was stopped)")]
    for path, function, message in cases:
        with pytest.raises(RunbookError) as excinfo:
            qc.load_job(spark, path, function)
        assert message in str(excinfo.value) and "\n" not in str(excinfo.value)
    assert not spark.streams.active


def test_the_jobs_settings_are_recorded_and_taken_back_from_this_session(spark):
    before = spark.conf.get("spark.sql.shuffle.partitions")
    job = qc.load_job(spark, qc.DEMO_JOB_FILE, "build_more_partitions")
    assert job.job_conf == {"spark.sql.shuffle.partitions": "8"}
    assert spark.conf.get("spark.sql.shuffle.partitions") == before
    assert (job.output_mode, job.sink) == ("append", "console")
    assert "10000" in job.trigger


def test_plan_facts_name_sources_watermarks_and_operators_in_spark_order(spark):
    from state_runbooks.demos.checkpoints import demo_query
    facts = plan_facts(explain_text(demo_query(spark, "two_operators", 10)))
    assert facts.operators == ["stateStoreSave", "dedupe"]  # operator 0 is nearest the sink
    assert facts.sources == ["rate-micro-batch"]
    assert facts.watermarks == [("event_time", "5 seconds")]


# -- transformWithStateInPandas: the encoding decides which value changes Spark accepts ----------
TWS_IN_PANDAS = """
import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor

def _events(spark):
    return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 10)
            .option("numPartitions", 1).option("startTimestamp", 1_700_000_000_000)
            .option("advanceMillisPerBatch", 1000).load()
            .select(F.concat(F.lit("user-"), (F.col("value") % 5).cast("string")).alias("user_id"),
                    F.col("value")))

class Counter(StatefulProcessor):
    SCHEMA = "n long"
    def init(self, handle):
        self.count = handle.getValueState("count", self.SCHEMA)
    def handleInputRows(self, key, rows, timerValues):
        n = self.count.get()[0] if self.count.exists() else 0
        for pdf in rows:
            n += len(pdf)
        self.count.update(tuple([n] + [None] * (len(self.SCHEMA.split(",")) - 1)))
        yield pd.DataFrame({"user_id": [key[0]], "events": [n]})
    def close(self):
        pass

class CounterWithLast(Counter):
    SCHEMA = "n long, last string"

class CounterAsInt(Counter):
    SCHEMA = "n int"

def _query(spark, processor):
    return (_events(spark).groupBy("user_id")
            .transformWithStateInPandas(processor, "user_id string, events long", "Append", "None"))

def build(spark):
    return _query(spark, Counter())

def added_field(spark):
    return _query(spark, CounterWithLast())

def narrowed(spark):
    return _query(spark, CounterAsInt())
"""
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


@pytest.mark.slow
@tiers.EXTENDED  # make test: Spark's check agrees with the restart on the shapes above
@pytest.mark.parametrize("encoding,added_field,narrowed", [
    ("avro", None, "STATE_STORE_INVALID_VALUE_SCHEMA_EVOLUTION"),
    ("unsaferow", VALUE, VALUE)])
def test_transform_with_state_in_pandas_follows_its_encodings_evolution_rules(
        spark, tmp_path, encoding, added_field, narrowed):
    from state_runbooks.session.spark_session import session_conf
    job_file = tmp_path / "counter_job.py"
    job_file.write_text(TWS_IN_PANDAS)
    path = str(tmp_path / "checkpoint")
    conf = {"spark.sql.streaming.stateStore.providerClass": ROCKSDB,
            "spark.sql.streaming.stateStore.encodingFormat": encoding,
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.streaming.noDataMicroBatches.enabled": "false"}
    with session_conf(spark, conf):
        df = qc.load_job(spark, str(job_file), "build").df
        for _ in range(2):
            (df.writeStream.format("noop").option("checkpointLocation", path)
             .trigger(availableNow=True).start().awaitTermination())
    ckpt = Checkpoint(spark, path)
    before = tree_checksums(spark, ckpt.root)
    seen = {}
    for function in ("build", "added_field", "narrowed"):
        check = qc.check_query_change(spark, ckpt, qc.load_job(spark, str(job_file), function))
        assert check.rehearsed and check.disagreement is None, check.disagreement
        seen[function] = check.error_class
    assert seen == {"build": None, "added_field": added_field, "narrowed": narrowed}
    assert tree_checksums(spark, ckpt.root) == before


@pytest.mark.slow
@pytest.mark.notebook
def test_notebook_as_a_deploy_gate_fails_a_change_spark_rejects(spark, shape_demo, run_notebook,
                                                               tmp_path):
    import papermill
    checkpoint = shape_demo("window_agg").checkpoint_path
    before = tree_checksums(spark, checkpoint)
    with pytest.raises(papermill.PapermillExecutionError) as excinfo:
        run_notebook("08_check_query_change", checkpoint_path=checkpoint,
                     query_file=qc.DEMO_JOB_FILE, query_function="build_with_max",
                     fail_on="critical", summary_path=str(tmp_path / "gate.json"))
    assert excinfo.value.ename == "RunbookFailed"
    summary = json.loads((tmp_path / "gate.json").read_text())
    assert (summary["status"], summary["restart"], summary["error_class"], summary["rehearsed"]) \
        == ("critical", "fails", VALUE, True)
    assert summary["ignored_settings"] == [] and summary["disagreement"] is None
    assert tree_checksums(spark, checkpoint) == before


@pytest.mark.slow
def test_a_checkpoint_in_format_v2_is_copied_and_judged_as_a_v1_one(spark, job_files, tmp_path):
    """RocksDB with checkpoint format v2 (state files named by unique ids, the commits naming
    them): the copy holds the files the next batch loads, and prediction and rehearsal agree."""
    from state_runbooks.common.spark_settings import CHECKPOINT_FORMAT_CONF
    from state_runbooks.demos.checkpoints import build_demo_checkpoint
    run = build_demo_checkpoint(spark, "dedup", str(tmp_path / "v2"), 3, "rocksdb_changelog", 10,
                                2, extra_conf={CHECKPOINT_FORMAT_CONF: "2"})
    ckpt = Checkpoint(spark, run.checkpoint_path)
    assert ckpt.format_version == 2
    before = tree_checksums(spark, ckpt.root)
    for function, restart in (("same", "restarts"), ("rejected", "fails")):
        check = qc.check_query_change(spark, ckpt, qc.load_job(spark, str(job_files["dedup"]),
                                                               function))
        assert check.rehearsed, check.rehearsal.note
        assert check.prediction == (check.rehearsal.restart, check.rehearsal.error_class)
        assert check.restart == restart, check.rehearsal.note
    assert tree_checksums(spark, ckpt.root) == before
