"""Runbook 06 (monitor state): a query's state metrics over time, from the Spark event log or a
query running in this session.

- ``codecs``: the uncompressed lines of event log files in Spark's zstd, lz4 and snappy framings
- ``event_log``: find applications' logs at a path and read their streaming progress events
- ``listener``: watch an active query of this session through a ``StreamingQueryListener``
- ``history``: progress objects -> tables per batch and per (batch, operator)
- ``verdicts``: growth, late rows, commit time, memory, falling behind, RocksDB; with evidence;
  and what the demo showed (``what_this_showed``)
- ``monitor``: the notebook's start (source, history) and its summary

Its demo's event logs are written by :mod:`state_runbooks.demos.event_logs`.
"""
from .exercise import try_it
from .verdicts import what_this_showed

__all__ = [
    "try_it","what_this_showed"]
