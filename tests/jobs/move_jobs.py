"""Jobs as they run after a move, for tests/spark/test_move_checkpoint.py: the demo's windowed
count on a file folder (the folder from the session setting the demo uses), on the
rate-micro-batch source instead (the same columns, so the same state), and on two sources by a
union (a source added)."""
from pyspark.sql import functions as F

from state_runbooks.demos.jobs import files_per_window as fw

RATE_ROWS = 7


def _write(df):
    return df.writeStream.format("console").outputMode("update")


def on_files(spark):
    return _write(fw.counts(fw.events(spark, spark.conf.get(fw.INPUT_CONF))))


def _rate_events(spark, start_ms: int = fw.START_MS + 10_000):
    return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", RATE_ROWS)
            .option("numPartitions", 1).option("startTimestamp", start_ms)
            .option("advanceMillisPerBatch", 1000).load()
            .select(F.concat(F.lit("evt-r"), F.col("value").cast("string")).alias("event_id"),
                    F.concat(F.lit("user-"), (F.col("value") % 5).cast("string")).alias("user_id"),
                    (F.col("value") % 100).cast("double").alias("amount"),
                    F.col("timestamp").alias("event_time"))
            .withWatermark("event_time", "5 seconds"))


def on_rate(spark):
    return _write(fw.counts(_rate_events(spark)))


def on_files_and_rate(spark):
    files = fw.events(spark, spark.conf.get(fw.INPUT_CONF))
    return _write(fw.counts(files.unionByName(_rate_events(spark))))


def on_rate_behind(spark):
    """The rate source swapped in with event times 10 s before the demo's first: behind the
    carried watermark, so its rows are late."""
    return _write(fw.counts(_rate_events(spark, fw.START_MS - 10_000)))
