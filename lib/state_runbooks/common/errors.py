"""One exception type for everything a user can get wrong, with a one-line message.

A runbook fails on bad input with a sentence that says what was wrong and what is valid. Errors
raised inside Spark (Java) are translated here, keeping the Spark error class and the first line of
its message; the full Java exception stays available as ``spark_error`` for whoever needs it.
"""
from __future__ import annotations

import contextlib
import re
from typing import Iterator


class RunbookError(ValueError):
    """Bad input or an unusable checkpoint. The message is one actionable line."""

    def __init__(self, message: str, *, spark_error: BaseException | None = None,
                 error_class: str | None = None):
        super().__init__(message)
        self.spark_error = spark_error
        self.error_class = error_class


def require(condition: bool, message: str) -> None:
    """Raise ``RunbookError(message)`` unless ``condition`` holds: a parameter check in one line."""
    if not condition:
        raise RunbookError(message)


class RunbookFailed(RuntimeError):
    """Raised by the last cell when the summary status reaches ``fail_on`` (for schedulers)."""


ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]+(?:\.[A-Z0-9_]+)*)\]")


def spark_error_class(exc: BaseException) -> str | None:
    """The Spark error class of an exception (e.g. ``CANNOT_LOAD_STATE_STORE.UNCATEGORIZED``)."""
    getter = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    if getter is not None:
        try:
            value = getter()
            if value:
                return str(value)
        except Exception:  # noqa: BLE001 - any failure here just means "unknown"
            pass
    match = ERROR_CLASS.search(str(exc))
    return match.group(1) if match else None


_PYTHON_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception)): (.*)$")
_MISSING_MODULE = re.compile(r"No module named '([^']+)'")


def python_worker_error(text: str) -> str | None:
    """The error a Spark Python worker raised (its traceback's last line), in a text that carries
    one; a missing module says where it is missing."""
    starts = [m.end() for m in re.finditer(r"Traceback \(most recent call last\):?\n", text)]
    for start in reversed(starts):
        for line in text[start:].splitlines():
            match = _PYTHON_ERROR.match(line.rstrip())
            if not match:
                continue
            missing = _MISSING_MODULE.search(match.group(2))
            if missing:
                return (f"{match.group(1)}: No module named '{missing.group(1)}' on Spark's "
                        "Python workers: install it where the executors run (or ship it with "
                        "--py-files)")
            return f"{match.group(1)}: {match.group(2)}"
    return None


def import_failure_on_workers(text: str) -> str | None:
    """Spark's Python workers' failure to import a module (missing or broken there), in one
    line; None for any other error."""
    found = python_worker_error(text)
    return found if found and found.startswith(("ModuleNotFoundError", "ImportError")) else None


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first meaningful line of an exception message, without the JVM stack; an error of
    Spark's Python workers with the worker's own error in it (not its traceback's header)."""
    java = getattr(exc, "java_exception", None)  # Py4JJavaError: the Java exception's own line
    text = str(java.toString()) if java is not None else str(exc).strip()
    worker = python_worker_error(full_error_text(exc) if java is None else str(exc))
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "JVM stacktrace", "Traceback")):
            if worker and worker not in line:
                line = f"{line.rstrip(': ')}: {worker}"
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return worker or type(exc).__name__


def full_error_text(exc: BaseException) -> str:
    """Everything the Spark error behind ``exc`` says (message, causes, server trace), to search
    for the file or partition it names; ``exc`` itself when it wraps no Spark error."""
    spark_error = getattr(exc, "spark_error", None)
    return str(spark_error) if spark_error is not None else str(exc)


def spark_line(exc: RunbookError) -> str:
    """The first line of the Spark error behind ``exc``, without the action that
    :func:`spark_errors` put in front of it."""
    return first_line(exc.spark_error) if exc.spark_error is not None else str(exc)


def spark_error_text(exc: BaseException) -> str:
    """``[CLASS] message`` of the Spark error under any wrapper (a failed query wraps its cause
    in ``STREAM_FAILED``), up to the SQLSTATE or the end of the line."""
    text = full_error_text(exc)
    for marker in ERROR_CLASS.finditer(text):
        if marker.group(1) != "STREAM_FAILED" and text[marker.end():marker.end() + 1] == " ":
            message = re.split(r" SQLSTATE|\n", text[marker.end() + 1:], maxsplit=1)[0]
            return f"[{marker.group(1)}] {message.strip()}"
    return first_line(exc)


def root_cause(exc: BaseException | None) -> str | None:
    """The innermost Java exception class and message of a Spark error (``None`` if not Java):
    from the Java exception of a classic session, or from the server's stack trace that a Spark
    Connect error carries (its last ``Caused by:`` line)."""
    if exc is None:
        return None
    origin = getattr(exc, "_origin", None) or getattr(exc, "java_exception", None)
    if origin is None:
        return _connect_root_cause(exc)
    cause = origin
    try:
        while cause.getCause() is not None:
            cause = cause.getCause()
        message = cause.getMessage()
        name = str(cause.getClass().getName())
        return f"{name}: {message}" if message else name
    except Exception:  # noqa: BLE001 - a partly reachable Java object: say nothing rather than fail
        return None


def _connect_root_cause(exc: BaseException) -> str | None:
    getter = getattr(exc, "getStackTrace", None)
    try:
        trace = (getter() if getter is not None else None) or str(exc)
    except Exception:  # noqa: BLE001 - not a Spark Connect error after all
        return None
    causes = [line.strip()[len("Caused by: "):] for line in str(trace).splitlines()
              if line.strip().startswith("Caused by: ")]
    return causes[-1] if causes else None


@contextlib.contextmanager
def spark_errors(action: str) -> Iterator[None]:
    """Translate an exception raised by Spark or the JVM during ``action`` into a RunbookError."""
    try:
        yield
    except RunbookError:
        raise
    except Exception as exc:  # noqa: BLE001 - Py4J and PySpark raise many unrelated types
        module = type(exc).__module__ or ""
        if not module.startswith(("py4j", "pyspark")):
            raise
        error_class = spark_error_class(exc)
        raise RunbookError(f"{action} failed: {first_line(exc)}", spark_error=exc,
                           error_class=error_class) from None
