"""Runbook 06 (monitor state): a query's state metrics over time, from the Spark event log or a
query running in this session.

- ``codecs``: the uncompressed lines of event log files in Spark's zstd, lz4 and snappy framings
- ``event_log``: find applications' logs at a path and read their streaming progress events
- ``listener``: watch an active query of this session through a ``StreamingQueryListener``
- ``history``: progress objects -> tables per batch and per (batch, operator)
- ``verdicts``: growth, late rows, commit time, memory, falling behind, RocksDB: each a
  ``Finding`` with its evidence
- ``monitor``: the steps: the source read into a history (``read_history``), and judged
  (``judge_run``)
- ``demo``: the demo's event log, written by a query in a child process
- ``report``: the summary, and what the demo showed (``what_this_showed``)

Its demo's event logs are written by :mod:`state_runbooks.demos.event_logs`.
"""
from .demo import DEMO, run_demo
from .exercise import try_it
from .monitor import (
    Monitored,
    MonitorRun,
    judge_run,
    plot,
    read_history,
    refusal,
    start_options,
    state_table,
)
from .report import summarize, what_this_showed
from .verdicts import (
    Thresholds,
    commit_share,
    falling_behind,
    growth,
    judge,
    late_rows,
    memory,
    rocksdb,
)

__all__ = [
    "try_it",
    "DEMO", "run_demo",
    "Monitored", "MonitorRun", "judge_run", "plot", "read_history", "refusal", "start_options",
    "state_table",
    "summarize", "what_this_showed",
    "Thresholds", "commit_share", "falling_behind", "growth", "judge", "late_rows", "memory",
    "rocksdb",
]
