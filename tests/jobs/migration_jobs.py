"""Stateful queries and the changes to them that Spark refuses at restart, for runbook 10's tests.

Each function takes the SparkSession and returns the query's DataStreamWriter, not started, as a
job hands it to ``start()`` (the runbooks load them with ``query_file`` and ``query_function``).
The input is ``rate-micro-batch``: the same 10 rows in batch n of every run, so a query migrated
and continued reads exactly what a run from scratch reads.
"""
from pyspark.sql import functions as F

START_MS = 1_700_000_000_000
USERS = 7


def events(spark):
    return (spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", 10).option("numPartitions", 1)
            .option("startTimestamp", START_MS).option("advanceMillisPerBatch", 1000).load()
            .select(F.col("value").alias("id"), (F.col("value") % USERS).cast("int").alias("user"),
                    (F.col("value") % 100).cast("int").alias("amount"),
                    F.col("timestamp").alias("ts")))


def _update(df):
    return df.writeStream.format("console").outputMode("update")


def _with_tenant(df):
    # A column every old row has one value of, which Spark cannot fold into a constant.
    return df.withColumn("tenant", F.when(F.col("user") >= 0, F.lit("acme"))
                         .otherwise(F.lit("none")))


# -- a count and a sum per user -------------------------------------------------------------------
def per_user(spark):
    return _update(events(spark).groupBy("user")
                   .agg(F.count("*").alias("n"), F.sum("amount").alias("total")))


def per_user_bigint(spark):
    """The key widened: int to bigint (the state moves between partitions: its hash changes)."""
    return _update(events(spark).groupBy(F.col("user").cast("bigint").alias("user"))
                   .agg(F.count("*").alias("n"), F.sum("amount").alias("total")))


def per_tenant_and_user(spark):
    """A key column added in front."""
    return _update(_with_tenant(events(spark)).groupBy("tenant", "user")
                   .agg(F.count("*").alias("n"), F.sum("amount").alias("total")))


def per_user_with_largest(spark):
    """An aggregate added: the value gains max(amount)."""
    return _update(events(spark).groupBy("user")
                   .agg(F.count("*").alias("n"), F.sum("amount").alias("total"),
                        F.max("amount").alias("largest")))


def per_user_narrowed(spark):
    """From ``per_user_bigint`` back to int: a cast that can lose values."""
    return per_user(spark)


# -- deduplication ----------------------------------------------------------------------------------
def first_of_user(spark):
    return events(spark).dropDuplicates(["user"]).writeStream.format("console").outputMode("append")


def first_of_user_bigint(spark):
    return (events(spark).withColumn("user", F.col("user").cast("bigint"))
            .dropDuplicates(["user"]).writeStream.format("console").outputMode("append"))


def first_in_watermark(spark):
    return (events(spark).withWatermark("ts", "30 seconds").dropDuplicatesWithinWatermark(["user"])
            .writeStream.format("console").outputMode("append"))


def first_in_watermark_bigint(spark):
    return (events(spark).withColumn("user", F.col("user").cast("bigint"))
            .withWatermark("ts", "30 seconds").dropDuplicatesWithinWatermark(["user"])
            .writeStream.format("console").outputMode("append"))


# -- session windows --------------------------------------------------------------------------------
def _append(df):
    return df.writeStream.format("console").outputMode("append")


def sessions(spark):
    return _append(events(spark).withWatermark("ts", "2 seconds")
                   .groupBy(F.session_window("ts", "3 seconds"), "user").count())


def sessions_bigint(spark):
    return _append(events(spark).withColumn("user", F.col("user").cast("bigint"))
                   .withWatermark("ts", "2 seconds")
                   .groupBy(F.session_window("ts", "3 seconds"), "user").count())


# -- an operator added -------------------------------------------------------------------------------
def deduplicated_per_user(spark):
    """A deduplication before the aggregation: operator 0 is another operator now."""
    return _update(events(spark).dropDuplicates(["id"]).groupBy("user")
                   .agg(F.count("*").alias("n"), F.sum("amount").alias("total")))


# -- applyInPandasWithState: the state's count widened from int to bigint -----------------------------
def _count_events(key, frames, state):
    import pandas as pd
    n = int(state.get[0]) if state.exists else 0
    for frame in frames:
        n += len(frame)
    state.update((n,))
    yield pd.DataFrame({"user": [int(key[0])], "n": [n]})


def _pandas_counts(spark, state_type: str):
    return (events(spark).groupBy("user")
            .applyInPandasWithState(_count_events, "user int, n long", f"n {state_type}",
                                    "Update", "NoTimeout")
            .writeStream.format("console").outputMode("update"))


def pandas_counts(spark):
    return _pandas_counts(spark, "int")


def pandas_counts_bigint(spark):
    return _pandas_counts(spark, "long")


# -- a stream-stream join: its key widened on both sides ------------------------------------------------
def _join(spark, key_type: str):
    left = (events(spark).select(F.col("user").cast(key_type).alias("user"),
                                 F.col("id").alias("left_id"), F.col("ts").alias("left_ts"))
            .withWatermark("left_ts", "10 seconds"))
    right = (events(spark).select(F.col("user").cast(key_type).alias("user"),
                                  (F.col("id") + 1000).alias("right_id"),
                                  F.col("ts").alias("right_ts"))
             .withWatermark("right_ts", "10 seconds"))
    joined = left.join(right, "user").where(
        F.col("right_ts").between(F.col("left_ts"), F.col("left_ts") + F.expr("INTERVAL 2 SECONDS")))
    return joined.writeStream.format("console").outputMode("append")


def joined(spark):
    return _join(spark, "int")


def joined_bigint(spark):
    return _join(spark, "bigint")


# -- transformWithStateInPandas: a value variable widened, a list variable kept as it is -------------
def _processor(count_type: str):
    from pyspark.sql.streaming import StatefulProcessor

    class Counter(StatefulProcessor):
        """Per user: ``events`` (value) and ``recent_ids`` (list of the 3 newest ids)."""

        def init(self, handle):
            self.events = handle.getValueState("events", f"count {count_type}")
            self.recent = handle.getListState("recent_ids", "id long")

        def handleInputRows(self, key, rows, timerValues):
            import pandas as pd
            events = int(self.events.get()[0]) if self.events.exists() else 0
            recent = [r[0] for r in self.recent.get()] if self.recent.exists() else []
            for frame in rows:
                events += len(frame)
                recent += [int(i) for i in frame["id"]]
            self.events.update((events,))
            self.recent.put([(i,) for i in recent[-3:]])
            yield pd.DataFrame({"user": [int(key[0])], "n": [events]})

        def close(self):
            pass

    return Counter()


def _processed(spark, count_type: str):
    return (events(spark).groupBy("user")
            .transformWithStateInPandas(_processor(count_type), "user int, n long", "Update",
                                        "None")
            .writeStream.format("console").outputMode("update"))


def processed(spark):
    return _processed(spark, "int")


def processed_bigint(spark):
    return _processed(spark, "long")
