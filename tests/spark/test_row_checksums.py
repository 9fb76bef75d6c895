"""The rows checksum 07 and 09 verify with: equal for the same rows however Spark partitions and
orders them, different when any column of any row differs, or a row is there twice."""
from __future__ import annotations

from pyspark.sql import functions as F

from state_runbooks.core.row_checksums import rows_checksum


def _state(spark, partitions: int, changed_id: int | None = None, extra: int = 0):
    df = spark.range(0, 1000, 1, partitions).select(
        F.struct(F.col("id")).alias("key"),
        F.struct((F.col("id") * 7).alias("n"), F.col("id").cast("string").alias("s"))
        .alias("value"))
    if changed_id is not None:
        df = df.withColumn("value", F.when(F.col("key.id") == changed_id,
                                           F.struct(F.lit(-1).cast("long").alias("n"),
                                                    F.lit("x").alias("s")))
                           .otherwise(F.col("value")))
    if extra:
        df = df.unionByName(df.where(F.col("key.id") < extra))
    return df


def test_the_same_rows_anywhere_give_the_same_figures(spark):
    one = rows_checksum(_state(spark, 1), ["key", "value"])
    shuffled = rows_checksum(_state(spark, 7).repartition(5, "value").orderBy(F.rand(3)),
                             ["key", "value"])
    assert one == shuffled and one.rows == 1000


def test_a_changed_value_or_a_repeated_row_changes_them(spark):
    one = rows_checksum(_state(spark, 2), ["key", "value"])
    changed = rows_checksum(_state(spark, 2, changed_id=500), ["key", "value"])
    assert changed.rows == one.rows
    assert changed.checksum[0] != one.checksum[0] and changed.checksum[1] != one.checksum[1]
    repeated = rows_checksum(_state(spark, 2, extra=1), ["key", "value"])
    assert repeated.rows == 1001 and repeated.checksum != one.checksum
