"""The trace-key runbook (11): one key through a checkpoint's state: the partition it lives in,
what each batch did to it, and why it is (or is not) there.

One module per concern:

- :mod:`.condition`: what ``key_where`` fixes, from a parse of it as Spark SQL;
- :mod:`.locate`: the key's partition by Spark's rule, and reads of that partition alone;
- :mod:`.history`: the rows matched at every batch of the range (the change feed replayed, or
  each batch read), and what each batch did;
- :mod:`.verdict`: present, evicted, removed or never seen, in one line;
- :mod:`.trace`: every unit asked for, placed, read and judged;
- :mod:`.report`: the lines a reader sees, the summary, what the demo showed;
- :mod:`.demo`: three keys of a windowed count traced.
"""
from .condition import check_key_where, fixed_columns, key_where_for
from .demo import DEMO, EVICTED, NEVER_SEEN, DemoTraces, present_key, run_demo
from .exercise import try_it
from .history import Change, UnitTrace
from .report import (
    history_lines,
    placement_lines,
    summarize,
    verdict_lines,
    what_this_showed,
)
from .trace import Trace, trace_key
from .verdict import STATUSES, KeyStatus

__all__ = [
    "check_key_where", "fixed_columns", "key_where_for",
    "DEMO", "EVICTED", "NEVER_SEEN", "DemoTraces", "present_key", "run_demo",
    "try_it",
    "Change", "UnitTrace",
    "history_lines", "placement_lines", "summarize", "verdict_lines", "what_this_showed",
    "Trace", "trace_key",
    "STATUSES", "KeyStatus",
]
