"""The repartition-state runbook (07): move a query's state to another partition count with
Spark's offline repartition (4.2+), safely.

One module per concern:

- :mod:`.checks`: what Spark requires, each requirement checked on the checkpoint;
- :mod:`.forecast`: rows per partition now and after (Spark's placement rule, checked on every
  row), and a checksum of every state row;
- :mod:`.apply`: the change through the procedure every changing runbook follows
  (:mod:`state_runbooks.safety.change`): Spark's call and its verification; ``undo``;
- :mod:`.report`: the lines a reader sees, the alternatives where Spark cannot, the summary, and
  what the demo showed;
- :mod:`.demo`: the demo, and the whole way on it: repartitioned, its query continued on the new
  count next to a run never repartitioned, and undone.
"""
from state_runbooks.safety.requirements import requirement_lines

from .apply import REPARTITION, Repartitioned, repartition, undo
from .checks import check_requirements
from .demo import DEMO, DemoResult, run_demo
from .exercise import try_it
from .forecast import forecast
from .report import alternatives_lines, forecast_lines, summarize, what_this_showed

__all__ = [
    "try_it",
    "REPARTITION", "Repartitioned", "repartition", "undo",
    "DEMO", "DemoResult", "run_demo",
    "check_requirements", "forecast", "requirement_lines",
    "alternatives_lines", "forecast_lines", "summarize", "what_this_showed",
]
