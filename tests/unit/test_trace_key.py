"""Runbook 11's reading of key_where, without Spark: the key columns a condition fixes with
``=`` (or an IN of one value) in a conjunction, and only those, whatever the SQL around them
(function calls, casts, brackets, quotes holding AND, ')' and '=', backquotes, mixed case); and
whether they fix a partitioning key. tests/spark/test_trace_key.py traces each on real state."""
from __future__ import annotations

import pytest
from messages import one_line
from pyspark.sql import types as T

from state_runbooks.common.errors import RunbookError
from state_runbooks.runbooks.trace_key.condition import fixed_columns, fixes

WINDOW = T.StructType([T.StructField("start", T.TimestampType()),
                       T.StructField("end", T.TimestampType())])
KEY = T.StructType([T.StructField("window", WINDOW), T.StructField("user_id", T.StringType())])


@pytest.mark.parametrize(("key_where", "fixed"), [
    ("key.user = 'u3'", {"key.user": "'u3'"}),
    ("'u3' = key.user", {"key.user": "'u3'"}),
    ("key.window.start = TIMESTAMP '2026-01-01 00:00:10 UTC' AND key.k = 2",
     {"key.window.start": "CAST('2026-01-01 00:00:10 UTC' AS TIMESTAMP)", "key.k": "2"}),
    ("key.name = 'a AND b' and key.k=2", {"key.name": "'a AND b'", "key.k": "2"}),
    ("key.`odd name` = 1", {"key.odd name": "1"}),
    ("key.a = 1 OR key.b = 2", {}),  # an OR fixes nothing
    ("key.a > 1 AND key.b = 2", {"key.b": "2"}),  # a range fixes nothing
    ("key.a = key.b", {}),  # a column against a column
    ("key.user IN ('u3') AND key.k = 2", {"key.user": "'u3'", "key.k": "2"}),
    ("key.user in ( 'u3' )", {"key.user": "'u3'"}),
    ("key.user IN ('u3', 'u4')", {}),  # two values fix nothing
    ("key.k = 0 AND key.window.start = timestamp_millis(1767225604000) AND key.window.end = "
     "timestamp_millis(1767225606000)", {"key.k": "0",
                                         "key.window.start": "TIMESTAMP_MILLIS(1767225604000)",
                                         "key.window.end": "TIMESTAMP_MILLIS(1767225606000)"}),
    ("(key.k = CAST('3' AS INT)) and (key.s = 'x) AND key.t = (1')",
     {"key.k": "CAST('3' AS INT)", "key.s": "'x) AND key.t = (1'"}),
    ("key.a = 1 AnD (key.b = 2 AND key.c = upper('x'))",
     {"key.a": "1", "key.b": "2", "key.c": "UPPER('x')"}),
    ("KEY.`user id` = concat('a', 'b')", {"key.user id": "CONCAT('a', 'b')"}),
    ("key.a NOT IN (1)", {}),
    ("key.a = ", {}),  # not SQL: Spark's analysis says why
])
def test_the_columns_a_condition_fixes(key_where, fixed):
    assert fixed_columns(key_where) == fixed


def test_a_partitioning_key_is_fixed_leaf_by_leaf():
    full = fixed_columns("key.user_id = 'u' AND key.window.start = TIMESTAMP '2026-01-01 00:00:00 "
                         "UTC' AND key.window.end = TIMESTAMP '2026-01-01 00:00:03 UTC'")
    assert fixes(full, KEY)
    assert not fixes(fixed_columns("key.user_id = 'u'"), KEY)
    assert not fixes(fixed_columns("key.user_id = 'u' AND key.window.start = TIMESTAMP "
                                   "'2026-01-01 00:00:00 UTC'"), KEY)


def test_an_empty_condition_gets_one_line():
    with pytest.raises(RunbookError) as excinfo:
        fixed_columns("  ")
    assert "key_where is empty" in one_line(excinfo)


def test_the_demo_says_why_the_first_window_starts_before_the_first_event():
    """Spark aligns tumbling windows to the epoch: the first window holds the first event, starts
    at a multiple of its length and so before that event."""
    from state_runbooks.demos.checkpoints import DEMO_START_MS
    from state_runbooks.runbooks.trace_key.demo import WINDOW_MS, first_window_ms, first_window_words

    start = first_window_ms()
    assert start % WINDOW_MS == 0 and start <= DEMO_START_MS < start + WINDOW_MS
    words = first_window_words()
    assert "user-0's first window is [2023-11-14 22:13:18 UTC, 2023-11-14 22:13:21 UTC)" in words
    assert "opened 2 s before the first event (2023-11-14 22:13:20 UTC) and ends 1 s after" in words
