"""Facts about the runtime: Spark version, open-source Spark or Databricks, provider class names."""
from __future__ import annotations

import os
from dataclasses import dataclass

OSS_HDFS_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
OSS_ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
DATABRICKS_ROCKSDB_PROVIDER = "com.databricks.sql.streaming.state.RocksDBStateStoreProvider"

# How state rows are encoded in the store ("unsaferow", Spark's default, or "avro"); pinned.
DEFAULT_MIN_BATCHES_TO_RETAIN = 100

RUNTIMES = ("oss", "databricks")


@dataclass(frozen=True)
class ProviderClasses:
    """The state store provider classes of one runtime."""
    runtime: str
    hdfs: str
    rocksdb: str


def is_databricks(environ: dict[str, str] | None = None) -> bool:
    """Databricks sets DATABRICKS_RUNTIME_VERSION in every cluster and job."""
    environ = os.environ if environ is None else environ
    return bool(environ.get("DATABRICKS_RUNTIME_VERSION"))


def detect_runtime(requested: str = "auto", environ: dict[str, str] | None = None) -> str:
    """``auto`` -> ``databricks`` or ``oss`` from the environment; other values are checked."""
    if requested == "auto":
        return "databricks" if is_databricks(environ) else "oss"
    if requested not in RUNTIMES:
        from .errors import RunbookError
        raise RunbookError(f"runtime {requested!r} is not known: use 'auto', 'oss' or 'databricks'")
    return requested


def provider_classes(runtime: str = "auto", environ: dict[str, str] | None = None) -> ProviderClasses:
    """Provider classes for the runtime. The HDFS-backed provider is the same class on both."""
    runtime = detect_runtime(runtime, environ)
    rocksdb = DATABRICKS_ROCKSDB_PROVIDER if runtime == "databricks" else OSS_ROCKSDB_PROVIDER
    return ProviderClasses(runtime=runtime, hdfs=OSS_HDFS_PROVIDER, rocksdb=rocksdb)


def provider_kind(provider_class: str | None) -> str:
    """``hdfs``, ``rocksdb`` or ``unknown`` for a provider class name (None: Spark's default, HDFS)."""
    if not provider_class:
        return "hdfs"
    name = provider_class.rsplit(".", 1)[-1]
    if name == "HDFSBackedStateStoreProvider":
        return "hdfs"
    if name == "RocksDBStateStoreProvider":
        return "rocksdb"
    return "unknown"


