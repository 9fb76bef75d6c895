"""Spark's state rewriter, reached from Python: the class checked by reflection before any use,
called with the read and write locations and batches, and a transform passed as a Python object
that the JVM calls back (the gateway's callback server, as ``foreachBatch`` uses it).

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

import re
from dataclasses import dataclass

from state_runbooks.common.errors import RunbookError, first_line
from state_runbooks.session.spark_session import is_connect

REWRITER_CLASS = "org.apache.spark.sql.execution.streaming.state.StateRewriter"
# The constructor this runbook is verified on (tests/spark/test_rewrite_state.py), parameter by
# parameter, generics dropped: the session, read and write batch, write location, Hadoop conf,
# the read location, the transform, the write location's cached logs.
VERIFIED_CONSTRUCTOR = ("org.apache.spark.sql.SparkSession", "long", "long", "java.lang.String",
                        "org.apache.hadoop.conf.Configuration", "scala.Option", "scala.Option",
                        "scala.Option")
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
        cls = spark._jvm.java.lang.Class.forName(REWRITER_CLASS)
    except Exception as exc:  # noqa: BLE001 - ClassNotFoundException through Py4J
        return Presence(False, f"{REWRITER_CLASS.rsplit('.', 1)[-1]} is not in this Spark's jars "
                               f"({first_line(exc)[:80]})")
    found = []
    for constructor in cls.getConstructors():
        found.append(tuple(str(t.getName()) for t in constructor.getParameterTypes()))
    if VERIFIED_CONSTRUCTOR in found:
        return Presence(True, f"StateRewriter found, its constructor as verified "
                              f"({len(VERIFIED_CONSTRUCTOR)} parameters)")
    shapes = "; ".join(f"({', '.join(t.rsplit('.', 1)[-1] for t in f)})" for f in found)
    return Presence(False, f"StateRewriter has another constructor here ({shapes or 'none'}): "
                           "this runbook is verified on (SparkSession, long, long, String, "
                           "Configuration, Option, Option, Option) only")


def store_of(jdf) -> tuple[int, str]:
    """The operator and store a frame of raw state rows reads: from the options of the state
    table it scans (the rewriter hands the transform nothing else)."""
    text = str(jdf.queryExecution().analyzed().toString())
    op = re.search(r"\[operatorId=(\d+)\]", text)
    store = re.search(r"\[storeName=([^\]]+)\]", text)
    if not (op and store):
        raise RunbookError("the rewriter handed the transform a frame that names no operator or "
                           "store (this Spark's rewriter differs from the one verified): nothing "
                           "was dropped")
    return int(op.group(1)), store.group(1)


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


class _Transform:
    """A ``scala.Function1[DataFrame, DataFrame]`` implemented in Python: the JVM calls ``apply``
    with the raw rows of one store and gets back the frame to write."""

    def __init__(self, spark, transform):
        self._spark, self._transform = spark, transform
        self.calls: list[tuple[int, str]] = []
        self.error: BaseException | None = None

    def apply(self, jdf):
        from pyspark.sql import DataFrame
        try:
            op, store = store_of(jdf)
            self.calls.append((op, store))
            return self._transform(DataFrame(jdf, self._spark), op, store)._jdf
        except BaseException as exc:  # the JVM sees only "Python raised": keep the cause here
            self.error = exc
            raise

    class Java:
        implements = ["scala.Function1"]


@dataclass
class RewriterRun:
    stores: list[tuple[int, str]]  # the (operator, store) the transform was called for


def run_rewriter(spark, read_location: str, read_batch: int, write_location: str,
                 write_batch: int, transform=None) -> RewriterRun:
    """Spark's rewriter: every store of ``read_location`` at ``read_batch`` into
    ``write_location`` as version ``write_batch + 1``. ``transform(df, operator_id, store)``
    returns the raw rows to write (the same schema, each row in the partition it came from);
    None writes them as they are. Raises what Spark raised."""
    from pyspark.java_gateway import ensure_callback_server_started
    jvm = spark._jvm
    hadoop_conf = spark._jsparkSession.sessionState().newHadoopConf()
    # Always named: the same location may then be read at the batch it is written as (the
    # provider move of an HDFS-backed store reads only the schema there, see encoding).
    read = jvm.scala.Some(read_location)
    callback = None
    func = jvm.scala.Option.empty()
    if transform is not None:
        ensure_callback_server_started(spark.sparkContext._gateway)
        callback = _Transform(spark, transform)
        func = jvm.scala.Some(callback)
    rewriter = jvm.org.apache.spark.sql.execution.streaming.state.StateRewriter(
        spark._jsparkSession, read_batch, write_batch, write_location, hadoop_conf, read, func,
        jvm.scala.Option.empty())
    try:
        rewriter.run()
    except Exception:
        if callback is not None and callback.error is not None:
            raise callback.error from None  # the transform's own error, not Py4J's wrapper
        raise
    return RewriterRun(callback.calls if callback else [])
