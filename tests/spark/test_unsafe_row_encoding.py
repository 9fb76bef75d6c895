"""09's UnsafeRow encoder against Spark's own bytes.

Runbook 09 writes the rows of an HDFS-backed store as the bytes Spark keeps them as (RocksDB finds a
key by its bytes). Here Spark lays out the same rows itself: a query's rows come back from its
executed plan as UnsafeRows, whose bytes the encoder must equal exactly, through the same Arrow path
the rewrite uses. The rows cover every type the encoder accepts, nulls of each, strings and
binaries of lengths around the 8-byte word, decimals narrow (in their slot) and wide up to 38
digits (16 bytes after the slots), a nested struct, and a row of more than 64 fields (a second word
of null bits).
"""
from __future__ import annotations

import pytest

from state_runbooks.core.unsafe_row import arrow_encoder, unsupported_types

COLUMNS = {  # name -> (SQL type, a value, another value)
    "b": ("boolean", "true", "false"),
    "y": ("tinyint", "-7", "127"),
    "s": ("smallint", "-300", "32000"),
    "i": ("int", "42", "-2147483648"),
    "l": ("bigint", "9007199254740993", "-1"),
    "f": ("float", "1.5", "-0.0"),
    "d": ("double", "3.141592653589793", "1e300"),
    "dt": ("date", "DATE'2026-01-01'", "DATE'1960-02-29'"),
    "ts": ("timestamp", "TIMESTAMP'2026-01-01 12:34:56.789012'",
           "TIMESTAMP'1969-12-31 23:59:59.999999'"),
    "str0": ("string", "''", "'é'"),
    "str8": ("string", "'12345678'", "'1234567'"),
    "str9": ("string", "'123456789'", "'a longer string over two words'"),
    "bin": ("binary", "X'00FF10'", "X'0102030405060708'"),
    "dec": ("decimal(10,2)", "12345678.91", "-0.01"),
    "wide": ("decimal(30,5)", "1234567890123456789012345.12345", "-0.00001"),
    "widest": ("decimal(38,10)", "1234567890123456789012345678.1234567890",
               "-9999999999999999999999999999.9999999999"),
    "nested": ("struct<n:int,t:string>", "named_struct('n', 1, 't', 'abc')",
               "named_struct('n', CAST(NULL AS INT), 't', 'nine byte')"),
}


def _struct(values: dict[str, str]) -> str:
    return "named_struct(" + ", ".join(f"'{name}', CAST({value} AS {COLUMNS[name][0]})"
                                       for name, value in values.items()) + ")"


def _rows(spark):
    """A DataFrame of (key, value) rows: the key a struct of every type, the value the same
    struct with nulls, and a wide struct of 70 fields."""
    first = {n: c[1] for n, c in COLUMNS.items()}
    second = {n: c[2] for n, c in COLUMNS.items()}
    nulls = dict.fromkeys(COLUMNS, "NULL")
    wide = "named_struct(" + ", ".join(f"'c{i}', {'NULL' if i % 3 else i}" for i in range(70)) + ")"
    selects = [f"SELECT {_struct(k)} AS key, {_struct(v)} AS value, {wide} AS wide"
               for k, v in ((first, nulls), (second, first), (nulls, second))]
    return spark.sql(" UNION ALL ".join(selects)).coalesce(1)


def _spark_bytes(df, column: str) -> list[bytes]:
    """Spark's UnsafeRow bytes of each row of ``column``'s fields, in row order."""
    rows = df.select(f"{column}.*")._jdf.queryExecution().executedPlan().executeCollect()
    return [bytes(row.getBytes()) for row in rows]


@pytest.mark.parametrize("key,value", [("key", "value"), ("wide", "key")])
def test_encoded_rows_equal_spark_s_unsafe_rows_byte_for_byte(spark, key, value):
    df = _rows(spark).select(key, value)
    key_type, value_type = df.schema[key].dataType, df.schema[value].dataType
    assert unsupported_types(key_type) == unsupported_types(value_type) == []
    encoded = df.mapInArrow(arrow_encoder(key_type, value_type),
                            "key_bytes binary, value_bytes binary").collect()
    assert [bytes(r.key_bytes) for r in encoded] == _spark_bytes(df, key)
    assert [bytes(r.value_bytes) for r in encoded] == _spark_bytes(df, value)


