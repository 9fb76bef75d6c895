"""Spark's errors become one-line RunbookErrors that keep the error class."""
from __future__ import annotations

import pytest

from state_runbooks.errors import RunbookError, spark_errors


def test_spark_analysis_error_is_translated(spark):
    with pytest.raises(RunbookError) as excinfo:
        with spark_errors("reading the table"):
            spark.sql("SELECT * FROM no_such_table").collect()
    error = excinfo.value
    assert error.error_class == "TABLE_OR_VIEW_NOT_FOUND"
    assert str(error).startswith("reading the table failed: [TABLE_OR_VIEW_NOT_FOUND]")
    assert "\n" not in str(error)
    assert error.spark_error is not None


def test_java_exception_is_translated(spark):
    with pytest.raises(RunbookError) as excinfo:
        with spark_errors("opening a stream"):
            spark._jvm.java.io.FileInputStream("/no/such/file")
    assert "FileNotFoundException" in str(excinfo.value)
    assert "\n" not in str(excinfo.value)


def test_python_errors_pass_through():
    with pytest.raises(KeyError):
        with spark_errors("anything"):
            raise KeyError("not Spark's")
