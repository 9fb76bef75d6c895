"""Read state rows with Spark's ``statestore`` data source, and size them as Spark stores them.

Every read is validated against the checkpoint first (operator, store and batch exist), so a wrong
parameter gets a one-line error naming the valid values instead of a Java stack trace.
"""
from __future__ import annotations

import contextlib
import itertools
from functools import reduce

from state_runbooks.common.errors import RunbookError, spark_errors
from state_runbooks.common.spark_settings import CHECKPOINT_FORMAT_CONF
from state_runbooks.session.spark_session import session_conf

from .checkpoint import DEFAULT_STORE, Checkpoint
from .operators import StateUnit, find_unit, state_units


def read_state(ckpt: Checkpoint, operator_id: int = 0, store_name: str = DEFAULT_STORE,
               batch_id: int = -1, state_variable: str | None = None, options: dict | None = None):
    """The state of one store (or one state variable of transformWithState) at one batch as a
    DataFrame: ``key``, ``value``, ``partition_id`` for stores; per-variable columns otherwise
    (lists and maps flattened, one row per element, as Spark's reader gives them by default).

    The reader options come from the operator model (``operators.state_units``); ``options``
    adds or overrides some (e.g. ``flattenCollectionTypes``). Spark's reader opens state lazily:
    a corrupt file fails when an action runs, so wrap actions on the result in
    :func:`~state_runbooks.common.errors.spark_errors` too.
    """
    unit = (find_unit(ckpt, operator_id, store_name, state_variable)
            or _unlisted_store(ckpt, operator_id, store_name, state_variable))
    return read_unit(ckpt, unit, batch_id, options)


def _unlisted_store(ckpt: Checkpoint, operator_id: int, store_name: str,
                    state_variable: str | None) -> StateUnit:
    """A store the checkpoint lists but the model reads otherwise (a join in state format 3 read
    as ``default``): read as asked, Spark's reader decides. Anything else: the one-line error
    naming what can be read."""
    units = state_units(ckpt, operator_id)
    variables = sorted(u.state_variable for u in units if u.state_variable)
    operator = ckpt.operator(operator_id)
    if variables and state_variable is None:
        raise RunbookError(f"operator {operator_id} ({operator.operator_name}) keeps its state in "
                           f"state variables: pass state_variable, one of {', '.join(variables)}")
    if state_variable is not None:
        raise RunbookError(f"operator {operator_id} ({operator.operator_name}) has no state "
                           f"variable {state_variable!r}; its variables: "
                           f"{', '.join(variables) or 'none'}")
    names = sorted({u.store_name for u in units})
    if names and store_name not in {s.store_name for s in operator.stores}:
        raise RunbookError(f"operator {operator_id} ({operator.operator_name}) has no store "
                           f"{store_name!r}; its stores: {', '.join(names)}")
    store = ckpt.store(operator_id, store_name)
    return StateUnit(operator_id, store.operator_name, store_name, None, "store",
                     store.num_partitions, tuple(range(store.num_partitions)),
                     {"storeName": store_name})


def read_unit(ckpt: Checkpoint, unit: StateUnit, batch_id: int = -1, options: dict | None = None):
    """The state of one unit of the operator model at one batch (-1: last committed)."""
    batch = ckpt.resolve_batch(batch_id, unit.operator_id)
    return load_unit(ckpt, unit, {"batchId": batch, **(options or {})})


def load_unit(ckpt: Checkpoint, unit: StateUnit, options: dict, root: str | None = None):
    """Spark's reader on one unit with ``options``, ``batchId`` among them, taken as given: for a
    caller that checked its batches against the retained range once (many reads of one range).
    ``root``: another root for the same checkpoint (a view of one partition of it)."""
    reader = ckpt.spark.read.format("statestore").option("operatorId", unit.operator_id)
    for name, value in {**unit.options, **options}.items():
        reader = reader.option(name, value)
    with spark_errors(f"reading state of operator {unit.operator_id} {unit.label} at batch "
                      f"{options['batchId']}"), format_conf(ckpt):
        df = reader.load(root or ckpt.spark_root)
        df.schema  # Spark Connect analyses lazily: a refused read fails here, not at load()
        return df


TASKS_PER_CORE = 2


def per_core_tasks(spark, df):
    """``df`` read by a few tasks per core of a classic session instead of one per state partition
    (and per batch and store): each task then reads several small partitions in turn, and the
    fixed cost of a task is paid a few times instead of 200 (tests/benchmarks/README.md). On
    Spark Connect (no core count on this side) ``df`` is returned as it is."""
    from state_runbooks.session.spark_session import is_connect

    if is_connect(spark):
        return df
    return df.coalesce(TASKS_PER_CORE * spark.sparkContext.defaultParallelism)


def quote_path(*parts: str) -> str:
    """A column path as SQL: each name in backticks (a name may hold dots or spaces)."""
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


# Spark's UnsafeRow format, the one rule every runbook states (how state rows of the HDFS-backed
# provider sit in memory, and how state files hold them unless the state is Avro-encoded).
UNSAFE_ROW_RULE = ("8 bytes of null bits per 64 fields, 8 bytes per field, variable-length data "
                   "rounded up to 8")


def unsafe_row_size_sql(column: str, schema) -> str:
    """Bytes of ``column`` (a SQL expression of a struct of ``schema``) in Spark's UnsafeRow
    format, as a SQL expression.

    That is how state rows are kept in memory by the HDFS-backed provider and written to state
    files: ``UNSAFE_ROW_RULE`` (variable-length data: strings, binaries, nested rows, arrays). The
    fixed-width part is summed here, once; only variable-length fields are measured row by row.
    SQL text, because every
    PySpark function called costs a dozen calls to the JVM (with DataFrame debugging on), four
    times as many for one store's measures.
    """
    from pyspark.sql import types as T

    lambdas = (f"x{i}" for i in itertools.count())  # nested lambdas need distinct names

    def round8(expr: str) -> str:
        return f"((({expr}) + 7) DIV 8 * 8)"

    def element_width(dtype) -> int:
        if isinstance(dtype, (T.BooleanType, T.ByteType)):
            return 1
        if isinstance(dtype, T.ShortType):
            return 2
        if isinstance(dtype, (T.IntegerType, T.FloatType, T.DateType)):
            return 4
        return 8

    def variable(col: str, dtype) -> str | None:
        """Bytes a value takes outside its 8-byte slot; None for fixed-width types."""
        if isinstance(dtype, (T.StringType, T.BinaryType)):
            return round8(f"octet_length({col})")
        if isinstance(dtype, T.DecimalType) and dtype.precision > 18:
            return "16L"
        if isinstance(dtype, T.CalendarIntervalType):
            return "16L"
        if isinstance(dtype, T.StructType):
            return row(col, dtype)
        if isinstance(dtype, T.ArrayType):
            return array(col, dtype.elementType)
        if isinstance(dtype, T.MapType):
            return (f"(8L + {array(f'map_keys({col})', dtype.keyType)}"
                    f" + {array(f'map_values({col})', dtype.valueType)})")
        return None

    def array(col: str, element_type) -> str:
        n = f"size({col})"
        size = f"8L + ({n} + 63) DIV 64 * 8 + {round8(f'{n} * {element_width(element_type)}')}"
        x = next(lambdas)
        element = variable(x, element_type)
        if element is not None:
            size += f" + aggregate({col}, 0L, (acc, {x}) -> acc + coalesce({element}, 0L))"
        return f"(CASE WHEN {col} IS NULL THEN 0L ELSE {size} END)"

    def row(col: str, struct) -> str:
        fields = struct.fields
        fixed = 8 * ((len(fields) + 63) // 64) + 8 * len(fields)
        sizes = [variable(f"{col}.{quote_path(f.name)}", f.dataType) for f in fields]
        parts = [f"{fixed}L", *(f"coalesce({v}, 0L)" for v in sizes if v is not None)]
        return f"(CASE WHEN {col} IS NULL THEN 0L ELSE {' + '.join(parts)} END)"

    return row(column, schema)


def union_over_batches(ckpt: Checkpoint, operator_id: int, store_name: str, batch_ids: list[int],
                       columns, state_variable: str | None = None):
    """One DataFrame over several batches' state (``batch_id`` added), for a single Spark job."""
    from pyspark.sql import functions as F

    frames = [read_state(ckpt, operator_id, store_name, b, state_variable)
              .select(F.lit(b).alias("batch_id"), *columns) for b in batch_ids]
    return reduce(lambda a, b: a.unionByName(b), frames)


def read_state_changes(ckpt: Checkpoint, operator_id: int, store_name: str, first_batch: int,
                       last_batch: int):
    """What batches ``first_batch`` .. ``last_batch`` changed in one store, from Spark's state
    change feed: ``batch_id``, ``change_type`` (``update`` for a put, ``delete``), ``key``,
    ``value``, ``partition_id``. Spark serves it for the HDFS-backed provider and for RocksDB with
    changelog checkpointing; both batches are checked against the retained range first.
    """
    ckpt.store(operator_id, store_name)
    first = ckpt.resolve_batch(first_batch, operator_id)
    last = ckpt.resolve_batch(last_batch, operator_id)
    with spark_errors(f"reading the changes of operator {operator_id} store {store_name} in "
                      f"batches {first}..{last}"):
        return change_feed(ckpt, operator_id, {"storeName": store_name}, first, last)


def format_conf(ckpt: Checkpoint):
    """The session conf Spark needs to read or rewrite this checkpoint, set while a read is
    planned or a rewrite runs: its checkpoint format (on v2 both fail without it, and the logs do
    not pin it)."""
    if ckpt.format_version == 1:
        return contextlib.nullcontext()
    return session_conf(ckpt.spark, {CHECKPOINT_FORMAT_CONF: str(ckpt.format_version)})


def change_feed(ckpt: Checkpoint, operator_id: int, options: dict, first_batch: int,
                last_batch: int, root: str | None = None):
    """Spark's change feed over ``first_batch`` .. ``last_batch`` with the reader ``options`` of a
    unit, as asked: no range checks, no error translation (05 probes damaged checkpoints with it).
    The feed takes no ``batchId``: Spark refuses both together (STDS_CONFLICT_OPTIONS). ``root``
    as for :func:`load_unit`."""
    reader = ckpt.spark.read.format("statestore").option("operatorId", operator_id)
    options = {**options, "readChangeFeed": "true", "changeStartBatchId": first_batch,
               "changeEndBatchId": last_batch}
    for name, value in options.items():
        reader = reader.option(name, value)
    with format_conf(ckpt):
        return reader.load(root or ckpt.spark_root)


def change_line_counts(ckpt: Checkpoint, unit, first_batch: int, last_batch: int):
    """The change feed's lines of ``unit`` (a store read by its name) per batch, partition and
    kind, ``first_batch`` .. ``last_batch``: columns ``store`` (the unit's label), ``batch_id``,
    ``partition_id``, ``kind`` (``update`` or ``delete``) and ``n``. A partial aggregation: no key
    is shuffled. Lines are keys only where a batch changes each key at most once per kind."""
    from pyspark.sql import functions as F

    feed = read_state_changes(ckpt, unit.operator_id, unit.store_name, first_batch, last_batch)
    counted = per_core_tasks(ckpt.spark, feed).groupBy("batch_id", "partition_id",
                                                       "change_type").count()
    return counted.select(F.lit(unit.label).alias("store"), "batch_id", "partition_id",
                          F.col("change_type").alias("kind"), F.col("count").alias("n"))
