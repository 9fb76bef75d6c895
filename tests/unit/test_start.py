"""The common start of every runbook (``start_runbook``), in the order it promises, with Spark, the
checkpoint and the demo replaced by stand-ins that note when they are used (no Spark needed)."""
from __future__ import annotations

import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.running import start
from state_runbooks.running.start import DEMO_ENV, start_runbook


class _Spark:
    version = "4.0.0"


@pytest.fixture
def steps(monkeypatch):
    """What happened, in order: ``spark``, ``demo``, ``checkpoint <path>``."""
    happened = []

    def get_spark(master=""):
        happened.append("spark")
        return _Spark()

    class Demo:
        workload, batches, provider = "dedup", 3, "hdfs"
        checkpoint_path = "/tmp/demo"

    def build_demo_checkpoint(spark, **options):
        happened.append("demo")
        return Demo()

    class Checkpoint:
        def __init__(self, spark, path, require_state=True):
            happened.append(f"checkpoint {path} require_state={require_state}")
            self.root = f"file:{path}"
            self.format_version = 1

    monkeypatch.setattr(start, "get_spark", get_spark)
    monkeypatch.setattr(start, "build_demo_checkpoint", build_demo_checkpoint)
    monkeypatch.setattr(start, "Checkpoint", Checkpoint)
    monkeypatch.delenv(DEMO_ENV, raising=False)
    return happened


def test_checks_then_spark_then_prepare_then_the_checkpoint(steps):
    rb = start_runbook("x", "/data/ckpt", checks=lambda: steps.append("checks"),
                       prepare=lambda spark: steps.append("prepare") or f"plan on {spark.version}")
    assert steps == ["checks", "spark", "prepare", "checkpoint /data/ckpt require_state=True"]
    assert rb.prepared == "plan on 4.0.0" and not rb.is_demo
    assert rb.summary.checkpoint_path == "file:/data/ckpt" and rb.summary.spark_version == "4.0.0"


def test_without_a_checkpoint_the_demo_is_built_after_prepare(steps):
    rb = start_runbook("x", prepare=lambda spark: steps.append("prepare"))
    assert steps == ["spark", "prepare", "demo", "checkpoint /tmp/demo require_state=True"]
    assert rb.is_demo and rb.prepared is None


def _note_demo_prepared(steps):
    def prepare_demo(rb):
        steps.append(f"prepare_demo {rb.checkpoint.root}")
        return "broken on purpose"
    return prepare_demo


def test_the_demo_is_prepared_last_on_the_opened_demo_checkpoint(steps):
    rb = start_runbook("x", prepare_demo=_note_demo_prepared(steps))
    assert steps == ["spark", "demo", "checkpoint /tmp/demo require_state=True",
                     "prepare_demo file:/tmp/demo"]
    assert rb.demo_prepared == "broken on purpose"


def test_a_checkpoint_given_is_never_prepared_as_the_demo(steps):
    rb = start_runbook("x", "/data/ckpt", prepare_demo=_note_demo_prepared(steps))
    assert steps == ["spark", "checkpoint /data/ckpt require_state=True"]
    assert rb.demo_prepared is None


@pytest.mark.parametrize("name, placeholders", [
    ("checkpoint_path", {}), ("query_file", {"query_file": " <the job's file> "})])
def test_a_placeholder_refuses_in_one_line_before_spark_starts(steps, name, placeholders):
    checkpoint = "<checkpoint root>" if name == "checkpoint_path" else "/data/ckpt"
    with pytest.raises(RunbookError, match=f"^{name} is still the placeholder <[^\n]*>: set it "
                                           f"in the schedule file or with -p {name} ...$"):
        start_runbook("x", checkpoint, placeholders=placeholders,
                      checks=lambda: steps.append("checks"))
    assert steps == []  # neither the runbook's checks nor Spark


def test_the_runbook_s_checks_stop_the_run_before_spark_starts(steps):
    def checks():
        raise RunbookError("benchmark_rows must be 0 or more")

    with pytest.raises(RunbookError, match="benchmark_rows"):
        start_runbook("x", "/data/ckpt", checks=checks,
                      prepare=lambda spark: steps.append("prepare"))
    assert steps == []


def test_a_bad_fail_on_stops_the_run_before_spark_starts(steps):
    with pytest.raises(RunbookError, match="^fail_on='sometimes' is not valid"):
        start_runbook("x", "/data/ckpt", fail_on="sometimes")
    assert steps == []


def test_a_scheduled_run_without_a_checkpoint_refuses_the_demo_before_spark_starts(
        steps, monkeypatch):
    monkeypatch.setenv(DEMO_ENV, "refuse")
    with pytest.raises(RunbookError, match=r"^x: no checkpoint_path given, and a scheduled or "
                                           r"command-line run builds no demo: set -p "
                                           r"checkpoint_path \.\.\., or pass --demo"):
        start_runbook("x", checks=lambda: steps.append("checks"))
    assert steps == ["checks"]
    start_runbook("x", "/data/ckpt")  # a checkpoint given: nothing to refuse
    assert steps[-1].startswith("checkpoint /data/ckpt")


def test_with_sources_the_checkpoint_is_optional_and_no_demo_checkpoint_is_built(steps):
    rb = start_runbook("monitor", require_state=False,
                       sources={"event_log_path": "/logs", "query_name": ""})
    assert steps == ["spark"] and rb.checkpoint is None and not rb.is_demo
    assert rb.describe() == "monitor on no checkpoint, Spark 4.0.0"
    rb = start_runbook("monitor", "/data/ckpt", require_state=False,
                       sources={"event_log_path": "", "query_name": ""})
    assert steps[-1] == "checkpoint /data/ckpt require_state=False" and rb.checkpoint is not None


def test_with_sources_a_scheduled_run_naming_none_refuses_the_demo_naming_the_first(
        steps, monkeypatch):
    monkeypatch.setenv(DEMO_ENV, "refuse")
    sources = {"event_log_path": "", "query_name": "", "query_id": ""}
    with pytest.raises(RunbookError, match=r"^monitor: no event_log_path given, .* set -p "
                                           r"event_log_path \.\.\., or pass --demo for the demo$"):
        start_runbook("monitor", sources=sources)
    assert steps == []
    start_runbook("monitor", sources={**sources, "query_name": "orders"})  # a live query
    start_runbook("monitor", "/data/ckpt", sources=sources)  # the checkpoint's query
    assert steps.count("spark") == 2 and "demo" not in steps
