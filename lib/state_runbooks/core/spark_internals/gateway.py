"""PySpark's handles on the JVM of a classic session (a Spark Connect session has none), and the
plain Java reached through them: the one module of the library that takes them."""
from __future__ import annotations

import weakref

_JVM_MEMBERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # per JVM: name -> member


def jvm(spark):
    """The session's Py4J view of the JVM (``jvm.java.lang.System``, ``jvm.org.apache...``)."""
    return spark._jvm


def java_session(spark):
    """The JVM's ``SparkSession`` behind the Python one."""
    return spark._jsparkSession


def hadoop_configuration(spark):
    """The SparkContext's Hadoop configuration (the credentials and file systems of the cluster)."""
    return spark._jsc.hadoopConfiguration()


def session_hadoop_configuration(spark):
    """A Hadoop configuration with this session's settings on top
    (``sessionState().newHadoopConf()``), as Spark's own state writers take it."""
    return spark._jsparkSession.sessionState().newHadoopConf()


def jvm_member(view, name: str):
    """A Java class, static method or static field by its full name (``org.apache.hadoop.fs.Path``,
    ``org.apache.commons.io.IOUtils.toByteArray``), looked up once per JVM. Py4J asks the JVM at
    each step of ``jvm.a.b.C.m``: hashing a file took 25 round trips, 4 with the lookups kept."""
    members = _JVM_MEMBERS.setdefault(view, {})
    if name not in members:
        found = view
        for part in name.split("."):
            found = getattr(found, part)
        members[name] = found
    return members[name]


def java_class(spark, names: tuple[str, ...]):
    """The first of ``names`` this Spark has (a class moved between releases), loaded and
    initialized by the context class loader; LookupError when it has none."""
    view = spark._jvm
    loader = view.Thread.currentThread().getContextClassLoader()
    for name in names:
        try:
            return view.java.lang.Class.forName(name, True, loader)
        except Exception:  # noqa: BLE001 - not in this Spark version: try the next name
            continue
    raise LookupError(f"none of {', '.join(names)} in this Spark")


def scala_object(spark, names: tuple[str, ...]):
    """The instance of a Scala ``object`` (its class named with ``$``), as :func:`java_class`."""
    return java_class(spark, names).getField("MODULE$").get(None)


def as_java(spark, scala_collection):
    """A Scala collection seen as its Java counterpart (Py4J then iterates it as a Python one)."""
    return spark._jvm.scala.jdk.javaapi.CollectionConverters.asJava(scala_collection)


def jvm_pid(spark) -> int:
    """The process id of the session's JVM."""
    return int(spark._jvm.java.lang.ProcessHandle.current().pid())


def heap_used_after_full_gc(spark) -> int:
    """Bytes of heap this JVM uses after a full GC; raises where the JVM is out of reach."""
    bean = spark._jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
    bean.gc()
    return int(bean.getHeapMemoryUsage().getUsed())


def start_callback_server(spark) -> None:
    """The gateway's callback server, through which the JVM calls Python objects (as
    ``foreachBatch`` does)."""
    from pyspark.java_gateway import ensure_callback_server_started

    ensure_callback_server_started(spark.sparkContext._gateway)


def new_array(spark, java_type: str, items: list):
    """A Java array of ``java_type`` (``Object``, ``Class``) holding ``items``."""
    gateway = spark.sparkContext._gateway
    array = gateway.new_array(getattr(spark._jvm, java_type), len(items))
    for i, item in enumerate(items):
        array[i] = item
    return array
