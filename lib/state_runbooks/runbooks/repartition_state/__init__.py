"""The repartition-state runbook (07): move a query's state to another partition count with
Spark's offline repartition (4.2+), safely.

One module per concern:

- :mod:`.checks`: what Spark requires, each requirement checked on the checkpoint;
- :mod:`.forecast`: rows per partition now and after (Spark's placement rule, checked on every
  row), and a checksum of every state row;
- :mod:`.apply`: back up and journal (:mod:`state_runbooks.safety.safekeeping`, shared with 05), call
  Spark, verify, undo on its own when not verified; ``undo``;
- :mod:`.report`: the lines a reader sees, the alternatives where Spark cannot, the summary, and
  what the demo showed;
- :mod:`.demo`: the demo's query continued on the new count, next to a run never repartitioned.
"""
from .apply import BACKUP_MARK, MODES, REPARTITION, Repartitioned, check_mode, repartition, undo
from .checks import (
    MIN_SPARK,
    VERIFIED_FAMILIES,
    Checks,
    Requirement,
    check_requirements,
    current_partitions,
)
from .demo import Continued, continue_demo
from .forecast import UnitScan, forecast, rows_equal, scan_state, scan_unit
from .report import (
    alternatives_lines,
    forecast_lines,
    requirement_lines,
    summarize,
    what_this_showed,
)

__all__ = [
    "BACKUP_MARK", "MODES", "REPARTITION", "Repartitioned", "check_mode", "repartition", "undo",
    "Continued", "continue_demo",
    "MIN_SPARK", "VERIFIED_FAMILIES", "Checks", "Requirement", "check_requirements",
    "current_partitions",
    "UnitScan", "forecast", "rows_equal", "scan_state", "scan_unit",
    "alternatives_lines", "forecast_lines", "requirement_lines", "summarize", "what_this_showed",
]
