"""How a demo query writes its checkpoint files on a local disk.

Spark writes each checkpoint file under a temporary name and renames it into place, through its
checkpoint file manager. The default one goes through Hadoop's FileContext, whose rename on the
local file system forks a ``readlink`` process for each path it checks when Hadoop has no native
library (pip's pyspark ships none): about 60 processes per micro-batch of an aggregation on four
partitions. Spark's FileSystem-based manager, which Spark itself uses where FileContext is not
available, writes the same files (the HDFS-backed store's with the same bytes) and none of those
processes, and demo batches take markedly less time (tests/benchmarks/README.md, "Design choices
measured").

Only while a demo checkpoint is first written, from nothing. A query restarted on a checkpoint that
exists (a demo continued, a restart after a fault, a probe of what Spark does with a damaged file)
runs with Spark's default manager, as your query does: the two read a damaged file differently
(a query's metadata file cut short: EOFException through the default, ChecksumException through
FileSystem's, which checks it against its ``.crc`` sidecar). A checkpoint of yours is
written by your query, with your settings; nothing here changes them.
"""
from __future__ import annotations

from state_runbooks.common.spark_settings import CHECKPOINT_FILE_MANAGER_CONF
from state_runbooks.core.fs.causes import scheme_of

# Spark moved its checkpoint classes to a package of their own; the older name comes second.
FILE_SYSTEM_MANAGERS = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager",
    "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager",
)
_manager_of_version: dict[str, str | None] = {}


def local_write_conf(spark, checkpoint_path: str) -> dict[str, str]:
    """The session conf that makes a demo query on ``checkpoint_path`` write through Spark's
    FileSystem-based checkpoint file manager; {} off the local disk, or where this Spark has none
    of the known names (its default manager then writes, as for any query)."""
    if scheme_of(checkpoint_path) not in (None, "file"):
        return {}
    if spark.version not in _manager_of_version:
        _manager_of_version[spark.version] = next(
            (name for name in FILE_SYSTEM_MANAGERS if _spark_has_class(spark, name)), None)
    manager = _manager_of_version[spark.version]
    return {CHECKPOINT_FILE_MANAGER_CONF: manager} if manager else {}


def _spark_has_class(spark, name: str) -> bool:
    """Whether Spark (the driver's JVM, or the Connect server's) can load class ``name``: asked
    with SQL's ``try_reflect`` (null where it cannot), the same over classic Spark and Connect."""
    row = spark.range(1).selectExpr(f"try_reflect('java.lang.Class', 'forName', '{name}') AS c")
    return row.first().c is not None
