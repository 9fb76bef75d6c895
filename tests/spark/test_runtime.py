"""Runtime facts: which provider classes apply, and the session helper's reuse of a session."""
from __future__ import annotations

from state_runbooks.common.runtime import (
    OSS_HDFS_PROVIDER,
    OSS_ROCKSDB_PROVIDER,
)
from state_runbooks.session.spark_session import get_spark


def test_the_installed_jvm_has_the_open_source_classes(spark):
    for name in (OSS_HDFS_PROVIDER, OSS_ROCKSDB_PROVIDER):
        assert spark._jvm.java.lang.Class.forName(name).getName() == name


def test_session_helper_reuses_the_active_session(spark):
    assert get_spark() is spark
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
