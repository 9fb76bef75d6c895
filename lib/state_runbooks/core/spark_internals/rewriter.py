"""Spark's internal state rewriter (``StateRewriter``, Spark 4.2 and later): its constructors as
reflection sees them, and one run of it with a transform the JVM calls back in Python. Whether a
constructor is the verified one is :mod:`state_runbooks.safety.state_rewriter`'s decision."""
from __future__ import annotations

import re

from state_runbooks.common.errors import RunbookError

from .gateway import java_session, jvm, session_hadoop_configuration, start_callback_server

REWRITER_CLASS = "org.apache.spark.sql.execution.streaming.state.StateRewriter"
# The constructor the rewrite is verified on (tests/spark/test_rewrite_state.py), parameter by
# parameter, generics dropped: the session, read and write batch, write location, Hadoop conf,
# the read location, the transform, the write location's cached logs.
VERIFIED_CONSTRUCTOR = ("org.apache.spark.sql.SparkSession", "long", "long", "java.lang.String",
                        "org.apache.hadoop.conf.Configuration", "scala.Option", "scala.Option",
                        "scala.Option")


def rewriter_constructors(spark) -> list[tuple[str, ...]]:
    """The parameter types of each public constructor of the rewriter; raises what Py4J wraps
    (ClassNotFoundException) where this Spark has none."""
    cls = jvm(spark).java.lang.Class.forName(REWRITER_CLASS)
    return [tuple(str(t.getName()) for t in constructor.getParameterTypes())
            for constructor in cls.getConstructors()]


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


def run_state_rewriter(spark, read_location: str, read_batch: int, write_location: str,
                       write_batch: int, transform=None) -> list[tuple[int, str]]:
    """``new StateRewriter(session, read batch, write batch, write location, Hadoop conf,
    Some(read location), transform, None).run()``; returns the (operator, store) the transform
    was called for. Raises what Spark raised, or the transform's own error."""
    view = jvm(spark)
    hadoop_conf = session_hadoop_configuration(spark)
    # Always named: the same location may then be read at the batch it is written as (the
    # provider move of an HDFS-backed store reads only the schema there, see encoding).
    read = view.scala.Some(read_location)
    callback = None
    func = view.scala.Option.empty()
    if transform is not None:
        start_callback_server(spark)
        callback = _Transform(spark, transform)
        func = view.scala.Some(callback)
    rewriter = view.org.apache.spark.sql.execution.streaming.state.StateRewriter(
        java_session(spark), read_batch, write_batch, write_location, hadoop_conf, read, func,
        view.scala.Option.empty())
    try:
        rewriter.run()
    except Exception:
        if callback is not None and callback.error is not None:
            raise callback.error from None  # the transform's own error, not Py4J's wrapper
        raise
    return callback.calls if callback else []
