"""What a runbook hands back: recorded values for tests, and a JSON summary for schedulers.

``record(name, value)`` displays a value under a custom mimetype; tests read it back from the executed
notebook with :func:`read_records` (nbformat), without parsing printed text.

A run ends with status ``ok``, ``warning`` or ``critical`` (its worst finding), or ``error`` when it
stopped before its verdict (bad input, a Spark failure): then the summary names the error's one-line
message and the statement that raised it (:func:`record_error`).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from state_runbooks import __version__
from state_runbooks.common.errors import RunbookError, RunbookFailed, first_line
from state_runbooks.common.locations import refuse_own_folder

RECORD_MIMETYPE = "application/vnd.state-runbooks.record+json"
SEVERITIES = ("info", "warning", "critical")
STATUSES = ("ok", "warning", "critical", "error")
# "error" is no fail_on level: a run that stopped with an error fails whatever fail_on says.
FAIL_ON = ("never", "warning", "critical")


def _jsonable(value):
    """Plain JSON types: numpy scalars, tuples and NaN made safe for json.dumps."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def record(name: str, value) -> None:
    """Attach ``value`` to the notebook's output under ``name`` (shown as nothing to a reader)."""
    from IPython.display import display
    # The empty text/plain is what Jupyter, nbconvert and Databricks render: nothing.
    display({RECORD_MIMETYPE: {"name": name, "value": _jsonable(value)}, "text/plain": ""},
            raw=True)


def read_records(notebook) -> dict:
    """All recorded values of an executed notebook (a path or an nbformat node), by name."""
    import nbformat
    nb = nbformat.read(str(notebook), as_version=4) if not hasattr(notebook, "cells") else notebook
    out = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if RECORD_MIMETYPE in data:
                item = data[RECORD_MIMETYPE]
                out[item["name"]] = item["value"]
    return out


@dataclass(frozen=True)
class Finding:
    """What one check found: the one shape every runbook's checks yield, and the summary lists."""
    code: str  # short, stable, for alert routing: e.g. "partition_skew"
    severity: str  # info, warning, critical
    message: str  # one sentence with the evidence
    details: dict = field(default_factory=dict)  # figures behind it, for a scheduler (JSON-ready)

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity {self.severity!r} is not one of {SEVERITIES}")

    def line(self) -> str:
        return f"[{self.severity}] {self.code}: {self.message}"

    def to_dict(self) -> dict:
        out = {"severity": self.severity, "code": self.code, "message": self.message}
        return {**out, "details": self.details} if self.details else out


@dataclass
class Summary:
    """The JSON summary of one run: common keys plus the runbook's own in ``details``."""
    runbook: str
    checkpoint_path: str
    spark_version: str
    findings: list[Finding] = field(default_factory=list)
    details: dict = field(default_factory=dict)
    error: dict | None = None  # type, message, step: set when the run stopped before its verdict
    # Set when the run was asked to change a checkpoint and the change did not happen as asked
    # (refused, or not verified): the run then fails whatever fail_on says.
    change_failed: str | None = None
    # The installed package's version: its library and its notebooks are released together, so a
    # scheduled run's summary says which runbooks produced it.
    runbook_version: str = __version__

    def set_error(self, error_type: str, message: str, step: str) -> None:
        """The run stopped with an error (its class name and one-line message) at ``step`` before
        its verdict: status ``error``."""
        self.error = {"type": error_type, "message": message, "step": step}

    def add_finding(self, severity: str, code: str, message: str, details: dict | None = None
                    ) -> None:
        self.add(Finding(code, severity, message, details or {}))

    def add(self, finding: Finding) -> None:
        self.findings.append(finding)

    @property
    def status(self) -> str:
        if self.error:
            return "error"
        severities = {f.severity for f in self.findings}
        return "critical" if "critical" in severities else \
            "warning" if "warning" in severities else "ok"

    def to_dict(self) -> dict:
        error = {"error": self.error} if self.error else {}
        failed = {"change_failed": self.change_failed} if self.change_failed else {}
        return _jsonable({"runbook": self.runbook, "status": self.status,
                          "checkpoint_path": self.checkpoint_path,
                          "spark_version": self.spark_version,
                          "runbook_version": self.runbook_version,
                          "findings": [f.to_dict() for f in self.findings], **error, **failed,
                          **self.details})


def check_fail_on(fail_on: str) -> str:
    if fail_on not in FAIL_ON:
        raise RunbookError(f"fail_on={fail_on!r} is not valid: use 'never', 'warning' or 'critical'")
    return fail_on


def reaches(status: str, fail_on: str) -> bool:
    """Whether a run with ``status`` should fail under ``fail_on`` (``error`` reaches every level
    but ``never``; an error fails the run by itself anyway)."""
    check_fail_on(fail_on)
    if fail_on == "never":
        return False
    return STATUSES.index(status) >= STATUSES.index(fail_on)


def is_uri(path: str) -> bool:
    """Whether ``path`` names a file system (``s3a://b/x``, ``dbfs:/x``, ``file:/x``) rather than a
    local path (``/x``, ``out/x``, ``/Volumes/...``, ``C:\\x``)."""
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]+:", path) is not None


def local_file(path: str):
    """The local file a summary path names (``out/s.json``, ``file:/x``), or None for a file system
    URI (``s3a://b/x``, ``dbfs:/x``)."""
    import pathlib
    if is_uri(path) and not path.startswith("file:"):
        return None
    return pathlib.Path(path.removeprefix("file://").removeprefix("file:"))


def write_summary(summary: Summary, path: str, spark=None) -> str:
    """Write the summary JSON to a local path, or to a file system URI through the session's file
    access (Hadoop's FileSystem on classic sessions, ``dbutils.fs`` on Databricks' Connect)."""
    text = json.dumps(summary.to_dict(), indent=2, sort_keys=False) + "\n"
    refuse_own_folder(path, "summary_path")
    local = local_file(path)
    if local is None:
        from state_runbooks.core.fs import open_fs
        if spark is None:
            raise RunbookError(f"writing the summary to {path} needs a Spark session")
        parent, name = path.rstrip("/").rsplit("/", 1)
        fs = open_fs(spark, parent)
        if not fs.can_modify:
            raise RunbookError(f"cannot write the summary to {path} from a Spark Connect session "
                               "outside Databricks: give summary_path a local path")
        fs.write_bytes(name, text.encode("utf-8"), overwrite=True)
        return path
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_text(text, encoding="utf-8")
    return str(local)


def finish(summary: Summary, summary_path: str = "", fail_on: str = "never", spark=None) -> dict:
    """Record the summary, write it if asked, and fail the run if its status reaches ``fail_on``,
    or if a change it was asked to make did not happen (a scheduler must not read it as done)."""
    data = summary.to_dict()
    record("summary", data)
    if summary_path:
        write_summary(summary, summary_path, spark)
    if summary.change_failed:
        raise RunbookFailed(f"{summary.runbook}: the change asked for did not happen: "
                            f"{summary.change_failed}")
    if reaches(summary.status, fail_on):
        codes = ", ".join(f.code for f in summary.findings if f.severity != "info")
        raise RunbookFailed(f"{summary.runbook}: status {summary.status} reaches "
                            f"fail_on={fail_on} ({codes})")
    return data


def failing_step(cell_source: str, line: int | None) -> str:
    """The statement of a notebook cell that raised (its ``line``, 1-based), as one short line; the
    cell's first statement when the line is not known."""
    lines = cell_source.splitlines()
    if line is None or not 1 <= line <= len(lines):
        lines = [s for s in lines if s.strip() and not s.lstrip().startswith(("#", "from ", "import "))]
        line = 1
    text = lines[line - 1].strip() if lines else ""
    return text if len(text) <= 120 else text[:117] + "..."


def record_error(summary: Summary, exc: BaseException, step: str, summary_path: str = "",
                 spark=None) -> dict:
    """In a notebook: mark the run as stopped by ``exc`` at ``step`` (status ``error``), record the
    summary and write it if asked. Findings made before the error stay."""
    summary.set_error(type(exc).__name__, first_line(exc), step)
    data = summary.to_dict()
    record("summary", data)
    if summary_path:
        write_summary(summary, summary_path, spark)
    return data
