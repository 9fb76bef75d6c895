"""The migrated rows: every row of a changed store read with Spark's state reader, mapped to the
new key and value (:mod:`.mapping`), and placed in the partition Spark will look for it in: the
hash of its new partitioning key (:mod:`state_runbooks.core.state_placement`; a key change moves
rows between partitions).

The same mapped rows serve the plan (counted, checked, a few shown, their checksum taken), the
change (encoded to Spark's bytes for its state rewriter) and the verification (the checksum the
rewritten store must equal). Everything runs in Spark; the driver gets counts and a few examples.
"""
from __future__ import annotations

from state_runbooks.core.operators import StateUnit
from state_runbooks.core.state_placement import canonical, partition_key
from state_runbooks.core.unsafe_row import positional

from .mapping import Mapping
from .schema_change import StoreChange

PK = "_pk"  # the new partitioning key, positional: what rows are placed by
OLD = "_old_"  # prefix of the old key and value beside the new ones


def _struct(schema: dict):
    from pyspark.sql import types as T
    return T.StructType.fromJson(schema)


def _field_column(mapping: Mapping, name: str, old_col, old_type, new_type, fill: dict):
    """The column of the new field ``name`` (a path) from ``old_col`` (the old struct, of
    ``old_type``)."""
    from pyspark.sql import functions as F
    source = next(s for s in mapping.sources if s.field == name)
    if source.kind == "fill":
        return F.expr(fill[name]).cast(new_type)
    # By position: fields may share a name (grouping expressions all become _groupingexpression).
    old_field = old_col.cast(positional(old_type))[f"f{source.origin}"]
    if source.kind == "rebuilt":
        return _struct_column(mapping, name, old_field,
                              old_type.fields[source.origin].dataType, new_type, fill)
    return old_field.cast(new_type)


def _struct_column(mapping: Mapping, path: str, old_col, old_type, new_type, fill: dict):
    from pyspark.sql import functions as F
    fields = [_field_column(mapping, f"{path}.{f.name}", old_col, old_type, f.dataType, fill)
              .alias(f.name) for f in new_type.fields]
    built = F.struct(*fields)
    return F.when(old_col.isNull(), F.lit(None)).otherwise(built) if old_type else built


def part_column(mapping: Mapping, before: dict, after: dict, fill: dict):
    """The new ``key`` or ``value`` from the old one, as a column of a frame of old rows."""
    from pyspark.sql import functions as F
    old = F.col(mapping.part)
    if not mapping.changed:
        return old
    return _struct_column(mapping, mapping.part, old, _struct(before), _struct(after), fill)


def mapped_rows(ckpt, store: StoreChange, unit: StateUnit, batch_id: int, fill: dict, cut: int):
    """The store's rows at ``batch_id`` with ``key`` and ``value`` mapped, the old ones beside
    them (``_old_key``, ``_old_value``, ``_old_partition_id``), and ``_pk``, the new
    partitioning key."""
    from pyspark.sql import functions as F

    from state_runbooks.core.state_reader import read_unit
    old = read_unit(ckpt, unit, batch_id)
    new = old.select(F.col("key").alias(OLD + "key"), F.col("value").alias(OLD + "value"),
                     F.col("partition_id").alias(OLD + "partition_id"),
                     part_column(store.key, store.key_before, store.key_after, fill).alias("key"),
                     part_column(store.value, store.value_before, store.value_after, fill)
                     .alias("value"))
    return new.withColumn(PK, partition_key(new, cut))


def unchanged_rows(ckpt, unit: StateUnit, batch_id: int, cut: int):
    """A store the change keeps as it is, read with Spark's reader (an HDFS-backed source,
    whose raw rows Spark refuses), with its partitioning key."""
    from state_runbooks.core.state_reader import read_unit
    rows = read_unit(ckpt, unit, batch_id).select("key", "value")
    return rows.withColumn(PK, partition_key(rows, cut))


def raw_with_key(raw, family: str | None = None):
    """Spark's raw rows of a store (or of one column family), with their partitioning key."""
    from pyspark.sql import functions as F
    rows = raw if family is None else raw.where(F.col("column_family_name") == family)
    pk_type = raw.schema["partition_key"].dataType
    return rows.select(canonical(F.col("partition_key"), pk_type).alias(PK), "key_bytes",
                       "value_bytes", "column_family_name")


def placed(rows, num_partitions: int):
    """``rows`` in the partition of their ``_pk`` (Spark's rule: the hash of the key, modulo the
    partition count): the state rewriter writes each task's rows into the partition of its
    task."""
    return rows.repartition(num_partitions, PK)


def expected_partition(num_partitions: int):
    from pyspark.sql import functions as F
    return F.pmod(F.hash(F.col(PK)), F.lit(num_partitions)).alias("partition_id")
