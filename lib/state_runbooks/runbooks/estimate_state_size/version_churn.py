"""What a batch inserted, removed and replaced in a unit Spark serves no change feed for (a state
variable or the timers of transformWithState, a join side kept as a column family, RocksDB without
changelog checkpointing): its state at that batch and the one before, compared key by key.

Row counts alone cannot say it: a batch that rewrites every key leaves the count where it was. A
row is known by its key (and, where the unit has one, its map key or timer time: a map entry or a
timer is a row of its own); its other columns are its value. Rows of one key (the elements of a
list variable) are compared as a whole: a changed list counts as replaced rows.
"""
from __future__ import annotations

from functools import reduce

from state_runbooks.common.errors import spark_errors
from state_runbooks.core.state_reader import per_core_tasks, read_state

# Columns that tell one row from another beside ``key``, where a unit's reader gives them.
IDENTITY_COLUMNS = ("key", "user_map_key", "expiration_timestamp_ms")


def version_churn(ckpt, units, batch: int) -> dict:
    """``{(unit label, partition): (inserted, removed, replaced)}`` of ``batch`` against
    ``batch - 1`` for every unit, in one Spark job (a shuffle of both versions' keys)."""

    if not units:
        return {}
    counted = reduce(lambda a, b: a.unionByName(b), [_unit_churn(ckpt, u, batch) for u in units])
    with spark_errors(f"comparing the state of batch {batch} with batch {batch - 1}"):
        result = counted.collect()
    return {(r["store"], int(r["partition_id"])): (int(r["inserted"]), int(r["removed"]),
                                                   int(r["replaced"])) for r in result}


def _unit_churn(ckpt, unit, batch: int):
    """Inserted, removed and replaced rows per partition of one unit (``store``,
    ``partition_id``, ``inserted``, ``removed``, ``replaced``). Per unit: units' keys differ in
    type, so only their counts are brought together."""
    from pyspark.sql import functions as F

    keys = _key_digests(ckpt, unit, batch - 1).unionByName(_key_digests(ckpt, unit, batch))
    old, new = F.col("old"), F.col("new")
    # One row per key: its rows and digest in the version before and the batch's.
    paired = keys.groupBy("store", "partition_id", "id").agg(
        F.max(F.when(F.col("batch_id") < batch, F.struct("rows", "digest"))).alias("old"),
        F.max(F.when(F.col("batch_id") == batch, F.struct("rows", "digest"))).alias("new"))
    both = old.isNotNull() & new.isNotNull()
    changed = both & (old["digest"] != new["digest"])
    return paired.groupBy("store", "partition_id").agg(
        F.sum(F.when(old.isNull(), new["rows"])
              .when(changed, F.greatest(new["rows"] - old["rows"], F.lit(0)))
              .otherwise(0)).alias("inserted"),
        F.sum(F.when(new.isNull(), old["rows"])
              .when(changed, F.greatest(old["rows"] - new["rows"], F.lit(0)))
              .otherwise(0)).alias("removed"),
        F.sum(F.when(changed, F.least(old["rows"], new["rows"])).otherwise(0)).alias("replaced"))


def _key_digests(ckpt, unit, batch_id: int):
    """Per key of ``unit`` at ``batch_id``: ``store``, ``batch_id``, ``partition_id``, ``id`` (the
    identity columns), ``rows`` and ``digest`` (a hash of its values' hashes, in any order)."""
    from pyspark.sql import functions as F

    state = read_state(ckpt, unit.operator_id, unit.store_name, batch_id, unit.state_variable)
    identity = [c for c in IDENTITY_COLUMNS if c in state.columns]
    values = [c for c in state.columns if c not in identity and c != "partition_id"]
    value_hash = F.xxhash64(*values) if values else F.lit(0).cast("long")
    return (per_core_tasks(ckpt.spark, state)
            .select("partition_id", F.struct(*identity).alias("id"), value_hash.alias("h"))
            .groupBy("partition_id", "id")
            .agg(F.count("*").alias("rows"),
                 F.xxhash64(F.array_sort(F.collect_list("h"))).alias("digest"))
            .select(F.lit(unit.label).alias("store"), F.lit(batch_id).alias("batch_id"),
                    "partition_id", "id", "rows", "digest"))
