"""Where Spark keeps a state row: in partition ``pmod(murmur3 hash of the partitioning key, n)``
(the ``hash`` SQL function is that hash, and ``repartition(n, key)`` places rows by it).

Which part of a store's key is the partitioning key differs by store: the whole key
(aggregations, deduplication, a join's ``keyToNumValues``, a processor's grouping key), or the key
without its last field (a join's ``keyWithIndexToValue`` adds the value's index; a session window
adds the session). :data:`RULES` names the two; a runbook either checks which one places every
row where it is (07) or takes it from the store's kind (:func:`key_width_cut`).
"""
from __future__ import annotations

from .checkpoint import Checkpoint
from .operators import StateUnit, operator_model

# The placement rules, by how many trailing key fields are not part of the partitioning key.
RULES = ("key", "key without its last field")
# Stores whose key is the partitioning key and one more field.
_KEY_PLUS_ONE = ("join_rows",)
_KEY_PLUS_ONE_FAMILIES = ("session_window",)


def key_width_cut(ckpt: Checkpoint, unit: StateUnit) -> int:
    """How many trailing key fields are not part of the partitioning key (0 or 1)."""
    family = operator_model(ckpt, unit.operator_id).family
    return 1 if unit.kind in _KEY_PLUS_ONE or family in _KEY_PLUS_ONE_FAMILIES else 0


def _positional_key(df):
    """``df``'s key with its fields renamed ``f0, f1, ...``: fields can share a name (grouping
    expressions all become ``_groupingexpression``); the hash ignores names (it hashes values in
    order)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    fields = df.schema["key"].dataType.fields
    named = T.StructType([T.StructField(f"f{i}", f.dataType, f.nullable)
                          for i, f in enumerate(fields)])
    return F.col("key").cast(named), len(fields)


def partition_key(df, cut: int):
    """The partitioning key of ``df``'s rows as a struct of fields ``f0, f1, ...`` (positional: a
    join's key is ``field0`` in one store and named in the raw rows)."""
    from pyspark.sql import functions as F
    key, width = _positional_key(df)
    return F.struct(*[key[f"f{i}"].alias(f"f{i}") for i in range(width - cut)])


def partition_of(df, cut: int, num_partitions: int):
    """The partition Spark keeps each row of ``df`` in, on ``num_partitions``."""
    from pyspark.sql import functions as F
    return F.pmod(F.hash(partition_key(df, cut)), F.lit(num_partitions))


def rule_hashes(df) -> dict:
    """The hash column of each placement rule that applies to ``df``'s key, by rule name."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    if "key" not in df.columns or not isinstance(df.schema["key"].dataType, T.StructType):
        return {}
    width = len(df.schema["key"].dataType.fields)
    return {RULES[cut]: F.hash(partition_key(df, cut)) for cut in range(min(2, width))}


def canonical(column, dtype):
    """A struct column renamed to ``f0, f1, ...`` (metadata dropped), to compare by position
    (fields may share a name: grouping expressions all become ``_groupingexpression``)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    named = column.cast(T.StructType([T.StructField(f"f{i}", f.dataType, f.nullable)
                                      for i, f in enumerate(dtype.fields)]))
    return F.struct(*[named[f"f{i}"].alias(f"f{i}") for i in range(len(dtype.fields))])
