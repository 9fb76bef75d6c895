"""Where a key lives: the partition Spark keeps it in (its rule, from the values ``key_where``
fixes), and reads that load only that partition: from a view of its files where one can be made
(:mod:`~state_runbooks.core.fs.partition_view`), else, at one batch, from the partition's newest
snapshot at or before it (``snapshotStartBatchId`` and ``snapshotPartitionId``), else every
partition."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.fs.partition_view import partition_view
from state_runbooks.core.operators import StateUnit
from state_runbooks.core.state_files import INCREMENTAL_KINDS, SNAPSHOT_KINDS
from state_runbooks.core.state_placement import key_width_cut, partition_of
from state_runbooks.core.state_reader import load_unit

from .condition import fixes, leaf_paths


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


def place(ckpt: Checkpoint, unit: StateUnit, key_type, fixed: dict,
          key_where: str = "") -> Placement:
    """The key's partition by Spark's rule: the hash of the partitioning key's values, modulo the
    partition count (computed by Spark on a one-row frame of those values). Where the values fix
    the whole key, Spark also evaluates ``key_where`` on it: a key that does not satisfy it means
    the values were not read as Spark reads the condition, and every partition is read."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    cut = key_width_cut(ckpt, unit)
    partitioning = T.StructType(key_type.fields[:len(key_type.fields) - cut])
    n = unit.num_partitions
    if not fixes(fixed, partitioning):
        return Placement(None, n, "key_where does not fix every column of the partitioning key ("
                         + ", ".join(f.name for f in partitioning.fields) + "): every partition "
                         "is read")
    whole = all(path in fixed for path in leaf_paths(key_type))
    one = ckpt.spark.range(1).select(_literal_struct(key_type if whole else partitioning, fixed,
                                                     "key").alias("key"))
    partition_column = partition_of(one, cut if whole else 0, n).alias("p")
    try:  # a condition over more than the key (value, partition_id) is not Spark's to judge here
        row = one.select(partition_column, F.expr(key_where if whole and key_where else "true")
                         .alias("holds")).first()
    except Exception:  # noqa: BLE001 - Spark's analysis of it on a key alone failed
        row = {"p": one.select(partition_column).first()["p"], "holds": True}
    if row["holds"] is not True:
        return Placement(None, n, "the key the values of key_where make does not satisfy "
                         "key_where in Spark: every partition is read")
    partition = int(row["p"])
    return Placement(partition, n, f"Spark's rule puts it in partition {partition} of {n}: the "
                     "hash of its partitioning key modulo the partition count")


def _kept_batches(ckpt: Checkpoint, unit: StateUnit, partition: int | None, kinds) -> set[int]:
    """The batches of which ``partition`` (None: every partition) keeps a file of ``kinds``."""
    kept: dict[int, set[int]] = {p: set() for p in range(unit.num_partitions)}
    for f in ckpt.state_files(unit.operator_id, unit.files_store):
        if f.kind in kinds and f.partition_id in kept:
            kept[f.partition_id].add(f.batch_id)
    if partition is not None:
        return kept.get(partition, set())
    return set.intersection(*kept.values()) if kept else set()


def snapshot_batches(ckpt: Checkpoint, unit: StateUnit, partition: int | None) -> list[int]:
    """The batches whose state the partition keeps as a snapshot (a ``.snapshot`` or ``.zip``
    file), which Spark's reader can start one partition from; listed once for a whole trace."""
    return [] if partition is None else sorted(_kept_batches(ckpt, unit, partition,
                                                             SNAPSHOT_KINDS))


def has_changes(ckpt: Checkpoint, unit: StateUnit, partition: int | None, first: int,
                last: int) -> bool:
    """Whether ``partition`` (None: every partition) keeps the changes of every batch ``first``
    .. ``last`` (a ``.delta`` or ``.changelog`` file), which Spark's change feed reads: RocksDB
    keeps them only with changelog checkpointing."""
    return set(range(first, last + 1)) <= _kept_batches(ckpt, unit, partition, INCREMENTAL_KINDS)


def partition_root(ckpt: Checkpoint, unit: StateUnit, placement: Placement):
    """A context giving ``(root, why)``: the root of a view holding only the key's partition (its
    rows read as partition 0), or None and why there is none."""
    if placement.partition_id is None:
        return contextlib.nullcontext((None, "key_where does not fix the key"))
    return partition_view(ckpt.spark, ckpt.fs, unit.operator_id, placement.partition_id,
                          ckpt.format_version)


def read_at(ckpt: Checkpoint, unit: StateUnit, batch_id: int, partition: int | None,
            snapshots: list[int], view: str | None = None):
    """The unit's state at ``batch_id`` (checked against the retained range by the caller): only
    ``partition`` from its ``view``, or where one of its ``snapshots`` is at or before the batch
    (the second value is True then), else every partition."""
    if view:
        return load_unit(ckpt, unit, {"batchId": batch_id}, view), True
    start = max((b for b in snapshots if b <= batch_id), default=None)
    one = partition is not None and start is not None
    options = {"batchId": batch_id}
    if one:
        options.update(snapshotStartBatchId=start, snapshotPartitionId=partition)
    return load_unit(ckpt, unit, options), one
