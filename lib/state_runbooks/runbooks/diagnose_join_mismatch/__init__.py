"""The diagnose-join-mismatch runbook (04): why did a key not come out of a stream-stream join?

Spark's symmetric hash join keeps, per side, every input row that may still find a match in
``<side>-keyWithIndexToValue`` (key: the join key plus an index; value: the row plus ``matched``).
Rows leave that store only when the watermark evicts them. So the history of that store (the state
change feed, or the state of every retained batch compared one by one) tells, for every join key and
side: the event times and ``matched`` of every row it held, when it first arrived, whether it is in
the state of the diagnosed batch, and if not, in which batch the watermark removed it.

Each key gets one category, its root cause, decided on that evidence (see ``CATEGORIES``). All keys
are classified by one Spark aggregation over both sides' history, read in one pass and kept by
Spark (``key_history``): the time bounds, the counts, the examples and the keys asked about all
reuse it. Only the keys shown are collected. With the change feed, the state of the diagnosed batch
is not read apart: each slot's last change in the feed is what the state holds, exactly (loading
the state of 200 RocksDB partitions costs several times more than their changelogs).

One module per concern:

- :mod:`.spec`: the join as read from the checkpoint (``JoinSpec``, ``JoinSide``, ``TimeBounds``)
- :mod:`.history`: the state history of both sides' stores, its rows and its figures per key
- :mod:`.pairs`: the time condition on a key's pairs of event times
- :mod:`.classification`: the categories, decided for every key by Spark (``classify``)
- :mod:`.resolve`: the parameters checked against the checkpoint, the time bounds read from it
- :mod:`.verdicts`: ``diagnose`` and its ``Diagnosis``; each key's ``KeyVerdict`` (its category
  and evidence), explained; the keys a run shows (``show_keys``)
- :mod:`.demo`: the demo checkpoint's spec, and the classic examples rebuilt on it (``run_demo``)
- :mod:`.report`: the counts, the per-key table, the run summary and what the demo showed
"""
from state_runbooks.common.spark_settings import WATERMARK_DELAY_METADATA

from .classification import CATEGORIES, UNDECIDED, classify
from .demo import DEMO, DemoResult, run_demo
from .exercise import try_it
from .history import (
    CHANGE_FEED,
    KEY_SAMPLE_ROWS,
    METHODS,
    RETAINED_BATCHES,
    history_method,
    history_rows,
    key_history,
    method_reason,
    unreadable_reason,
)
from .pairs import PAIR_CHECKED, closest_pair
from .report import (
    counts_lines,
    counts_title,
    summarize,
    times_line,
    verdicts_table,
    what_this_showed,
)
from .resolve import (
    NO_SUCH_COLUMN,
    resolve_join,
    time_bounds_from_checkpoint,
    time_column_refusal,
)
from .spec import (
    JOIN_OPERATOR,
    ROWS_STORE,
    SIDES,
    JoinSide,
    JoinSpec,
    TimeBounds,
    find_join_operator,
    join_operators,
)
from .verdicts import (
    Diagnosis,
    KeyVerdict,
    ShownKeys,
    common_day,
    diagnose,
    explain,
    show_keys,
)

__all__ = [
    "try_it",
    "JOIN_OPERATOR", "ROWS_STORE", "SIDES", "JoinSide", "JoinSpec", "TimeBounds",
    "find_join_operator", "join_operators",
    "CHANGE_FEED", "KEY_SAMPLE_ROWS", "METHODS", "RETAINED_BATCHES", "history_method",
    "history_rows", "key_history", "method_reason", "unreadable_reason",
    "PAIR_CHECKED", "closest_pair",
    "CATEGORIES", "UNDECIDED", "classify",
    "DEMO", "DemoResult", "run_demo",
    "WATERMARK_DELAY_METADATA", "NO_SUCH_COLUMN", "resolve_join", "time_bounds_from_checkpoint",
    "time_column_refusal",
    "Diagnosis", "KeyVerdict", "ShownKeys", "common_day", "diagnose", "explain", "show_keys",
    "counts_lines", "counts_title", "summarize", "times_line", "verdicts_table", "what_this_showed",
]
