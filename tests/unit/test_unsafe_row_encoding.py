"""09's UnsafeRow encoder names the types it does not lay out."""
from __future__ import annotations

from pyspark.sql import types as T

from state_runbooks.core.unsafe_row import unsupported_types


def test_types_it_does_not_lay_out_are_named():
    dtype = T.StructType([T.StructField("a", T.IntegerType()),
                          T.StructField("m", T.MapType(T.StringType(), T.IntegerType())),
                          T.StructField("n", T.StructType([
                              T.StructField("xs", T.ArrayType(T.LongType()))]))])
    assert unsupported_types(dtype) == ["m: map<string,int>", "n.xs: array<bigint>"]
