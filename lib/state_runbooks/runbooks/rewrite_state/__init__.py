"""The rewrite-state runbook (09): rewrite a stopped query's state with Spark's state rewriter
(4.2+, internal): move it to RocksDB keeping every row, drop chosen keys, in place or at a new
location.

One module per concern:

- :mod:`.rewriter`: the JVM class checked by reflection, the call, the transform callback;
- :mod:`.checks`: what a rewrite requires, each requirement checked on the checkpoint;
- :mod:`.plan`: rows per store now, the rows a drop takes, the rows after;
- :mod:`.transforms` and :mod:`.encoding`: the rows handed to Spark's writer;
- :mod:`.location`: the new batch's offsets entry and commit, a new location's logs;
- :mod:`.apply`: the change through the procedure every changing runbook follows
  (:mod:`state_runbooks.safety.change`): Spark's call and its verification; ``undo``;
- :mod:`.verify`: every store row by row, the pinned provider read back;
- :mod:`.report`: the lines a reader sees, the alternatives where Spark cannot, the summary, and
  what the demo showed;
- :mod:`.demo`: the demo, the whole way: the move continued beside a copy never rewritten, the
  deduplication demo's drop, continued and undone.
"""
from state_runbooks.safety.requirements import check_target_provider, requirement_lines

from .apply import REWRITE, Rewritten, rewrite, undo
from .checks import check_requirements
from .demo import DEMO, DemoResult, demo_move, run_demo
from .exercise import try_it
from .plan import plan_unless_active
from .report import (
    again_lines,
    alternatives_lines,
    pinned_lines,
    plan_lines,
    summarize,
    what_this_showed,
)

__all__ = [
    "try_it",
    "REWRITE", "Rewritten", "rewrite", "undo",
    "DEMO", "DemoResult", "demo_move", "run_demo",
    "check_requirements", "check_target_provider", "requirement_lines",
    "plan_unless_active",
    "again_lines", "alternatives_lines", "pinned_lines", "plan_lines", "summarize",
    "what_this_showed",
]
