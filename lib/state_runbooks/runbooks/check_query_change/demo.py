"""The demo: the checkpoint of ``events_per_window.build`` and three changes to it, each judged,
predicted and rehearsed: one Spark accepts, one it rejects, one whose setting it overrides."""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.spark_settings import SHUFFLE_PARTITIONS_CONF
from state_runbooks.core.fs import tree_checksums
from state_runbooks.demos.jobs import events_per_window
from state_runbooks.query.job import load_job
from state_runbooks.running.parameters import check_not_placeholder

from .check import Check, check_query_change

DEMO_JOB_FILE = events_per_window.__file__
# The demo checkpoint: the job's query, 3 batches of 10 rows, on 2 partitions.
DEMO = {"workload": "window_agg", "batches": 3, "rows_per_batch": 10, "partitions": 2}
CHANGES = (
    ("build_filtered", "a filter before the aggregation, a column after it"),
    ("build_with_max", "a new aggregate, max(amount)"),
    ("build_more_partitions", f"{SHUFFLE_PARTITIONS_CONF} set to 8"),
)


# What Spark does with each change, where every check ran: (status, restart, error class,
# ignored settings). Where one could not run (Spark Connect, no copy, rehearse=False) the
# answer is "unknown", never "restarts".
EXPECTED = {
    "build_filtered": ("ok", "restarts", None, []),
    "build_with_max": ("critical", "fails", "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE", []),
    "build_more_partitions": ("warning", "restarts", None, [SHUFFLE_PARTITIONS_CONF]),
}


@dataclass
class DemoChange:
    function: str
    description: str
    check: Check


def run_demo_changes(spark, ckpt, rehearse_change: bool = True) -> list[DemoChange]:
    out = []
    for function, description in CHANGES:
        job = load_job(spark, DEMO_JOB_FILE, function)
        out.append(DemoChange(function, description,
                              check_query_change(spark, ckpt, job, rehearse_change)))
    return out


@dataclass
class DemoResult:
    """Everything the demo did, for :func:`~.report.what_this_showed`."""
    changes: list[DemoChange]  # the demo job's three changes, each judged (and rehearsed)
    files: int  # the checkpoint's files, sidecars included
    unchanged: bool  # their checksums after the three checks equal the ones before


def run_demo(rb, check: Check) -> DemoResult:
    """The demo's three changes on its checkpoint (``rb``: what ``start_runbook`` returned),
    rehearsed where the notebook's own check was (``check``), the checkpoint's files hashed
    before and after."""
    spark, ckpt = rb.spark, rb.checkpoint
    before = tree_checksums(spark, ckpt.root)
    changes = run_demo_changes(spark, ckpt, check.rehearse_asked)
    return DemoResult(changes, len(before), tree_checksums(spark, ckpt.root) == before)


def demo_verdicts(changes: list[DemoChange]) -> dict:
    """Each change's (status, restart, error class, ignored settings)."""
    return {c.function: (c.check.status, c.check.restart, c.check.error_class,
                         c.check.ignored_settings) for c in changes}


def expected_demo_verdicts(changes: list[DemoChange]) -> dict:
    """:data:`EXPECTED` where every check of a change ran; else ``unknown``, a warning."""
    out = {}
    for c in changes:
        every = not c.check.verdict.not_checked
        status, restart, error, ignored = EXPECTED[c.function]
        out[c.function] = ((status, restart, error, ignored) if every or restart == "fails"
                           and c.check.probe.available else
                           ("warning", "unknown", None, ignored))
    return out


def demo_lines(changes: list[DemoChange]) -> list[str]:
    lines = []
    for c in changes:
        check = c.check
        agree = ("rehearsal agrees" if check.rehearsed and not check.disagreement else
                 check.disagreement or "not rehearsed")
        if check.restart == "unknown":
            agree = "not checked here: " + ", ".join(n.split(":")[0]
                                                      for n in check.verdict.not_checked)
        lines.append(f"{c.function} ({c.description}): {check.status}, {check.restart}"
                     + (f" with {check.error_class}" if check.error_class else "")
                     + (f", ignored: {', '.join(check.ignored_settings)}"
                        if check.ignored_settings else "") + f"; {agree}")
    return lines


def job_to_check(is_demo: bool, query_file: str, query_function: str) -> tuple[str, str]:
    """The job file and function to check: the ones given, or on the demo its job file with the
    function given (the exercise's ``-p query_function build_deduplicated``), by default its
    rejected change."""
    check_not_placeholder("query_file", query_file)
    if str(query_file or "").strip():
        return query_file, query_function
    if is_demo:
        chosen = str(query_function or "").strip()
        return DEMO_JOB_FILE, chosen if chosen not in ("", "build") else "build_with_max"
    raise RunbookError("query_file is empty: pass the job's Python file whose function "
                       f"{query_function or 'build'}(spark) returns the changed query")
