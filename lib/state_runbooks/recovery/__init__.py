"""The recover-corrupted-state runbook (05): diagnose a checkpoint, roll it back, undo.

One module per concern:

- :mod:`.structure`: what the files say (logs, partition folders, the files each version needs);
- :mod:`.loads`: Spark's own loads of every unit of the operator model, and what their errors mean;
- :mod:`.diagnose`: the load test, the last good batch, the file at fault;
- :mod:`.plan`: what a rollback moves;
- :mod:`.activity`: whether a query still writes to the checkpoint;
- :mod:`.apply`: rollback and undo, journaled, byte for byte;
- :mod:`.report`: the lines a reader sees and the run summary;
- :mod:`.faults`: breaking, copying and comparing demo checkpoints (demos and tests).

"Critical" and a rollback plan need evidence that Spark's store code cannot load the state; a
shape the reader cannot read is "unknown" and nothing is planned.
"""
from .activity import QUIET_MINUTES, Activity, check_activity, trigger_interval_ms
from .apply import (BACKUP_MARK, JOURNAL_NAME, MODES, Outcome, cannot_modify, check_mode,
                    default_backup_dir, find_journal, read_journal, rollback, undo)
from .diagnose import Diagnosis, Probe, diagnose, linear_scan
from .faults import (FAULTS, compare_state, copy_tree, inject_fault, restart_demo,
                     restart_without_state_folder, spark_error_text, state_rows, tree_checksums)
from .loads import (LoadResult, is_store_load_failure, load_batch, load_store, load_unit,
                    load_units)
from .plan import REPLAY_FROM_START, Plan, plan_lines, plan_rollback
from .report import (bisection_lines, load_lines, options_lines, problem_lines,
                     source_offsets_lines, structure_lines, summarize)
from .structure import Problem

__all__ = [
    "QUIET_MINUTES", "Activity", "check_activity", "trigger_interval_ms",
    "BACKUP_MARK", "JOURNAL_NAME", "MODES", "Outcome", "cannot_modify", "check_mode",
    "default_backup_dir", "find_journal", "read_journal", "rollback", "undo",
    "Diagnosis", "Probe", "diagnose", "linear_scan",
    "FAULTS", "compare_state", "copy_tree", "inject_fault", "restart_demo",
    "restart_without_state_folder", "spark_error_text", "state_rows", "tree_checksums",
    "LoadResult", "is_store_load_failure", "load_batch", "load_store", "load_unit", "load_units",
    "REPLAY_FROM_START", "Plan", "plan_lines", "plan_rollback",
    "bisection_lines", "load_lines", "options_lines", "problem_lines", "source_offsets_lines",
    "structure_lines", "summarize", "Problem",
]
