"""The recover-corrupted-state runbook (05): diagnose a checkpoint, roll it back, undo.

Its diagnosis is shared with 13 fleet health, so it lives below the runbooks, in
:mod:`state_runbooks.safety.diagnosis`: what the files say (``structure``: logs, partition
folders, the files each version needs), damage to the logs and metadata files beside the state
(``log_damage``), and the load test, the last good batch and the file at fault (``diagnose``).

One module per concern of its own:

- :mod:`.plan`: what a rollback moves;
- :mod:`.apply`: rollback and undo, through the procedure every changing runbook follows;
- :mod:`.demo`: the demo, broken on purpose at set-up (``break_demo``, start_runbook's
  ``prepare_demo``), and the whole way back on a copy, from the main step's diagnosis
  (``run_demo``);
- :mod:`.report`: the lines a reader sees, the run summary (of a ``Recovery``) and what the demo
  showed;

Below it: Spark's loads and what a failed one means (:mod:`state_runbooks.core.state_loads`), the
activity guard and the safekeeping of every change (:mod:`state_runbooks.safety`), the faults its
demo injects (:mod:`state_runbooks.demos.faults`).

"Critical" and a rollback plan need evidence that Spark's store code cannot load the state; a
shape the reader cannot read is "unknown" and nothing is planned.
"""
from .apply import ROLLBACK, Checks, Outcome, check_rollback, rollback, undo
from .demo import DEMO, BrokenDemo, DemoResult, break_demo, run_demo
from state_runbooks.safety.diagnosis.diagnose import Diagnosis, Probe, diagnose, linear_scan
from .exercise import try_it
from .plan import REPLAY_FROM_START, Plan, plan_lines, plan_rollback
from .report import (
    Recovery,
    bisection_lines,
    load_lines,
    options_lines,
    problem_lines,
    source_offsets_lines,
    structure_lines,
    summarize,
    undo_lines,
    way_back_lines,
    what_this_showed,
)
from state_runbooks.safety.diagnosis.structure import Problem

__all__ = [
    "try_it",
    "ROLLBACK", "Checks", "Outcome", "check_rollback", "rollback", "undo",
    "DEMO", "BrokenDemo", "DemoResult", "break_demo", "run_demo",
    "Diagnosis", "Probe", "diagnose", "linear_scan",
    "REPLAY_FROM_START", "Plan", "plan_lines", "plan_rollback",
    "bisection_lines", "load_lines", "options_lines", "problem_lines", "source_offsets_lines",
    "structure_lines", "summarize", "what_this_showed", "Recovery", "undo_lines",
    "way_back_lines", "Problem",
]
