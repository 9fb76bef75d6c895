"""Runbook 10's mapping, decided on two schemas alone: where every new field comes from, what is
dropped, and each refusal in one line naming the field and the choices."""
from __future__ import annotations

import pytest
from messages import one_line
from pyspark.sql import types as T

from state_runbooks.common.errors import RunbookError
from state_runbooks.runbooks.migrate_state.mapping import map_part, parse_fill, widens


def struct(*fields) -> T.StructType:
    return T.StructType([T.StructField(name, dtype) for name, dtype in fields])


WINDOW = struct(("start", T.TimestampType()), ("end", T.TimestampType()))


def sources(mapping) -> list[tuple[str, str]]:
    return [(s.field, s.kind) for s in mapping.sources]


def test_an_unchanged_part_is_not_mapped():
    key = struct(("window", WINDOW), ("user_id", T.StringType()))
    mapping = map_part("key", key, key, {})
    assert not mapping.changed and not mapping.sources and not mapping.problems


def test_an_added_aggregate_takes_its_fill_and_keeps_the_others():
    old = struct(("count", T.LongType()), ("sum", T.DoubleType()))
    new = struct(("count", T.LongType()), ("sum", T.DoubleType()), ("max", T.DoubleType()))
    mapping = map_part("value", old, new, {"value.max": "NULL"})
    assert sources(mapping) == [("value.count", "same"), ("value.sum", "same"),
                                ("value.max", "fill")]
    assert not mapping.problems and not mapping.dropped


def test_a_widened_key_type_is_cast_and_a_key_column_added_needs_a_fill():
    old = struct(("user", T.IntegerType()))
    widened = map_part("key", old, struct(("user", T.LongType())), {})
    assert sources(widened) == [("key.user", "widened")]
    assert widened.sources[0].source == "key.user (int -> bigint)"
    added = struct(("tenant", T.StringType()), ("user", T.IntegerType()))
    assert sources(map_part("key", old, added, {"key.tenant": "'acme'"})) == [
        ("key.tenant", "fill"), ("key.user", "same")]
    refused = map_part("key", old, added, {})
    assert len(refused.problems) == 1
    assert refused.problems[0].startswith("key.tenant (string) has no source in the old state: "
                                          'pass fill {"key.tenant": ')
    assert "new checkpoint" in refused.problems[0]


def test_fields_that_line_up_by_position_are_renamed_not_refilled():
    """Spark compares types by position: a name change alone keeps the field."""
    old = struct(("user", T.IntegerType()), ("n", T.LongType()))
    new = struct(("user_id", T.LongType()), ("count", T.LongType()))
    mapping = map_part("key", old, new, {})
    assert sources(mapping) == [("key.user_id", "widened"), ("key.count", "renamed")]
    assert [s.origin for s in mapping.sources] == [0, 1]


def test_duplicate_names_are_mapped_by_position():
    old = struct(("sum", T.LongType()), ("sum", T.DoubleType()))
    new = struct(("sum", T.LongType()), ("sum", T.DoubleType()), ("count", T.LongType()))
    mapping = map_part("value", old, new, {"value.count": "0"})
    assert not mapping.problems  # by name would be ambiguous; only a fill is asked for
    assert sources(mapping)[-1] == ("value.count", "fill")


def test_a_lossy_cast_is_refused_naming_the_field_and_the_choices():
    mapping = map_part("value", struct(("n", T.LongType())), struct(("n", T.IntegerType())), {})
    assert mapping.problems == [
        'value.n: bigint -> int can lose values: pass fill {"value.n": "<SQL that says how>"}, '
        "or start the changed query on a new checkpoint, which rebuilds its state from the input "
        "the source still holds (what is older is lost)"]
    text = map_part("key", struct(("k", T.StringType())), struct(("k", T.IntegerType())), {})
    assert "string -> int can lose values" in text.problems[0]


def test_a_nested_struct_is_mapped_field_by_field_and_removed_fields_are_dropped():
    old = struct(("w", WINDOW), ("gone", T.StringType()))
    new_window = struct(("start", T.TimestampType()), ("end", T.TimestampType()),
                        ("size", T.IntegerType()))
    mapping = map_part("key", old, struct(("w", new_window)), {"key.w.size": "3"})
    assert sources(mapping) == [("key.w", "rebuilt"), ("key.w.start", "same"),
                                ("key.w.end", "same"), ("key.w.size", "fill")]
    assert mapping.dropped == ["key.gone"]


@pytest.mark.parametrize(("old", "new", "ok"), [
    (T.IntegerType(), T.LongType(), True), (T.ByteType(), T.ShortType(), True),
    (T.FloatType(), T.DoubleType(), True), (T.IntegerType(), T.DoubleType(), True),
    (T.DecimalType(10, 2), T.DecimalType(12, 2), True),
    (T.DecimalType(10, 2), T.DecimalType(10, 3), False),
    (T.IntegerType(), T.DecimalType(10, 0), True), (T.LongType(), T.DecimalType(10, 0), False),
    (T.LongType(), T.IntegerType(), False), (T.LongType(), T.DoubleType(), False),
    (T.StringType(), T.IntegerType(), False), (T.DoubleType(), T.FloatType(), False)])
def test_only_casts_that_keep_every_value_widen(old, new, ok):
    assert widens(old, new) is ok


@pytest.mark.parametrize(("fill", "message"), [
    ("{not json", "fill is not a JSON object"),
    ('["value.max"]', "fill must map each field"),
    ('{"value.max": ""}', "fill must map each field"),
    ('{"max": "NULL"}', "fill names 'max': name a field as Spark's state reader shows it"),
    ('{"other.max": "NULL"}', "key.<field> or value.<field>")])
def test_a_bad_fill_gets_one_line(fill, message):
    with pytest.raises(RunbookError) as excinfo:
        parse_fill(fill)
    assert message in one_line(excinfo)


def test_fill_is_a_dict_or_its_json():
    assert parse_fill("") == parse_fill({}) == {}
    assert parse_fill('{"value.max": " NULL "}') == {"value.max": "NULL"}
    assert parse_fill({"key.tenant": "'acme'"}) == {"key.tenant": "'acme'"}
