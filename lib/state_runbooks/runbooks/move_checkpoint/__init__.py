"""The move-checkpoint runbook (12): carry a stopped query's checkpoint, with all its state, onto
a new source (a Kafka topic recreated or moved, a file folder moved, a source swapped for
another) or to a new place (another folder, bucket or workspace), by the formats Spark reads.

One module per concern:

- :mod:`.what_moves`: the checkpoint against the job as it will run after the move (08's
  comparison): the sources that move, and Spark's check that the state does not;
- :mod:`.start`: where a moved source starts, in its own offset format and log;
- :mod:`.checks`: what the move requires, each requirement checked;
- :mod:`.rewrite`: the files the move writes and the ones they replace;
- :mod:`.apply`: the move through the procedure every change follows
  (:mod:`state_runbooks.safety.change`); ``undo``;
- :mod:`.verify`: the files compared, and the job restarted on a copy of the result;
- :mod:`.report`: the lines a reader sees, the summary, what the demo showed;
- :mod:`.demo`: a file source's folder moved, the job continued and compared with a run that
  never moved.
"""
from state_runbooks.query.job import load_job
from state_runbooks.safety.requirements import requirement_lines

from .apply import MOVE, Moved, move, undo
from .checks import MOVES, Checks, check_move_kind, check_requirements
from .demo import DEMO, DEMO_FUNCTION, DEMO_JOB_FILE, DemoResult, job_to_move, prepare_demo, run_demo
from .exercise import try_it
from .report import (
    alternatives_lines,
    comparison_lines,
    demo_lines,
    summarize,
    what_this_showed,
)
from .start import NewStart, plan_start
from .what_moves import Moves, compare_move

__all__ = [
    "load_job", "requirement_lines",
    "MOVE", "Moved", "move", "undo",
    "MOVES", "Checks", "check_move_kind", "check_requirements",
    "DEMO", "DEMO_FUNCTION", "DEMO_JOB_FILE", "DemoResult", "job_to_move", "prepare_demo",
    "run_demo",
    "try_it",
    "alternatives_lines", "comparison_lines", "demo_lines", "summarize", "what_this_showed",
    "NewStart", "plan_start",
    "Moves", "compare_move",
]
