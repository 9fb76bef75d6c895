"""Where a key lives: the partition Spark keeps it in (its rule, from the values ``key_where``
fixes), and a read of one batch's state that loads only that partition where Spark's reader can
(from the partition's newest snapshot at or before the batch: ``snapshotStartBatchId`` and
``snapshotPartitionId``), else every partition."""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import StateUnit
from state_runbooks.core.state_files import SNAPSHOT_KINDS
from state_runbooks.core.state_placement import key_width_cut, partition_of
from state_runbooks.core.state_reader import load_unit

from .condition import fixes


@dataclass(frozen=True)
class Placement:
    partition_id: int | None  # None: key_where does not fix the partitioning key
    num_partitions: int
    why: str


def _literal_struct(dtype, fixed: dict, prefix: str):
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    fields = []
    for f in dtype.fields:
        name = f"{prefix}.{f.name}"
        if name in fixed:
            fields.append(F.expr(fixed[name]).cast(f.dataType).alias(f.name))
        elif isinstance(f.dataType, T.StructType):
            fields.append(_literal_struct(f.dataType, fixed, name).alias(f.name))
    return F.struct(*fields)


def place(ckpt: Checkpoint, unit: StateUnit, key_type, fixed: dict) -> Placement:
    """The key's partition by Spark's rule: the hash of the partitioning key's values, modulo the
    partition count (computed by Spark on a one-row frame of those values)."""
    from pyspark.sql import types as T
    cut = key_width_cut(ckpt, unit)
    partitioning = T.StructType(key_type.fields[:len(key_type.fields) - cut])
    n = unit.num_partitions
    if not fixes(fixed, partitioning):
        return Placement(None, n, "key_where does not fix every column of the partitioning key ("
                         + ", ".join(f.name for f in partitioning.fields) + "): every partition "
                         "is read")
    one = ckpt.spark.range(1).select(_literal_struct(partitioning, fixed, "key").alias("key"))
    partition = int(one.select(partition_of(one, 0, n)).first()[0])
    return Placement(partition, n, f"Spark's rule puts it in partition {partition} of {n}: the "
                     "hash of its partitioning key modulo the partition count")


def snapshot_batches(ckpt: Checkpoint, unit: StateUnit, partition: int | None) -> list[int]:
    """The batches whose state the partition keeps as a snapshot (a ``.snapshot`` or ``.zip``
    file), which Spark's reader can start one partition from; listed once for a whole trace."""
    if partition is None:
        return []
    return sorted(f.batch_id for f in ckpt.state_files(unit.operator_id, unit.files_store)
                  if f.partition_id == partition and f.kind in SNAPSHOT_KINDS)


def read_at(ckpt: Checkpoint, unit: StateUnit, batch_id: int, partition: int | None,
            snapshots: list[int]):
    """The unit's state at ``batch_id`` (checked against the retained range by the caller): only
    ``partition`` where one of its ``snapshots`` is at or before the batch (the second value is
    True then), else every partition."""
    start = max((b for b in snapshots if b <= batch_id), default=None)
    one = partition is not None and start is not None
    options = {"batchId": batch_id}
    if one:
        options.update(snapshotStartBatchId=start, snapshotPartitionId=partition)
    return load_unit(ckpt, unit, options), one
