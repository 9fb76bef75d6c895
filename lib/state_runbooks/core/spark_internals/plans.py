"""A classic DataFrame's plans and a classic stream writer's settings, read in the JVM."""
from __future__ import annotations

from .gateway import jvm


def query_execution(df):
    """The JVM's ``QueryExecution`` of ``df``: its logical, analyzed and physical plans."""
    return df._jdf.queryExecution()


def analyzed_plan(df):
    """``df``'s analyzed logical plan (a JVM ``LogicalPlan``)."""
    return query_execution(df).analyzed()


def explain_extended(df) -> str:
    """The extended explain (parsed, analyzed, optimized and physical plans) as text:
    ``PythonSQLUtils.explainString(queryExecution, "extended")``."""
    return str(jvm(df.sparkSession).PythonSQLUtils.explainString(query_execution(df), "extended"))


def writer_field(writer, name: str):
    """A private field of the classic ``DataStreamWriter`` behind ``writer`` (``outputMode``,
    ``trigger``, ``source``, ``extraOptions``), read without changing anything; raises where this
    Spark's writer has no such field."""
    jwrite = writer._jwrite
    handle = jwrite.getClass().getDeclaredField(name)
    handle.setAccessible(True)
    return handle.get(jwrite)
