"""Runbook 11's reading of key_where, without Spark: the key columns a condition fixes with
``=`` in a conjunction, and only those; and whether they fix a partitioning key."""
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
     {"key.window.start": "TIMESTAMP '2026-01-01 00:00:10 UTC'", "key.k": "2"}),
    ("key.name = 'a AND b' and key.k=2", {"key.name": "'a AND b'", "key.k": "2"}),
    ("key.`odd name` = 1", {"key.odd name": "1"}),
    ("key.a = 1 OR key.b = 2", {}),  # an OR fixes nothing
    ("key.a > 1 AND key.b = 2", {"key.b": "2"}),  # a range fixes nothing
    ("key.a = key.b", {}),  # a column against a column
    ("key.user IN ('u3') AND key.k = 2", {"key.user": "'u3'", "key.k": "2"}),
    ("key.user in ( 'u3' )", {"key.user": "'u3'"}),
    ("key.user IN ('u3', 'u4')", {}),  # two values fix nothing
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
