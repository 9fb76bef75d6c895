"""The query 10's bench migrates: a count and a sum per key, every input row a new key (as many
keys as rows), and its change Spark refuses: the key widened from int to bigint (every row then
hashes to another partition). The bench sets ``BENCH_ROWS_PER_BATCH`` before it loads the job."""
import os

from pyspark.sql import functions as F

ROWS_PER_BATCH = int(os.environ.get("BENCH_ROWS_PER_BATCH", "10000"))
START_MS = 1_700_000_000_000


def _counts(spark, key_type: str):
    rows = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", ROWS_PER_BATCH)
            .option("startTimestamp", START_MS).load())
    return (rows.groupBy(F.col("value").cast(key_type).alias("k"))
            .agg(F.count("*").alias("n"), F.sum("value").alias("total"))
            .writeStream.format("noop").outputMode("update"))


def build(spark):
    return _counts(spark, "int")


def widened(spark):
    return _counts(spark, "bigint")
