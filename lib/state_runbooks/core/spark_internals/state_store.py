"""Spark's state store classes in this JVM: its loaded stores, RocksDB's memory manager, its class
loader for a provider, the v3 state schema reader and the HDFS-backed store's version maps."""
from __future__ import annotations

from .gateway import hadoop_configuration, jvm, scala_object

STATE = "org.apache.spark.sql.execution.streaming.state"
SCHEMA_READER = f"{STATE}.SchemaHelper$SchemaReader$"
PREFIX_MAP = f"{STATE}.PrefixScannableHDFSBackedStateStoreMap"
PLAIN_MAP = f"{STATE}.NoPrefixHDFSBackedStateStoreMap"


def stop_state_stores(spark) -> None:
    """Close every state store this JVM keeps loaded (``StateStore.stop()``)."""
    jvm(spark).org.apache.spark.sql.execution.streaming.state.StateStore.stop()


def rocksdb_instances_under_bounded_memory(spark) -> int:
    """RocksDB instances this JVM runs under bounded memory
    (``RocksDBMemoryManager.getNumRocksDBInstances(true)``)."""
    manager = jvm(spark).org.apache.spark.sql.execution.streaming.state.RocksDBMemoryManager
    return int(manager.getNumRocksDBInstances(True))


def spark_class(spark, name: str):
    """A class loaded by Spark's class loader, as Spark loads ``providerClass``, not initialized
    (``Utils.classForName(name, false, false)``); raises what Py4J wraps
    (ClassNotFoundException)."""
    return jvm(spark).org.apache.spark.util.Utils.classForName(name, False, False)


def read_v3_schema_file(spark, local_path: str) -> list[tuple[str, str, str]]:
    """The column families of a v3 state schema file at ``local_path`` (a local file: the reader
    takes Hadoop's seekable stream), read by Spark's own reader: ``(name, key schema JSON, value
    schema JSON)`` each. Raises what another Spark version's reader raises."""
    view = jvm(spark)
    readers = scala_object(spark, (SCHEMA_READER,))
    local_fs = view.org.apache.hadoop.fs.FileSystem.getLocal(hadoop_configuration(spark)).getRaw()
    stream = local_fs.open(view.org.apache.hadoop.fs.Path(local_path))
    try:
        families = readers.createSchemaReader(stream.readUTF()).read(stream)
        return [(str(cf.colFamilyName()), str(cf.keySchema().json()), str(cf.valueSchema().json()))
                for cf in (families.apply(i) for i in range(families.size()))]
    finally:
        stream.close()


def version_map_sizes(spark, key_schema_json: str,
                      prefix_columns: int) -> tuple[int, int, int, int]:
    """SizeEstimator's bytes for one and for two empty prefix-scan version maps of the key schema
    (``PrefixScannableHDFSBackedStateStoreMap(schema, prefix columns, None)``), then for one and
    two plain ones (``NoPrefixHDFSBackedStateStoreMap(None)``). Raises on a Spark whose maps
    differ."""
    view = jvm(spark)
    schema = view.org.apache.spark.sql.types.DataType.fromJson(key_schema_json)
    none = view.scala.Option.empty()
    prefix, plain = getattr(view, PREFIX_MAP), getattr(view, PLAIN_MAP)
    estimate = view.org.apache.spark.util.SizeEstimator.estimate

    def held(maps) -> int:
        kept = view.java.util.ArrayList()
        for m in maps:
            kept.add(m)
        return int(estimate(kept))
    one, two = prefix(schema, prefix_columns, none), prefix(schema, prefix_columns, none)
    plain_one, plain_two = plain(none), plain(none)
    return held([one]), held([one, two]), held([plain_one]), held([plain_one, plain_two])
