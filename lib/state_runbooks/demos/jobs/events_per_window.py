"""An example streaming job: events and amount per user in 3-second windows, on the deterministic
``rate-micro-batch`` source (10 rows a batch from 2023-11-14 22:13:20 UTC, one second of event
time per batch). ``build`` is the query as deployed (the demo checkpoint of 08 was written by
it); the other functions are changes someone might deploy next, each a ``query_function``:

- ``build_filtered``: drops test users before the aggregation and adds a column after it (the
  state is untouched);
- ``build_with_max``: adds an aggregate (the state's value gains a field);
- ``build_more_partitions``: asks for 8 shuffle partitions (the checkpoint pinned 2);
- ``build_deduplicated``: drops duplicate events before the aggregation (a stateful operator
  added in front).

Each returns the DataStreamWriter with its output mode and trigger set, not started, as a job
hands it to ``start()``.
"""
from pyspark.sql import functions as F

from state_runbooks.common.spark_settings import SHUFFLE_PARTITIONS_CONF

START_MS = 1_700_000_000_000
ROWS_PER_BATCH = 10


def events(spark):
    return (spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", ROWS_PER_BATCH)
            .option("numPartitions", 1)
            .option("startTimestamp", START_MS)
            .option("advanceMillisPerBatch", 1000)
            .load()
            .select(F.concat(F.lit("evt-"), (F.col("value") / 2).cast("long").cast("string"))
                    .alias("event_id"),
                    F.concat(F.lit("user-"), (F.col("value") % 5).cast("string")).alias("user_id"),
                    (F.col("value") % 100).cast("double").alias("amount"),
                    F.col("timestamp").alias("event_time"))
            .withWatermark("event_time", "5 seconds"))


def _write(df):
    return (df.writeStream.format("console").outputMode("append")
            .trigger(processingTime="10 seconds"))


def build(spark):
    return _write(events(spark)
                  .groupBy(F.window("event_time", "3 seconds"), "user_id")
                  .agg(F.count("*").alias("events"), F.sum("amount").alias("amount")))


def build_filtered(spark):
    counts = (events(spark).where(~F.col("user_id").startswith("test-"))
              .groupBy(F.window("event_time", "3 seconds"), "user_id")
              .agg(F.count("*").alias("events"), F.sum("amount").alias("amount")))
    return _write(counts.withColumn("mean_amount", F.col("amount") / F.col("events")))


def build_with_max(spark):
    return _write(events(spark)
                  .groupBy(F.window("event_time", "3 seconds"), "user_id")
                  .agg(F.count("*").alias("events"), F.sum("amount").alias("amount"),
                       F.max("amount").alias("largest")))


def build_more_partitions(spark):
    spark.conf.set(SHUFFLE_PARTITIONS_CONF, "8")
    return build(spark)


def build_deduplicated(spark):
    return _write(events(spark).dropDuplicates(["event_id", "event_time"])
                  .groupBy(F.window("event_time", "3 seconds"), "user_id")
                  .agg(F.count("*").alias("events"), F.sum("amount").alias("amount")))
