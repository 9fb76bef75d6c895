"""Redaction of secrets in any Spark configuration a runbook prints."""
from __future__ import annotations

from state_runbooks.common.redaction import (
    spark_redaction_pattern,
)


def test_spark_redaction_pattern_is_read_from_the_session(spark):
    pattern = spark_redaction_pattern(spark)
    assert pattern is None or isinstance(pattern, str)


def test_spark_redaction_pattern_over_connect(on_connect):
    """Read through the SQL conf: no SparkContext is touched, and an unset pattern is None."""
    with on_connect() as connect:
        assert spark_redaction_pattern(connect) is None
