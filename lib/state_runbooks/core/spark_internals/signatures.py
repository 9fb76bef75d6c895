"""The index: every name of Spark's (and Scala's) JVM that the library calls, with the signature
it is called with, and the check that this Spark has each as listed. On a Spark upgrade, read this
first: ``tests/spark/test_spark_internals.py`` names each member that moved or changed."""
from __future__ import annotations

from dataclasses import dataclass

from .gateway import java_class
from .planning import (
    INCREMENTAL_EXECUTION,
    KNOWN_PARAMETERS,
    OFFSET_SEQ_METADATA,
    WATERMARK_PROPAGATOR,
)
from .rewriter import REWRITER_CLASS, VERIFIED_CONSTRUCTOR
from .state_store import PLAIN_MAP, PREFIX_MAP, SCHEMA_READER, STATE


@dataclass(frozen=True)
class Member:
    classes: tuple[str, ...]  # the class, under each name it has had (newest first)
    name: str  # a method; "<init>": a constructor; "field:<name>": a field the class declares
    parameters: tuple[str, ...] = ()  # the parameter types, as Java's reflection names them
    leading: bool = False  # the parameters begin the signature (later ones take their defaults)
    used_by: str = ""  # the function of this package that calls it

    def line(self) -> str:
        where = self.classes[0].rsplit(".", 1)[-1]
        if self.name.startswith("field:"):
            return f"{where}.{self.name[6:]} (a field)"
        params = ", ".join(p.rsplit(".", 1)[-1] for p in self.parameters)
        return f"{where}{'' if self.name == '<init>' else '.' + self.name}({params}" \
               f"{', ...' if self.leading else ''})"


_SQL, _STREAMING = "org.apache.spark.sql", "org.apache.spark.sql.execution.streaming"
_WRITER = (f"{_SQL}.classic.DataStreamWriter", f"{_SQL}.streaming.DataStreamWriter")
SIGNATURES: tuple[Member, ...] = (
    # gateway
    Member((f"{_SQL}.SparkSession",), "sessionState", used_by="session_hadoop_configuration"),
    Member((f"{_SQL}.internal.SessionState",), "newHadoopConf",
           used_by="session_hadoop_configuration"),
    Member(("scala.jdk.javaapi.CollectionConverters",), "asJava", ("scala.collection.Map",),
           used_by="as_java"),
    Member(("scala.jdk.javaapi.CollectionConverters",), "asJava", ("scala.collection.Seq",),
           used_by="as_java"),
    # plans
    Member((f"{_SQL}.classic.Dataset",), "queryExecution", used_by="query_execution"),
    Member((f"{_SQL}.execution.QueryExecution",), "analyzed", used_by="analyzed_plan"),
    Member((f"{_SQL}.api.python.PythonSQLUtils",), "explainString",
           (f"{_SQL}.execution.QueryExecution", "java.lang.String"), used_by="explain_extended"),
    *(Member(_WRITER, f"field:{field}", used_by="writer_field")
      for field in ("outputMode", "trigger", "source", "extraOptions")),
    # state_store
    Member((f"{STATE}.StateStore",), "stop", used_by="stop_state_stores"),
    Member((f"{STATE}.RocksDBMemoryManager",), "getNumRocksDBInstances", ("boolean",),
           used_by="rocksdb_instances_under_bounded_memory"),
    Member(("org.apache.spark.util.Utils",), "classForName",
           ("java.lang.String", "boolean", "boolean"), used_by="spark_class"),
    Member((SCHEMA_READER,), "createSchemaReader", ("java.lang.String",),
           used_by="read_v3_schema_file"),
    Member((f"{_SQL}.types.DataType",), "fromJson", ("java.lang.String",),
           used_by="version_map_sizes"),
    Member((PREFIX_MAP,), "<init>", (f"{_SQL}.types.StructType", "int", "scala.Option"),
           used_by="version_map_sizes"),
    Member((PLAIN_MAP,), "<init>", ("scala.Option",), used_by="version_map_sizes"),
    Member(("org.apache.spark.util.SizeEstimator",), "estimate", ("java.lang.Object",),
           used_by="version_map_sizes"),
    # rewriter
    Member((REWRITER_CLASS,), "<init>", VERIFIED_CONSTRUCTOR, used_by="run_state_rewriter"),
    Member((REWRITER_CLASS,), "run", used_by="run_state_rewriter"),
    # planning
    Member((f"{_SQL}.classic.SparkSession",), "cloneSession", used_by="plan_restart"),
    Member((f"{_SQL}.internal.SessionState",), "conf", used_by="plan_restart"),
    Member(OFFSET_SEQ_METADATA, "apply", ("java.lang.String",), used_by="plan_restart"),
    Member(OFFSET_SEQ_METADATA, "setSessionConf",
           (f"{_STREAMING}.checkpointing.OffsetSeqMetadataBase", f"{_SQL}.internal.SQLConf"),
           used_by="plan_restart"),
    Member(WATERMARK_PROPAGATOR, "noop", used_by="plan_restart"),
    Member(INCREMENTAL_EXECUTION, "<init>", KNOWN_PARAMETERS, leading=True, used_by="plan_restart"),
    Member(INCREMENTAL_EXECUTION, "executedPlan", used_by="plan_restart"),
)


def _signatures(cls, name: str) -> list[tuple[str, ...]]:
    members = cls.getConstructors() if name == "<init>" else \
        [m for m in cls.getMethods() if str(m.getName()) == name]
    return [tuple(str(t.getName()) for t in m.getParameterTypes()) for m in members]


def mismatch(spark, member: Member) -> str | None:
    """Why this Spark does not have ``member`` as listed, in one line; None when it has."""
    try:
        cls = java_class(spark, member.classes)
    except LookupError:
        return f"{member.line()}: the class is not in this Spark"
    if member.name.startswith("field:"):
        try:
            cls.getDeclaredField(member.name[6:])
            return None
        except Exception:  # noqa: BLE001 - NoSuchFieldException through Py4J
            return f"{member.line()}: no such field"
    found = _signatures(cls, member.name)
    size = len(member.parameters)
    if any(s[:size] == member.parameters if member.leading else s == member.parameters
           for s in found):
        return None
    seen = "; ".join(f"({', '.join(t.rsplit('.', 1)[-1] for t in s)})" for s in found) or "none"
    return f"{member.line()}: found {seen}"


def mismatches(spark, members: tuple[Member, ...] = SIGNATURES) -> list[str]:
    """A line for each of ``members`` this Spark does not have as listed (classic sessions)."""
    return [line for line in (mismatch(spark, m) for m in members) if line is not None]
