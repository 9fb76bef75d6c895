"""The fleet-health runbook (13): every checkpoint under a root (or several, or a file of paths),
examined read-only in one run, each with the status the single-checkpoint runbooks give it, the
finding that needs a person and the runbook to open next, and its trend across runs from a
history table.

One module per concern:

- :mod:`.roots`: the roots given and every checkpoint under them, broken look-alikes included
  (``core.discovery``);
- :mod:`.thresholds`: the thresholds, their defaults and a YAML/JSON mapping over them;
- :mod:`.examine`: one checkpoint: its figures, and the findings of 05's diagnosis and 03's
  checklist, each guarded (a check that cannot run makes the checkpoint ``unknown``);
- :mod:`.next_runbook`: the runbook a finding sends a person to, its parameters filled in;
- :mod:`.fleet`: the run: discovery, concurrent examinations, growth, the history appended once;
- :mod:`.history`: the history table (Parquet, Delta or a catalog table, written by Spark) and
  each checkpoint's growth since the runs before;
- :mod:`.demo`: a root of a dozen demo checkpoints, four of them in trouble, and two runs;
- :mod:`.report`: the fleet table, plots, the JSON summary, what the demo showed;
- :mod:`.exercise`: ``try_it``.
"""
from .demo import DEMO, DemoResult, build_demo_fleet, run_demo, start_demo
from .examine import STATUSES, Examination, examine
from .exercise import try_it
from .fleet import FleetRun, run_fleet
from .history import read_history
from .report import fleet_table, next_steps, plot_fleet, status_lines, summarize, what_this_showed
from .roots import find_checkpoints, roots_of
from .thresholds import Thresholds, load_thresholds

__all__ = ["DEMO", "DemoResult", "Examination", "FleetRun", "STATUSES", "Thresholds",
           "build_demo_fleet", "examine", "find_checkpoints", "fleet_table", "load_thresholds",
           "next_steps", "plot_fleet", "read_history", "roots_of", "run_demo", "run_fleet", "start_demo",
           "status_lines", "summarize", "try_it", "what_this_showed"]
