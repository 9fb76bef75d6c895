"""Runtime facts: which provider classes apply on which runtime, and how a runtime is detected."""
from __future__ import annotations

import pytest

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.runtime import (
    DATABRICKS_ROCKSDB_PROVIDER,
    OSS_HDFS_PROVIDER,
    OSS_ROCKSDB_PROVIDER,
    detect_runtime,
    provider_classes,
    provider_kind,
)


def test_open_source_classes():
    classes = provider_classes("auto", environ={})
    assert classes.runtime == "oss"
    assert classes.rocksdb == OSS_ROCKSDB_PROVIDER
    assert classes.hdfs == OSS_HDFS_PROVIDER


def test_databricks_is_detected_from_its_environment_variable():
    classes = provider_classes("auto", environ={"DATABRICKS_RUNTIME_VERSION": "15.4"})
    assert classes.runtime == "databricks"
    assert classes.rocksdb == DATABRICKS_ROCKSDB_PROVIDER


def test_explicit_runtime_wins_and_bad_runtime_is_refused():
    assert detect_runtime("oss", environ={"DATABRICKS_RUNTIME_VERSION": "15.4"}) == "oss"
    with pytest.raises(RunbookError, match="use 'auto', 'oss' or 'databricks'"):
        detect_runtime("emr")


@pytest.mark.parametrize("name,kind", [(OSS_HDFS_PROVIDER, "hdfs"), (None, "hdfs"),
                                       (OSS_ROCKSDB_PROVIDER, "rocksdb"),
                                       (DATABRICKS_ROCKSDB_PROVIDER, "rocksdb"),
                                       ("com.example.MyProvider", "unknown")])
def test_provider_kind(name, kind):
    assert provider_kind(name) == kind
