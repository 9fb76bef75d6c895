"""The enable-RocksDB runbook: class resolution, the checks on a checkpoint, the demonstrations of
what Spark does on restart, the measurement, and papermill runs with parameters."""
from __future__ import annotations

import json

import nbformat
import papermill
import pytest
import tiers
from messages import one_line

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.runtime import (
    DATABRICKS_ROCKSDB_PROVIDER,
    OSS_HDFS_PROVIDER,
    OSS_ROCKSDB_PROVIDER,
)
from state_runbooks.common.spark_settings import CHANGELOG_CONF, PROVIDER_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.runbooks import enable_rocksdb as er
from state_runbooks.running.results import Summary

DATABRICKS_ENV = {"DATABRICKS_RUNTIME_VERSION": "15.4"}


# -- class resolution and checks ------------------------------------------------------------------
def test_class_resolution_per_runtime(spark):
    oss = er.plan(spark, "auto", environ={})
    assert (oss.runtime, oss.provider_class) == ("oss", OSS_ROCKSDB_PROVIDER)
    assert er.plan(spark, "oss", environ=DATABRICKS_ENV).provider_class == OSS_ROCKSDB_PROVIDER
    # Databricks is detected from its environment variable; its class does not exist in open-source
    # Spark, so the plan is refused before anything is set, naming the class that is usable here.
    with pytest.raises(RunbookError) as excinfo:
        er.plan(spark, "auto", environ=DATABRICKS_ENV)
    message = one_line(excinfo)
    assert DATABRICKS_ROCKSDB_PROVIDER in message and "(runtime databricks)" in message
    assert "ClassNotFoundException" in message and f"usable here: {OSS_ROCKSDB_PROVIDER}" in message
    with pytest.raises(RunbookError, match="runtime='auto' or 'oss'"):
        er.plan(spark, "databricks")


def test_check_provider_class(spark):
    for name in (OSS_ROCKSDB_PROVIDER, OSS_HDFS_PROVIDER):
        assert er.check_provider_class(spark, name).ok
    missing = er.check_provider_class(spark, er.WIDELY_PUBLISHED_WRONG_CLASS)
    assert (missing.loadable, missing.ok, missing.reason) == (
        False, False, "java.lang.ClassNotFoundException")
    not_provider = er.check_provider_class(spark, "java.lang.String")
    assert not_provider.loadable and not not_provider.ok
    assert "not a subclass of" in not_provider.reason


def test_nonexistent_class_is_rejected_before_any_query_starts(spark, tmp_path):
    wrong = er.WIDELY_PUBLISHED_WRONG_CLASS
    bad = er.RocksDBPlan("oss", wrong, True, 0, {PROVIDER_CONF: wrong})
    before = spark.conf.get(PROVIDER_CONF, None)
    with pytest.raises(RunbookError) as excinfo:
        er.apply(spark, bad)
    message = one_line(excinfo)
    assert er.WIDELY_PUBLISHED_WRONG_CLASS in message and "ClassNotFoundException" in message
    assert f"usable here: {OSS_ROCKSDB_PROVIDER}" in message
    assert spark.conf.get(PROVIDER_CONF, None) == before  # nothing was set
    assert not spark.streams.active


@pytest.mark.parametrize("kwargs,message", [
    ({"runtime": "emr"}, "use 'auto', 'oss' or 'databricks'"),
    ({"bounded_memory_mb": -1}, "bounded_memory_mb=-1 is not valid"),
    ({"bounded_memory_mb": 1.5}, "bounded_memory_mb=1.5 is not valid"),
    ({"changelog_checkpointing": "yes"}, "changelog_checkpointing='yes' is not valid")])
def test_bad_parameters_get_one_line(spark, kwargs, message):
    with pytest.raises(RunbookError) as excinfo:
        er.plan(spark, **kwargs)
    assert message in one_line(excinfo)


def test_confs_snippets_and_apply(spark):
    rocksdb_plan = er.plan(spark, "oss", changelog_checkpointing=False, bounded_memory_mb=256)
    assert rocksdb_plan.confs == {PROVIDER_CONF: OSS_ROCKSDB_PROVIDER, CHANGELOG_CONF: "false",
                                  er.BOUNDED_MEMORY_CONF: "true", er.MAX_MEMORY_MB_CONF: "256"}
    assert er.plan(spark, "oss").confs[er.BOUNDED_MEMORY_CONF] == "false"
    assert er.MAX_MEMORY_MB_CONF not in er.plan(spark, "oss").confs

    texts = er.snippets(rocksdb_plan)
    assert er.parse_conf_lines(texts["spark-defaults.conf"]) == rocksdb_plan.confs
    cluster = "a cluster's Spark config, key value lines (open-source Spark)"
    assert er.parse_conf_lines(texts[cluster]) == rocksdb_plan.confs
    # The open-source class is never offered as a Databricks cluster's setting.
    assert not any("Databricks" in name and OSS_ROCKSDB_PROVIDER in text
                   for name, text in texts.items())

    class Builder:  # records what the builder snippet configures
        configured: dict = {}

        def config(self, key, value):
            self.configured[key] = value
            return self

        def getOrCreate(self):
            return self

    namespace = {}
    code = texts["SparkSession builder"].replace("from pyspark.sql import SparkSession", "")
    exec(code, {"SparkSession": type("S", (), {"builder": Builder()})}, namespace)
    assert Builder.configured == rocksdb_plan.confs

    saved = {k: spark.conf.get(k, None) for k in rocksdb_plan.confs}
    try:
        assert er.apply(spark, rocksdb_plan) == rocksdb_plan.confs
        assert all(spark.conf.get(k) == v for k, v in rocksdb_plan.confs.items())
    finally:  # the session is shared by every test
        for key, value in saved.items():
            spark.conf.unset(key) if value is None else spark.conf.set(key, value)


# -- an existing checkpoint -----------------------------------------------------------------------
@pytest.mark.parametrize("provider,pinned,matches,newest_changelog,status", [
    ("hdfs", OSS_HDFS_PROVIDER, False, None, "warning"),
    ("rocksdb", OSS_ROCKSDB_PROVIDER, True, False, "ok"),
    ("rocksdb_changelog", OSS_ROCKSDB_PROVIDER, True, True, "ok")])
def test_each_provider_setup_is_reported(spark, demo_factory, provider, pinned, matches,
                                         newest_changelog, status):
    run = demo_factory("two_operators", provider)
    ckpt = Checkpoint(spark, run.checkpoint_path)
    report = er.check_checkpoint(ckpt, OSS_ROCKSDB_PROVIDER)
    assert report.pinned_provider_class == pinned and report.pinned_in == "offsets/3"
    assert report.pinned_matches is matches and report.takes_effect is matches
    assert report.pinned_class_check.ok
    assert report.changelog_pinned is None  # Spark does not pin the flag
    assert report.changelog_newest_version is newest_changelog
    assert report.state_confs[PROVIDER_CONF] == pinned
    assert report.state_confs["spark.sql.shuffle.partitions"] == str(run.partitions)
    assert report.restart_offsets == ckpt.offsets(3).sources

    lines = "\n".join(er.checkpoint_lines(report) + er.options_lines(report))
    assert ("will NOT take effect" in lines) is (not matches)
    assert ("sources starting where batch 3 ended (offsets/3)" in lines) is (not matches)
    summary = Summary("enable_rocksdb", ckpt.root, spark.version)
    rocksdb_plan = er.plan(spark, "oss")
    er.summarize(summary, er.Enablement(rocksdb_plan, rocksdb_plan.confs, report))
    data = summary.to_dict()
    assert data["status"] == status
    assert data["pinned_provider_class"] == pinned and data["pinned_matches"] is matches
    assert data["changelog_checkpointing_pinned"] is None
    assert data["confs"] == rocksdb_plan.confs and data["benchmark"] == {}
    assert [f["code"] for f in data["findings"]] == ([] if matches else ["pinned_provider_differs"])


def test_checkpoint_that_pinned_nothing_yet(spark, tmp_path):
    (tmp_path / "metadata").write_text('{"id":"00000000-0000-0000-0000-000000000000"}')
    report = er.check_checkpoint(Checkpoint(spark, str(tmp_path), require_state=False),
                                 OSS_ROCKSDB_PROVIDER)
    assert report.pinned_provider_class is None and report.pinned_matches is None
    assert report.takes_effect
    assert "nothing is pinned" in er.checkpoint_lines(report)[0]
    summary = Summary("enable_rocksdb", str(tmp_path), spark.version)
    er.summarize(summary, er.Enablement(er.plan(spark, "oss"), {}, report))
    assert summary.status == "ok" and summary.details["pinned_provider_class"] is None


def test_summary_without_a_checkpoint(spark):
    summary = Summary("enable_rocksdb", "", spark.version)
    er.summarize(summary, er.Enablement(er.plan(spark, "oss"), {}, None))
    d = summary.to_dict()
    assert d["pinned_provider_class"] is None and d["pinned_matches"] is None
    assert d["changelog_checkpointing_pinned"] is None and d["status"] == "ok"


# -- what Spark does (demonstrations the notebook shows) -------------------------------------------
def test_wrong_class_fails_at_start_and_poisons_the_checkpoint(spark, tmp_path):
    demo = er.demonstrate_wrong_class(spark, str(tmp_path))
    assert not demo.check.loadable
    assert demo.start_error_class == "STREAM_FAILED"
    wrong = er.WIDELY_PUBLISHED_WRONG_CLASS
    assert demo.start_root_cause == f"java.lang.ClassNotFoundException: {wrong}"
    assert demo.pinned_after_failure == wrong and demo.committed_batches == []
    assert demo.restart_error_class == "STREAM_FAILED"
    assert er.WIDELY_PUBLISHED_WRONG_CLASS in demo.restart_root_cause
    # The runbook's check of such a checkpoint is critical.
    report = er.check_checkpoint(Checkpoint(spark, f"{tmp_path}/wrong-class", require_state=False),
                                 OSS_ROCKSDB_PROVIDER)
    assert not report.pinned_class_check.ok
    summary = Summary("enable_rocksdb", report.root, spark.version)
    er.summarize(summary, er.Enablement(er.plan(spark, "oss"), {}, report))
    assert summary.status == "critical"
    assert [f.code for f in summary.findings] == ["pinned_provider_unusable",
                                                  "pinned_provider_differs"]


def test_restart_keeps_the_pinned_provider(spark, tmp_path):
    demo = er.demonstrate_pinned_provider(spark, str(tmp_path), OSS_ROCKSDB_PROVIDER)
    assert demo.pinned_before == demo.pinned_after == {PROVIDER_CONF: OSS_HDFS_PROVIDER}
    assert demo.kinds_before == {1: ["delta"]}
    assert demo.new_versions == {2: ["delta"]}


@pytest.mark.parametrize("changelog", [True, False])
def test_rocksdb_is_verified_and_the_changelog_flag_follows_the_session(spark, tmp_path, changelog):
    rocksdb_plan = er.plan(spark, "oss", changelog_checkpointing=changelog,
                           bounded_memory_mb=0 if changelog else 64)
    v = er.verify_rocksdb(spark, str(tmp_path), rocksdb_plan)
    assert v.rocksdb_in_use and v.pinned_provider_class == OSS_ROCKSDB_PROVIDER
    assert v.kinds_by_version == {1: ["changelog" if changelog else "zip"],
                                  2: ["changelog" if changelog else "zip"]}
    assert (v.sst_files > 0) is (not changelog)  # a snapshot uploads its SST files
    assert {"rocksdbPutCount", "rocksdbGetCount", "rocksdbSstFileSize"} <= set(v.rocksdb_metrics)
    before, after = v.bounded_instances
    assert (after > before) is (not changelog)  # bounded memory: instances join the shared pool
    lines = "\n".join(er.verification_lines(v, rocksdb_plan))
    assert "verdict: RocksDB is in use" in lines
    assert ("bounded memory (64 MB" in lines) is (not changelog)

    flip = er.demonstrate_changelog_flip(spark, v.checkpoint_path, rocksdb_plan)
    assert flip.new_versions == {3: ["zip" if changelog else "changelog"]}
    assert flip.pinned_after == {PROVIDER_CONF: OSS_ROCKSDB_PROVIDER, CHANGELOG_CONF: None}
    report = er.check_checkpoint(Checkpoint(spark, v.checkpoint_path), OSS_ROCKSDB_PROVIDER)
    assert report.changelog_newest_version is (not changelog)


def test_side_by_side_measurement(spark, tmp_path):
    rocksdb_plan = er.plan(spark, "oss")
    measurements = er.measure_providers(spark, str(tmp_path), 1_000, rocksdb_plan, batches=2)
    assert [m.provider for m in measurements] == ["hdfs", "rocksdb", "rocksdb_changelog"]
    assert {m.state_rows for m in measurements} == {1_000}
    for m in measurements:
        assert m.batch_ms > 0 and m.memory_bytes > 0 and m.disk_bytes > 0
        assert m.heap_bytes is not None  # local mode: the driver JVM is the executor
        assert len(m.progress) == 2
        assert bool(m.rocksdb_metrics) is (m.provider != "hdfs")
    table = er.benchmark_table(measurements)
    assert list(table.index) == ["hdfs", "rocksdb", "rocksdb_changelog"]
    summary = er.benchmark_summary(measurements)
    assert set(summary["rocksdb"]) >= {"batch_ms", "memory_bytes", "heap_bytes", "disk_bytes"}
    verdict = er.benchmark_verdict(measurements)
    assert verdict[0].startswith("Same workload on every setup") and "NOT equal" not in verdict[0]
    assert "What it cannot show at 1,000 rows" in verdict[-1]
    assert len(verdict) == 6
    # At 1,000 rows the heap may or may not tell the providers apart; either way it says which.
    assert verdict[4].startswith(("What this run shows: where the state lives",
                                  "At this size the heap retained"))
    fig = __import__("state_runbooks.running.plots", fromlist=["plots"]).provider_benchmark(table)
    assert len(fig.axes) == 5


def test_unloading_cached_state_stores_keeps_queries_working(spark, tmp_path):
    assert er.unload_state_stores(spark)  # local mode
    v = er.verify_rocksdb(spark, str(tmp_path), er.plan(spark, "oss"), batches=1)
    assert v.rocksdb_in_use
    assert er.unload_state_stores(spark)


# -- over Spark Connect: no JVM on this side -------------------------------------------------------
def test_over_connect_spark_itself_checks_the_class(on_connect, spark, tmp_path):
    """Over Connect the class is checked by a one-row stateful query, with the same verdicts and
    the same root cause as the JVM check of a classic session; a failed start's root cause comes
    from the server's stack trace."""
    with on_connect() as connect:
        for name in (OSS_ROCKSDB_PROVIDER, er.WIDELY_PUBLISHED_WRONG_CLASS, "java.lang.String"):
            assert er.check_provider_class(connect, name) == er.check_provider_class(spark, name)
        rocksdb_plan = er.plan(connect, "oss")
        assert rocksdb_plan.provider_class == OSS_ROCKSDB_PROVIDER
        with pytest.raises(RunbookError) as excinfo:
            er.plan(connect, "databricks", environ=DATABRICKS_ENV)
        assert f"ClassNotFoundException; usable here: {OSS_ROCKSDB_PROVIDER}" in one_line(excinfo)
        demo = er.demonstrate_wrong_class(connect, str(tmp_path))
        assert demo.start_error_class == demo.restart_error_class == "STREAM_FAILED"
        assert demo.start_root_cause == (f"java.lang.ClassNotFoundException: "
                                         f"{er.WIDELY_PUBLISHED_WRONG_CLASS}")
        assert demo.pinned_after_failure == er.WIDELY_PUBLISHED_WRONG_CLASS


def test_over_connect_rocksdb_is_proven_from_files_and_metrics(on_connect, tmp_path):
    """Files and metrics prove RocksDB over Connect too; what only a JVM shows says so."""
    with on_connect() as connect:
        rocksdb_plan = er.plan(connect, "oss", bounded_memory_mb=64)
        v = er.verify_rocksdb(connect, str(tmp_path), rocksdb_plan, batches=1)
        assert v.rocksdb_in_use and v.pinned_provider_class == OSS_ROCKSDB_PROVIDER
        assert v.bounded_instances == (None, None)
        lines = er.verification_lines(v, rocksdb_plan)
        assert ("bounded memory: not observable over Spark Connect: the executors' JVMs are on the "
                "server side (the RocksDB memory manager's instance count)") in lines
        assert er.heap_used_after_gc(connect) is None and not er.unload_state_stores(connect)
        flip = er.demonstrate_changelog_flip(connect, v.checkpoint_path, rocksdb_plan)
        assert flip.new_versions == {2: ["zip"]}


# -- papermill runs with parameters ---------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.notebook
def test_notebook_on_an_hdfs_checkpoint_warns_and_fails_on_warning(spark, demo_factory,
                                                                   run_notebook, tmp_path):
    checkpoint = demo_factory("two_operators", "hdfs").checkpoint_path
    with pytest.raises(papermill.PapermillExecutionError) as excinfo:
        run_notebook("01_enable_rocksdb", checkpoint_path=checkpoint, fail_on="warning",
                     benchmark_rows=0)
    assert excinfo.value.ename == "RunbookFailed"
    summary = json.loads((tmp_path / "01_enable_rocksdb.summary.json").read_text())
    assert summary["runbook"] == "enable_rocksdb" and summary["status"] == "warning"
    assert summary["checkpoint_path"] == Checkpoint(spark, checkpoint).root
    assert summary["provider_class"] == OSS_ROCKSDB_PROVIDER
    assert summary["pinned_provider_class"] == OSS_HDFS_PROVIDER
    assert summary["pinned_matches"] is False and summary["takes_effect"] is False
    assert summary["changelog_checkpointing_pinned"] is None
    assert summary["confs"][CHANGELOG_CONF] == "true"
    # On a given checkpoint the demonstrations run only when asked: no verification stream.
    assert summary["rocksdb_verified"] is None and summary["benchmark"] == {}
    assert [f["code"] for f in summary["findings"]] == ["pinned_provider_differs"]
    printed = "\n".join(o.get("text", "") for c in nbformat.read(
        str(tmp_path / "01_enable_rocksdb.ipynb"), as_version=4).cells for o in c.get("outputs", []))
    assert er.SKIPPED_DEMONSTRATIONS in printed and er.SKIPPED in printed


@pytest.mark.slow
@pytest.mark.notebook
@tiers.EXTENDED  # make test: the options in the library's tests, the notebook on its demo (nbval)
def test_notebook_on_a_rocksdb_checkpoint_with_options(spark, demo_factory, run_notebook):
    checkpoint = demo_factory("two_operators", "rocksdb").checkpoint_path
    result = run_notebook("01_enable_rocksdb", checkpoint_path=checkpoint,
                          changelog_checkpointing=False, bounded_memory_mb=128, benchmark_rows=0,
                          demonstrations=True)
    summary = result.summary
    assert summary == result.records["summary"]
    assert summary["status"] == "ok" and summary["findings"] == []
    assert summary["pinned_provider_class"] == OSS_ROCKSDB_PROVIDER
    assert summary["pinned_matches"] is True and summary["takes_effect"] is True
    assert summary["changelog_checkpointing_pinned"] is None
    assert summary["changelog_checkpointing_newest_version"] is False
    assert summary["confs"] == {PROVIDER_CONF: OSS_ROCKSDB_PROVIDER, CHANGELOG_CONF: "false",
                                er.BOUNDED_MEMORY_CONF: "true", er.MAX_MEMORY_MB_CONF: "128"}
    assert summary["rocksdb_verified"] is True


@pytest.mark.slow
@pytest.mark.notebook
def test_notebook_refuses_a_class_this_runtime_lacks(run_notebook, tmp_path):
    with pytest.raises(papermill.PapermillExecutionError) as excinfo:
        run_notebook("01_enable_rocksdb", runtime="databricks", benchmark_rows=0)
    assert excinfo.value.ename == "RunbookError"
    assert DATABRICKS_ROCKSDB_PROVIDER in excinfo.value.evalue
    assert "\n" not in excinfo.value.evalue
    # Refused at the common start, after Spark started and before any checkpoint was opened or
    # built: the error summary says so.
    summary = json.loads((tmp_path / "01_enable_rocksdb.summary.json").read_text())
    assert summary["status"] == "error" and summary["checkpoint_path"] == ""
    assert summary["error"] == {"type": "RunbookError", "message": excinfo.value.evalue,
                                "step": 'rb = start_runbook("enable_rocksdb", checkpoint_path, '
                                        'spark_master, summary_path, fail_on,'}
