"""Reading state through the statestore source, and UnsafeRow sizes computed by hand and
checked against the rows Spark itself builds."""
from __future__ import annotations

from decimal import Decimal

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.state_reader import read_state, unsafe_row_size_sql

# (schema, row, bytes). UnsafeRow: 8-byte null bitset per 64 fields + 8 bytes per field + variable
# data rounded up to 8. UnsafeArrayData: 8 (count) + bitset + elements (rounded) + variable data.
CASES = [
    ("a string, b long", ("abc", 1), 8 + 16 + 8),
    ("a string", ("",), 8 + 8),
    ("a string", (None,), 8 + 8),
    ("a string", ("exactly8",), 8 + 8 + 8),
    ("a string", ("nine char",), 8 + 8 + 16),
    ("a timestamp, b int, c double, d boolean", (None, 1, 2.0, True), 8 + 32),
    ("n struct<x: int, y: string>", ((1, "123456789"),), 8 + 8 + (8 + 16 + 16)),
    ("xs array<int>", ([1, 2, 3],), 8 + 8 + (8 + 8 + 16)),
    ("xs array<string>", (["a", "bb"],), 8 + 8 + (8 + 8 + 16 + 8 + 8)),
    ("m map<string, int>", ({"k": 1},), 8 + 8 + (8 + (8 + 8 + 8 + 8) + (8 + 8 + 8))),
    ("d decimal(38, 2)", (Decimal("1.50"),), 8 + 8 + 16),
    ("d decimal(18, 2)", (Decimal("1.50"),), 8 + 8),
    # Nested arrays need a lambda inside a lambda; names with dots and backticks need quoting.
    ("xss array<array<string>>", ([["a"], []],), 8 + 8 + (8 + 8 + 16 + (8 + 8 + 8 + 8) + 8)),
    ("`a.b` string, `c``d` string", ("xy", None), 8 + 16 + 8),
]


def spark_row_sizes(df) -> list[int]:
    """The size Spark itself gives each struct column of ``df``'s one row: its executed plan
    collects UnsafeRows, and ``getSizeInBytes`` is a struct's length in that format."""
    row = df._jdf.queryExecution().executedPlan().executeCollect()[0]
    return [row.getStruct(i, len(f.dataType.fields)).getSizeInBytes()
            for i, f in enumerate(df.schema.fields)]


@pytest.fixture(scope="module")
def row_sizes(spark) -> list[tuple[int, int]]:
    """(ours, Spark's) size of every case: one row with a struct column per case, so that both
    come from one Spark job each instead of two per case."""
    schema = T.StructType([T.StructField(f"c{i}", T._parse_datatype_string(ddl))
                           for i, (ddl, _row, _bytes) in enumerate(CASES)])
    df = spark.createDataFrame([tuple(row for _ddl, row, _bytes in CASES)], schema)
    ours = df.select(*[F.expr(unsafe_row_size_sql(f.name, f.dataType)) for f in schema.fields])
    return list(zip(ours.first(), spark_row_sizes(df)))


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{ddl}-row{i}-{bytes_}"
                                                           for i, (ddl, _row, bytes_)
                                                           in enumerate(CASES)])
def test_unsafe_row_size(row_sizes, case):
    ours, spark_s = row_sizes[case]
    assert ours == CASES[case][2] == spark_s


def test_bitset_grows_every_64_fields(spark):
    schema = T.StructType([T.StructField(f"c{i}", T.IntegerType()) for i in range(65)])
    df = spark.createDataFrame([tuple(range(65))], schema).select(F.struct("*").alias("r"))
    assert df.select(F.expr(unsafe_row_size_sql("r", schema))).first()[0] == 16 + 65 * 8


def test_read_state_matches_the_query_report(spark, demo_factory):
    run = demo_factory("two_operators")
    ckpt = Checkpoint(spark, run.checkpoint_path)
    reported = {op["operatorName"]: op["numRowsTotal"] for op in run.last_state_operators}
    assert read_state(ckpt, 1).count() == reported["dedupe"]
    assert read_state(ckpt, 0).count() == reported["stateStoreSave"]
    assert set(read_state(ckpt, 1).columns) == {"key", "value", "partition_id"}


def test_read_state_validates_before_spark(spark, demo_factory):
    ckpt = Checkpoint(spark, demo_factory("two_operators").checkpoint_path)
    from state_runbooks.common.errors import RunbookError
    with pytest.raises(RunbookError, match="outside the retained range 0..3"):
        read_state(ckpt, 0, batch_id=10)
    with pytest.raises(RunbookError, match="has no store 'left'"):
        read_state(ckpt, 0, "left")
