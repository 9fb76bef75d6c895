"""The stateful processors of the ``transform_with_state`` and ``transform_with_state_pandas``
demos (a module of its own: it imports ``StatefulProcessor``, which needs pyspark's pandas and Arrow
extras, only when those demos run)."""
from __future__ import annotations

from pyspark.sql import Row
from pyspark.sql.streaming import StatefulProcessor

# Spark allows TTL only in processing-time mode, so the timer is a processing-time one too. Both
# are longer than any demo run: the demo's state and timers do not depend on the wall clock.
TTL_MS = 3_600_000  # the value variable's time to live
TIMEOUT_MS = 3_600_000  # processing time without events after which a user's timer fires
RECENT_IDS = 3  # the list variable keeps this many newest event ids


class UserActivity(StatefulProcessor):
    """Per user: ``events`` (value, with TTL), ``recent_ids`` (list), ``amount_by_bucket`` (map of
    amount // 10 to events) and one processing-time timer ``TIMEOUT_MS`` after the user's last
    batch; when the timer fires, the user's state is cleared and its count is emitted."""

    def init(self, handle):
        self.handle = handle
        self.events = handle.getValueState("events", "count long", TTL_MS)
        self.recent = handle.getListState("recent_ids", "event_id string")
        self.buckets = handle.getMapState("amount_by_bucket", "bucket int", "events long")

    def handleInputRows(self, key, rows, timerValues):
        events = self.events.get()[0] if self.events.exists() else 0
        recent = [r[0] for r in self.recent.get()] if self.recent.exists() else []
        for row in rows:
            events += 1
            recent.append(row.event_id)
            bucket = (int(row.amount) // 10,)
            before = self.buckets.getValue(bucket)[0] if self.buckets.containsKey(bucket) else 0
            self.buckets.updateValue(bucket, (before + 1,))
        self.events.update((events,))
        self.recent.put([(i,) for i in recent[-RECENT_IDS:]])
        for timer in list(self.handle.listTimers()):
            self.handle.deleteTimer(timer)
        self.handle.registerTimer(timerValues.getCurrentProcessingTimeInMs() + TIMEOUT_MS)
        return iter([])

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        events = self.events.get()[0] if self.events.exists() else 0
        self.events.clear()
        self.recent.clear()
        self.buckets.clear()
        yield Row(user_id=key[0], events=events)

    def close(self):
        pass


class UserTotals(StatefulProcessor):
    """transformWithStateInPandas, per user: ``events`` (value) and ``recent_ids`` (list of the
    ``RECENT_IDS`` newest event ids); no TTL and no timers. Emits the user's running count."""

    def init(self, handle):
        self.events = handle.getValueState("events", "count long")
        self.recent = handle.getListState("recent_ids", "event_id string")

    def handleInputRows(self, key, rows, timerValues):
        import pandas as pd
        events = self.events.get()[0] if self.events.exists() else 0
        recent = [r[0] for r in self.recent.get()] if self.recent.exists() else []
        for frame in rows:
            events += len(frame)
            recent += list(frame["event_id"])
        self.events.update((events,))
        self.recent.put([(i,) for i in recent[-RECENT_IDS:]])
        yield pd.DataFrame({"user_id": [key[0]], "events": [events]})

    def close(self):
        pass
