"""A query running in this session, watched through a ``StreamingQueryListener``.

``query.recentProgress`` holds the last ``spark.sql.streaming.numRecentProgressUpdates`` batches (100
by default); a listener added for ``watch_seconds`` catches every batch in between, however many. Both
work on classic sessions and on Spark Connect (where PySpark runs the listener in this process).
"""
from __future__ import annotations

import threading
import time

from pyspark.sql.streaming import StreamingQueryListener

from state_runbooks.common.errors import RunbookError
from state_runbooks.session.spark_session import progress_dict


class _Collector(StreamingQueryListener):
    def __init__(self, query_id: str):
        super().__init__()
        self.query_id, self.progress, self.terminated = query_id, [], threading.Event()

    def onQueryStarted(self, event):
        pass

    def onQueryProgress(self, event):
        progress = progress_dict(event.progress)
        if progress.get("id") == self.query_id:
            self.progress.append(progress)

    def onQueryIdle(self, event):
        pass

    def onQueryTerminated(self, event):
        if str(event.id) == self.query_id:
            self.terminated.set()


def find_query(spark, query_name: str = "", query_id: str = ""):
    """The active query of this session with that name or id."""
    active = spark.streams.active
    for query in active:
        if (query_name and query.name == query_name) or (query_id and str(query.id) == query_id):
            return query
    wanted = f"query_name={query_name!r}" if query_name else f"query_id={query_id}"
    names = ", ".join(f"{q.name or '(unnamed)'} ({q.id})" for q in active) or "none"
    raise RunbookError(f"no active streaming query with {wanted} in this session; active "
                       f"queries: {names}")


def watch(spark, query_name: str = "", query_id: str = "", watch_seconds: float = 60) -> list[dict]:
    """Progress of one active query: its recent progress, then every batch for ``watch_seconds``
    (less if the query stops), in batch order."""
    query = find_query(spark, query_name, query_id)
    qid = str(query.id)
    collector = _Collector(qid)
    spark.streams.addListener(collector)
    try:
        seen = [progress_dict(p) for p in query.recentProgress]
        deadline = time.monotonic() + watch_seconds
        while time.monotonic() < deadline and not collector.terminated.is_set():
            collector.terminated.wait(min(1.0, max(deadline - time.monotonic(), 0)))
            if not query.isActive:
                break
        try:  # batches the listener bus had not delivered yet
            seen += [progress_dict(p) for p in query.recentProgress]
        except Exception:  # noqa: BLE001 - a stopped query may be gone on the server (Connect)
            pass
    finally:
        spark.streams.removeListener(collector)
    by_key = {}
    for p in collector.progress + seen:  # the query's own recentProgress wins where both have it
        by_key[(p["runId"], p["batchId"])] = p
    return sorted(by_key.values(), key=lambda p: (p["batchId"], p["timestamp"]))
