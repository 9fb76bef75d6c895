"""The transform Spark's rewriter calls once per store: the raw rows to write, each in the
partition it belongs to.

- RocksDB source, nothing dropped: no transform at all (the rows as Spark read them).
- RocksDB source, keys dropped: the raw rows without the dropped keys (an anti-join on the
  partitioning key, which Spark's raw rows carry decoded). Each task writes the partition it
  computes, so placement is what makes the rows findable: with few keys (broadcast) the rows never
  leave the partition they were read from; with many (a shuffle) they are placed again with
  Spark's own rule for state, ``repartition(n, partition_key)`` (as its offline repartition does).
- HDFS-backed source: the rows read with Spark's ordinary state reader from the checkpoint
  (Spark's raw reader refuses that provider), without the dropped keys, encoded back to Spark's
  bytes (:mod:`.encoding`). Without a drop the reader's partitions are the state partitions and
  stay as they are; with one, they are placed again as above.
"""
from __future__ import annotations

from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.operators import operator_model, state_units
from state_runbooks.core.state_placement import canonical, key_width_cut, partition_key
from state_runbooks.core.state_reader import read_unit
from state_runbooks.core.unsafe_row import encode_state_rows
from state_runbooks.safety.state_rewriter import as_raw_rows

from .plan import BROADCAST_KEYS, PK, Plan, without_dropped


def make_transform(ckpt: Checkpoint, plan: Plan, source_kind: str):
    """``transform(raw, operator_id, store)`` for :func:`~.rewriter.run_rewriter`, or None when
    the rows go as they are."""
    if source_kind != "hdfs" and not plan.dropped_keys:
        return None
    units = {(u.operator_id, u.store_name): u for u in state_units(ckpt) if not u.state_variable}

    def transform(raw, operator_id: int, store: str):
        keys = plan.dropped_keys.get(operator_id)
        n = operator_model(ckpt, operator_id).num_partitions
        if source_kind != "hdfs":
            return (_drop_raw(raw, keys, n, plan.dropped_key_counts[operator_id])
                    if keys is not None else raw)
        unit = units[(operator_id, store)]
        return _encode(ckpt, plan, unit, raw, keys, n)
    return transform


def _drop_raw(raw, keys, n: int, key_count: int):
    from pyspark.sql import functions as F
    pk_type = raw.schema["partition_key"].dataType
    narrow = key_count <= BROADCAST_KEYS
    side = F.broadcast(keys) if narrow else keys
    kept = (raw.withColumn(PK, canonical(F.col("partition_key"), pk_type))
            .join(side, on=PK, how="left_anti").drop(PK).select(*raw.columns))
    # Broadcast, the rows stay in the partitions they were read from; joined by a shuffle, they
    # are placed again by Spark's rule.
    return kept if narrow else kept.repartition(n, "partition_key")


def _encode(ckpt: Checkpoint, plan: Plan, unit, raw, keys, n: int):
    rows = read_unit(ckpt, unit, plan.batch_id)
    cut = key_width_cut(ckpt, unit)
    if keys is not None:
        count = plan.dropped_key_counts[unit.operator_id]
        rows = without_dropped(rows, keys, cut, count)
        if count > BROADCAST_KEYS:  # joined by a shuffle: placed again by Spark's rule
            rows = rows.repartition(n, partition_key(rows, cut))
    return as_raw_rows(encode_state_rows(rows), raw.schema)
