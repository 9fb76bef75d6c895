"""What Spark's Python workers raised, read from the text of the error that carries it: the
worker's own last line, not the header of its traceback."""
from state_runbooks.common.errors import (
    first_line,
    import_failure_on_workers,
    python_worker_error,
)

# As a Spark Connect server whose Python workers have no pyarrow reports a pandas UDF's failure.
WORKER_FAILED = (
    "[STREAM_FAILED] Query [id = 8, runId = 0] terminated with exception: [PYTHON_EXCEPTION] An "
    "exception was thrown from the Python worker: Traceback (most recent call last):\n"
    '  File "/x/pyspark.zip/pyspark/worker.py", line 3526, in read_udfs\n'
    "    import pyarrow as pa\n"
    "ModuleNotFoundError: No module named 'pyarrow'\n"
    " SQLSTATE: 38000 SQLSTATE: XXKST\n=== Streaming Query ===\n")


def test_a_missing_module_is_named_with_where_it_is_missing():
    said = python_worker_error(WORKER_FAILED)
    assert said.startswith("ModuleNotFoundError: No module named 'pyarrow' on Spark's Python "
                           "workers: install it where the executors run")
    assert import_failure_on_workers(WORKER_FAILED) == said
    line = first_line(Exception(WORKER_FAILED))
    assert "\n" not in line and "No module named 'pyarrow'" in line


def test_other_worker_errors_are_not_import_failures():
    text = WORKER_FAILED.replace("ModuleNotFoundError: No module named 'pyarrow'",
                                 "ZeroDivisionError: division by zero")
    assert python_worker_error(text) == "ZeroDivisionError: division by zero"
    assert import_failure_on_workers(text) is None
    assert python_worker_error("[X] no traceback here") is None
