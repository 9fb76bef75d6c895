"""Spark's state rewriter, reached from Python: the class checked by reflection before any use,
called with the read and write locations and batches, and a transform passed as a Python object
that the JVM calls back (the gateway's callback server, as ``foreachBatch`` uses it). The calls
into the JVM are :mod:`state_runbooks.core.spark_internals.rewriter`'s; what they may be, here.

``org.apache.spark.sql.execution.streaming.state.StateRewriter`` is internal to Spark (its offline
repartition is built on it): nothing promises its constructor from one release to the next, so
:func:`rewriter_presence` compares it with the one verified here (tests/spark/test_rewrite_state.py
and test_migrate_state.py) and a runbook refuses, in one line, on anything else. Seen on 4.3:
for each store of each operator it reads the store at the read batch with every column family
as raw rows (``partition_key`` struct, ``key_bytes``, ``value_bytes``, ``column_family_name``),
calls the transform once on the driver, and each task of the result writes its own partition
(the task's partition id) as a fresh snapshot of version ``write batch + 1``, with the store
settings of the write location's offsets entry for the write batch, and the operators and state
schemas of the write location's operator metadata at the read batch. Only the RocksDB provider writes that way (the HDFS-backed one
refuses an empty start).
"""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.errors import first_line
from state_runbooks.core.spark_internals import (  # noqa: F401 - the rewriter's names, here too
    REWRITER_CLASS,
    VERIFIED_CONSTRUCTOR,
    rewriter_constructors,
    run_state_rewriter,
)
from state_runbooks.session.spark_session import is_connect

VERIFIED_SPARK = ("4.3",)  # the Spark releases the rewrite is tested on, major.minor
MIN_SPARK = (4, 2)  # the rewriter first shipped with Spark 4.2
RAW_COLUMNS = ("partition_key", "key_bytes", "value_bytes", "column_family_name")
# Operator families Spark's rewriter cannot read, with why (seen on 4.3).
REWRITER_REFUSES = {"limit": "a streaming limit keeps its count outside the stores Spark's "
                             "rewriter reads (its state schema cannot be read, seen on 4.3)"}


@dataclass(frozen=True)
class Presence:
    ok: bool
    seen: str  # what reflection found, in one line


def rewriter_presence(spark) -> Presence:
    """Whether this session reaches Spark's rewriter with the verified constructor."""
    if is_connect(spark):
        return Presence(False, "this is a Spark Connect session: it has no JVM to reach Spark's "
                               "internal state rewriter from")
    try:
        found = rewriter_constructors(spark)
    except Exception as exc:  # noqa: BLE001 - ClassNotFoundException through Py4J
        return Presence(False, f"{REWRITER_CLASS.rsplit('.', 1)[-1]} is not in this Spark's jars "
                               f"({first_line(exc)[:80]})")
    if VERIFIED_CONSTRUCTOR in found:
        return Presence(True, f"StateRewriter found, its constructor as verified "
                              f"({len(VERIFIED_CONSTRUCTOR)} parameters)")
    shapes = "; ".join(f"({', '.join(t.rsplit('.', 1)[-1] for t in f)})" for f in found)
    return Presence(False, f"StateRewriter has another constructor here ({shapes or 'none'}): "
                           "this runbook is verified on (SparkSession, long, long, String, "
                           "Configuration, Option, Option, Option) only")


def as_raw_rows(encoded, raw_schema):
    """Rows of ``key_bytes`` and ``value_bytes`` (and ``column_family_name``, else the store's
    one family, ``default``) in the shape of the rewriter's raw rows (``raw_schema``): its writer
    reads the bytes and the column family, never the partitioning key (left null)."""
    from pyspark.sql import functions as F
    pk_type = raw_schema["partition_key"].dataType
    family = (F.col("column_family_name") if "column_family_name" in encoded.columns
              else F.lit("default"))
    return encoded.select(F.lit(None).cast(pk_type).alias("partition_key"), "key_bytes",
                          "value_bytes",
                          # nullable, as in Spark's raw rows (a bare literal is not)
                          F.when(F.col("key_bytes").isNotNull(), family)
                          .alias("column_family_name"))


@dataclass
class RewriterRun:
    stores: list[tuple[int, str]]  # the (operator, store) the transform was called for


def run_rewriter(spark, read_location: str, read_batch: int, write_location: str,
                 write_batch: int, transform=None) -> RewriterRun:
    """Spark's rewriter: every store of ``read_location`` at ``read_batch`` into
    ``write_location`` as version ``write_batch + 1``. ``transform(df, operator_id, store)``
    returns the raw rows to write (the same schema, each row in the partition it came from);
    None writes them as they are. Raises what Spark raised."""
    return RewriterRun(run_state_rewriter(spark, read_location, read_batch, write_location,
                                          write_batch, transform))
