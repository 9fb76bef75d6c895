"""Spark's errors become one-line RunbookErrors that keep the error class."""
from __future__ import annotations

import pytest

from state_runbooks.common.errors import RunbookError, spark_errors


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


def test_the_spark_error_behind_a_runbook_error_reads_one_way(spark):
    """The first line without the action, the whole text, and the innermost ``[CLASS] message``
    under a query's ``STREAM_FAILED``: from a real Spark error, and from a wrapped text."""
    from state_runbooks.common.errors import full_error_text, require, spark_error_text, spark_line

    with pytest.raises(RunbookError) as excinfo:
        with spark_errors("reading the table"):
            spark.sql("SELECT * FROM no_such_table").collect()
    error = excinfo.value
    assert spark_line(error) == str(error).removeprefix("reading the table failed: ")
    assert spark_line(error).startswith("[TABLE_OR_VIEW_NOT_FOUND]")
    assert full_error_text(error) == str(error.spark_error)
    assert spark_error_text(error).startswith("[TABLE_OR_VIEW_NOT_FOUND] The table or view")
    wrapped = RunbookError("restarting failed: [STREAM_FAILED] ...", spark_error=RuntimeError(
        "[STREAM_FAILED] Query [id = 1] terminated with exception: [CANNOT_LOAD_STATE_STORE."
        "UNCATEGORIZED] An error occurred during loading state. SQLSTATE: 58030\n\tat x"))
    assert spark_error_text(wrapped) == ("[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error "
                                         "occurred during loading state.")
    with pytest.raises(RunbookError, match="^rows=-1 is not valid$"):
        require(False, "rows=-1 is not valid")
