"""Which failures a demo batch is run once more for: a Python worker that did not connect back in
time, as Spark 4.3 words it, in the error or its causes; nothing else."""
from __future__ import annotations

from state_runbooks.common.errors import RunbookError
from state_runbooks.demos.transient import is_transient_worker_error


def test_a_worker_that_did_not_connect_back_is_transient_in_the_error_or_its_cause():
    spark = RuntimeError("org.apache.spark.SparkException: Python worker failed to connect back.")
    assert is_transient_worker_error(spark)
    wrapped = RunbookError("running demo query failed: [STREAM_FAILED] ...", spark_error=spark)
    assert is_transient_worker_error(wrapped)
    try:
        raise ValueError("outer") from RuntimeError(
            "java.net.SocketTimeoutException: Timed out while waiting for the Python worker to "
            "connect back")
    except ValueError as chained:
        assert is_transient_worker_error(chained)


def test_any_other_failure_is_not():
    assert not is_transient_worker_error(RunbookError("[STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY]"))
    assert not is_transient_worker_error(RuntimeError("ModuleNotFoundError: No module named 'x'"))
