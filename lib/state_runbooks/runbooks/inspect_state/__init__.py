"""The inspect-state runbook (03): per-unit figures, skew, hot keys, expiry and the production
checklist of a streaming checkpoint.

A unit is what Spark's ``statestore`` reader reads (``core.operators.state_units``): a store, a
join side's store, a state variable of transformWithState or its registered timers. The scan of
each unit (:class:`StoreReport`, :func:`inspect_stores`) is the core's
(``state_runbooks.core.store_scan``), shared with 02 estimate state size.

Step 0's outline of the checkpoint (its folders, its batches) is the core's
(``state_runbooks.core.outline``): every runbook's checkpoint is laid out alike.

One module per concern:

- :mod:`state_runbooks.running.checklist` (shared with 13 fleet health, so below the
  runbooks): the production checklist, each item a finding decided by the checkpoint's own
  facts, and the inspection's one result;
- :mod:`.python_apis`: PySpark's stateful APIs and their state as the reader shows it (demo);
- :mod:`.demo`: the demo checkpoint, and the demo-only steps (a session window, the Python APIs);
- :mod:`.report`: tables and sentences for the notebook (operators, units, figures, hot keys,
  expiry), the run summary and what the demo showed.

The names the notebook and its callers use are importable from here.
"""
from state_runbooks.core.growth import growth, method_lines
from state_runbooks.core.outline import (
    batch_timeline,
    folder_outline,
    outline_lines,
    timeline_lines,
    timeline_table,
)
from state_runbooks.core.state_limits import HDFS_STATE_ROWS
from state_runbooks.core.store_scan import (
    MULTI_ROW_STORE_SUFFIX,
    SKEW_MIN_ROWS_PER_PARTITION,
    SKEW_WARNING_RATIO,
    StoreReport,
    event_time_column,
    inspect_store,
    inspect_stores,
    inspect_unit,
    skew_ratio,
    unreadable_report,
)

from state_runbooks.running.checklist import (
    WATERMARK_RULES,
    Inspection,
    checklist_lines,
    production_checklist,
    retention_check,
)
from .demo import DEMO, DemoResult, run_demo
from .exercise import try_it
from .python_apis import api_presence, python_state_demos, python_state_lines
from .report import (
    expiry_lines,
    hot_keys_lines,
    operator_lines,
    operators_table,
    reader_lines,
    stores_table,
    summarize,
    units_table,
    what_this_showed,
)

__all__ = [
    "batch_timeline", "folder_outline", "outline_lines", "timeline_lines", "timeline_table",
    "try_it", "DEMO", "DemoResult", "run_demo", "growth", "method_lines",
    "HDFS_STATE_ROWS", "MULTI_ROW_STORE_SUFFIX", "SKEW_MIN_ROWS_PER_PARTITION",
    "SKEW_WARNING_RATIO", "StoreReport", "event_time_column", "inspect_store", "inspect_stores",
    "inspect_unit", "skew_ratio", "unreadable_report",
    "WATERMARK_RULES", "Inspection", "checklist_lines", "production_checklist", "retention_check",
    "expiry_lines", "hot_keys_lines", "operator_lines", "operators_table", "reader_lines",
    "stores_table", "summarize", "units_table", "what_this_showed",
    "api_presence", "python_state_demos", "python_state_lines",
]
