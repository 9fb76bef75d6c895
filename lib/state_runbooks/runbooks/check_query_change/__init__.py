"""The check-query-change runbook (08): will this query change restart on this checkpoint?

One module per concern:

- :mod:`.load_job`: import the job's own file, call its function, take the query apart;
- :mod:`.layout` and :mod:`.schemas`: the checkpoint's operators and state schemas, and Spark's
  compatibility rule;
- :mod:`.plan_text`: the changed query's sources, watermarks and operators from its plan;
- :mod:`.pinned_settings`: what the checkpoint pins against what the job sets;
- :mod:`.spark_check`: Spark's own restart checks, called by planning the changed query;
- :mod:`state_runbooks.query.sources` and :mod:`state_runbooks.query.source_changes` (shared
  with 12): the sources of both sides, and what a restart does with each change;
- :mod:`.compare`: old against new, a row per aspect graded with Spark's rule;
- :mod:`state_runbooks.query.rehearsal` (shared with 12): the changed query restarted for one batch on a scratch copy;
- :mod:`.verdict`: the one rule (restarts, fails or unknown) and the rows it decides;
- :mod:`.check`: all of it in order; :mod:`.report`: lines, summary and what the demo showed;
- :mod:`.demo`: the demo job's three changes.
"""
from state_runbooks.query.job import DEFAULT_FUNCTION, JobQuery, load_job

from .check import Check, add_rehearsal, check_query_change, halves
from .demo import (
    CHANGES,
    DEMO,
    DEMO_JOB_FILE,
    DemoChange,
    DemoResult,
    demo_lines,
    demo_verdicts,
    expected_demo_verdicts,
    job_to_check,
    run_demo,
)
from .exercise import try_it
from .report import (
    checks_lines,
    ignored_lines,
    prediction_line,
    rehearsal_lines,
    side_by_side_lines,
    summarize,
    summary_details,
    verdict_line,
    verdict_lines,
    what_this_showed,
)

__all__ = [
    "try_it",
    "Check", "add_rehearsal", "check_query_change", "halves", "job_to_check",
    "CHANGES", "DEMO", "DEMO_JOB_FILE", "DemoChange", "DemoResult", "demo_lines",
    "demo_verdicts", "expected_demo_verdicts", "run_demo",
    "DEFAULT_FUNCTION", "JobQuery", "load_job",
    "checks_lines", "ignored_lines", "prediction_line", "rehearsal_lines", "side_by_side_lines",
    "summarize",
    "summary_details", "verdict_line", "verdict_lines", "what_this_showed",
]
