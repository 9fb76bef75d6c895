"""Runbook 01's rules that need no Spark: the benchmark's row counts, the verdict of a
verification on HDFS, and what counts as noise when two measurements are compared."""
from __future__ import annotations

import pytest
from messages import one_line

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.runtime import (
    OSS_HDFS_PROVIDER,
    OSS_ROCKSDB_PROVIDER,
)
from state_runbooks.runbooks import enable_rocksdb as er
from state_runbooks.runbooks.enable_rocksdb import benchmark as er_benchmark
from state_runbooks.running.results import Summary


@pytest.mark.parametrize("rows", [-1, 10, 999, True])
def test_bad_benchmark_rows(rows):
    with pytest.raises(RunbookError) as excinfo:
        er.check_benchmark_rows(rows)
    assert "use 0 to skip the measurement" in one_line(excinfo)


def test_verification_fails_on_hdfs():
    v = er.Verification("x", OSS_HDFS_PROVIDER, {1: ["delta"]}, 0, {}, 100, (None, None))
    assert not v.rocksdb_in_use
    summary = Summary("enable_rocksdb", "x", "4")
    rocksdb_plan = er.RocksDBPlan("oss", OSS_ROCKSDB_PROVIDER, True, 0, {})
    demo = er.DemoResult(None, None, v, None, [])
    er.summarize(summary, er.Enablement(rocksdb_plan, {}, None, demo))
    assert summary.status == "critical"


def test_compare_calls_small_differences_noise():
    assert er_benchmark._compare(100, 110) == "about the same"
    assert er_benchmark._compare(300, 100) == "3.0x more"
    assert er_benchmark._compare(100, 400) == "4.0x less"
    assert er_benchmark._compare(None, 100) == "not comparable"


def test_a_databricks_plan_names_its_cluster_config_and_carries_its_class():
    from state_runbooks.common.runtime import DATABRICKS_ROCKSDB_PROVIDER
    from state_runbooks.common.spark_settings import PROVIDER_CONF
    from state_runbooks.runbooks.enable_rocksdb.provider import RocksDBPlan, snippets
    plan = RocksDBPlan("databricks", DATABRICKS_ROCKSDB_PROVIDER, True, 0,
                       {PROVIDER_CONF: DATABRICKS_ROCKSDB_PROVIDER})
    texts = snippets(plan)
    assert texts["Databricks cluster Spark config"] == \
        f"{PROVIDER_CONF} {DATABRICKS_ROCKSDB_PROVIDER}"
