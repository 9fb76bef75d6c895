"""An example streaming job on a file source: events and amount per user in 3-second windows,
read from JSON files in a folder (one file a batch, 10 events with one second of event time each
file, from 2023-11-14 22:13:20 UTC). 12 moves its checkpoint when the folder moves.

The folder is the session setting ``INPUT_CONF`` (a real job names its folder in its code); the
demo sets it to the folder the job reads after the move.
"""
import json
import os
import re

from pyspark.sql import functions as F

from state_runbooks.common.errors import RunbookError

INPUT_CONF = "spark.state_runbooks.demo.input_folder"
START_MS = 1_700_000_000_000
ROWS_PER_FILE = 10
SCHEMA = "event_id string, user_id string, amount double, event_time timestamp"


def events(spark, folder: str):
    return (spark.readStream.format("json").schema(SCHEMA).load(folder)
            .withWatermark("event_time", "5 seconds"))


def counts(df):
    return (df.groupBy(F.window("event_time", "3 seconds"), "user_id")
            .agg(F.count("*").alias("events"), F.sum("amount").alias("amount")))


def build(spark):
    return (counts(events(spark, spark.conf.get(INPUT_CONF))).writeStream.format("console")
            .outputMode("append").trigger(processingTime="10 seconds"))


def input_folder(checkpoint_path: str) -> str:
    """Where the demo's input files are: ``input`` beside its checkpoint, on the driver's disk
    (the demo writes them with the operating system)."""
    path = re.sub(r"^file:(//)?(?=/)", "", checkpoint_path.rstrip("/"))
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", path):
        raise RunbookError(f"the file-source demo writes its input on the driver's disk, and "
                           f"{checkpoint_path} is not there: give checkpoint_path to run on a "
                           "real checkpoint")
    return os.path.join(os.path.dirname(path), "input")


def prepared_input_folder(checkpoint_path: str) -> str:
    """:func:`input_folder`, made if absent (a file source's folder must exist when it is read)."""
    folder = input_folder(checkpoint_path)
    os.makedirs(folder, exist_ok=True)
    return folder


def write_next_file(folder: str, rows: int = ROWS_PER_FILE) -> str:
    """The file after the ones already in ``folder``."""
    done = [n for n in os.listdir(folder) if not n.startswith((".", "_"))] \
        if os.path.isdir(folder) else []
    return write_file(folder, len(done), rows)


def write_file(folder: str, number: int, rows: int = ROWS_PER_FILE) -> str:
    """The ``number``-th input file (its events one second of event time after the last's)."""
    import datetime as dt
    os.makedirs(folder, exist_ok=True)
    at = dt.datetime.fromtimestamp((START_MS + number * 1000) / 1000, dt.timezone.utc)
    lines = []
    for i in range(rows):
        value = number * rows + i
        lines.append(json.dumps({"event_id": f"evt-{value // 2}", "user_id": f"user-{value % 5}",
                                 "amount": float(value % 100),
                                 "event_time": at.strftime("%Y-%m-%dT%H:%M:%S.000Z")}))
    path = os.path.join(folder, f"events-{number:04d}.json")
    with open(path, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    return path
