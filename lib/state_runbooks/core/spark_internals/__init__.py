"""Every call of the library into Spark's JVM, in one place: on a Spark upgrade, the file to read
first. The other modules call the functions here and never take PySpark's handles on the JVM
(``_jvm``, ``_jsc``, ``_jsparkSession``) themselves (``tests/unit/test_import_layers.py`` checks it).

Spark's internal classes promise nothing from one release to the next: :mod:`.signatures` lists each
name called here with the signature it is called with, and :func:`mismatches` checks that this
Spark has them (``tests/spark/test_spark_internals.py``); the callers that can refuse or fall back
also check before use (:func:`state_runbooks.safety.state_rewriter.rewriter_presence`, planning's
``LookupError``, the estimates' lower bound). Classic sessions only: Spark Connect has no JVM here.

- :mod:`.gateway`: the handles (the JVM view, the Java session, Hadoop configurations), members
  looked up once per JVM, Scala objects and collections, the JVM's process and heap, callbacks
- :mod:`.plans`: a DataFrame's plans and explain text; a classic stream writer's settings
- :mod:`.state_store`: loaded stores, RocksDB's memory manager, Spark's class loader, the v3 state
  schema reader, the HDFS-backed store's version maps
- :mod:`.rewriter`: the state rewriter's constructors and one run of it
- :mod:`.planning`: a query planned as a restart's batch (``IncrementalExecution``)
- :mod:`.signatures`: the index of names and signatures, and its check
"""
from .gateway import (
    as_java,
    hadoop_configuration,
    heap_used_after_full_gc,
    java_class,
    java_session,
    jvm,
    jvm_member,
    jvm_pid,
    new_array,
    scala_object,
    session_hadoop_configuration,
    start_callback_server,
)
from .planning import plan_restart
from .plans import analyzed_plan, explain_extended, query_execution, writer_field
from .rewriter import REWRITER_CLASS, VERIFIED_CONSTRUCTOR, rewriter_constructors, run_state_rewriter
from .signatures import SIGNATURES, Member, mismatches
from .state_store import (
    read_v3_schema_file,
    rocksdb_instances_under_bounded_memory,
    spark_class,
    stop_state_stores,
    version_map_sizes,
)

__all__ = [
    "as_java", "hadoop_configuration", "heap_used_after_full_gc", "java_class", "java_session",
    "jvm", "jvm_member", "jvm_pid", "new_array", "scala_object", "session_hadoop_configuration",
    "start_callback_server", "plan_restart", "analyzed_plan", "explain_extended",
    "query_execution", "writer_field", "REWRITER_CLASS", "VERIFIED_CONSTRUCTOR",
    "rewriter_constructors", "run_state_rewriter", "SIGNATURES", "Member", "mismatches",
    "read_v3_schema_file", "rocksdb_instances_under_bounded_memory", "spark_class",
    "stop_state_stores", "version_map_sizes",
]
