"""State rows in the raw form Spark's state rewriter writes: UnsafeRow bytes.

Rows read with Spark's ordinary state reader (``key`` and ``value`` structs: an HDFS-backed
store, whose rows Spark's raw reader refuses, or rows mapped to a changed query's schema) are
turned into the bytes Spark keeps them as: UnsafeRow, byte for byte as Spark's own writer lays it
out (the null bits, an 8-byte slot per field, variable-length data after them, each piece rounded
up to 8 bytes with zeros). Exact bytes matter beyond the rows read back: RocksDB finds a key by
its bytes, so a key laid out otherwise would be read back equal and yet never found by the
restarted query (tests/spark/test_unsafe_row_encoding.py compares with Spark's own bytes, and the
runbooks' tests restart the query). Types outside :func:`unsupported_types` are refused before
anything is written.

The encoding runs in the executors' Python workers over Arrow batches: no row reaches the driver.
"""
from __future__ import annotations

import decimal
import struct

_FIXED = {"boolean": "<?", "byte": "<b", "short": "<h", "integer": "<i", "long": "<q",
          "float": "<f", "double": "<d", "date": "<i", "timestamp": "<q"}
_MAX_LONG_DIGITS = 18  # decimals up to this precision sit in their slot as an unscaled long
# Exact for Spark's widest decimal (38 digits): Python's default context rounds beyond 28.
_EXACT = decimal.Context(prec=decimal.MAX_PREC)


def unsupported_types(dtype, path: str = "") -> list[str]:
    """Columns of ``dtype`` (a struct) this encoding does not lay out, as ``path: type``."""
    from pyspark.sql import types as T
    out = []
    for f in dtype.fields:
        name = f"{path}.{f.name}" if path else f.name
        t = f.dataType
        if isinstance(t, T.StructType):
            out += unsupported_types(t, name)
        elif not isinstance(t, (T.BooleanType, T.ByteType, T.ShortType, T.IntegerType,
                                T.LongType, T.FloatType, T.DoubleType, T.DateType,
                                T.TimestampType, T.StringType, T.BinaryType, T.DecimalType,
                                T.NullType)):
            out.append(f"{name}: {t.simpleString()}")
    return out


def _plan(dtype) -> list:
    """A compact description of a struct type for the workers: (kind, extra) per field."""
    from pyspark.sql import types as T
    plan = []
    for f in dtype.fields:
        t = f.dataType
        if isinstance(t, T.StructType):
            plan.append(("struct", _plan(t)))
        elif isinstance(t, T.DecimalType):
            plan.append(("decimal", (t.precision, t.scale)))
        elif isinstance(t, (T.StringType, T.BinaryType)):
            plan.append(("bytes", None))
        elif isinstance(t, T.NullType):
            plan.append(("null", None))
        else:
            plan.append(("fixed", _FIXED[t.typeName()]))
    return plan


def encode_row(values, plan) -> bytes:
    """One UnsafeRow: ``values`` in field order (timestamps as microseconds, dates as days,
    decimals as ``decimal.Decimal``, nested structs as tuples or dicts)."""
    n = len(plan)
    bitset = (n + 63) // 64 * 8
    fixed = bytearray(bitset + 8 * n)
    var = bytearray()
    for i, ((kind, extra), value) in enumerate(zip(plan, values)):
        slot = bitset + 8 * i
        if kind == "decimal" and extra[0] > _MAX_LONG_DIGITS:
            # Spark reserves 16 zeroed bytes for a wide decimal, null or not.
            offset = len(fixed) + len(var)
            data = b""
            if value is not None:
                unscaled = _unscaled(value, extra[1])
                data = unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)
            var += data + bytes(16 - len(data))
            if value is None:
                _set_null(fixed, i)
                struct.pack_into("<q", fixed, slot, offset << 32)
            else:
                struct.pack_into("<q", fixed, slot, (offset << 32) | len(data))
            continue
        if value is None or kind == "null":
            _set_null(fixed, i)
            continue
        if kind == "fixed":
            struct.pack_into(extra, fixed, slot, value)
        elif kind == "decimal":
            struct.pack_into("<q", fixed, slot, _unscaled(value, extra[1]))
        else:
            data = encode_row(_fields(value, extra), extra) if kind == "struct" else (
                value.encode("utf-8") if isinstance(value, str) else bytes(value))
            offset = len(fixed) + len(var)
            var += data + bytes(-len(data) % 8)
            struct.pack_into("<q", fixed, slot, (offset << 32) | len(data))
    return bytes(fixed + var)


def _unscaled(value: decimal.Decimal, scale: int) -> int:
    return int(value.scaleb(scale, context=_EXACT))


def _fields(value, plan) -> list:
    if isinstance(value, dict):
        return list(value.values())
    return list(value)


def _set_null(buf: bytearray, i: int) -> None:
    buf[(i // 64) * 8 + (i % 64) // 8] |= 1 << (i % 8)


def arrow_encoder(key_type, value_type, keep: tuple[str, ...] = ()):
    """A ``mapInArrow`` function: batches of (``key``, ``value``, then the ``keep`` columns) in,
    batches of their bytes (``key_bytes``, ``value_bytes``) and the ``keep`` columns as they
    were out."""
    import sys

    from pyspark import cloudpickle
    # By value: a cluster's Python workers need not have this package installed.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    key_plan, value_plan = _plan(key_type), _plan(value_type)

    def encode(batches):
        import pyarrow as pa
        for batch in batches:
            keys = _py_rows(batch.column(0))
            values = _py_rows(batch.column(1))
            yield pa.RecordBatch.from_arrays(
                [pa.array([encode_row(k, key_plan) for k in keys], pa.binary()),
                 pa.array([None if v is None else encode_row(v, value_plan) for v in values],
                          pa.binary()),
                 *[batch.column(2 + i) for i in range(len(keep))]],
                names=["key_bytes", "value_bytes", *keep])
    return encode


def _py_rows(column) -> list:
    """A struct column as Python lists of field values, timestamps as microseconds and dates as
    days (their exact stored numbers, no time zone involved)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def plain(arr):
        t = arr.type
        if pa.types.is_struct(t):
            fields = [plain(arr.field(j)) for j in range(t.num_fields)]
            valid = arr.is_valid().to_pylist()
            return [tuple(f[r] for f in fields) if valid[r] else None for r in range(len(arr))]
        if pa.types.is_timestamp(t):
            return pc.cast(arr, pa.int64()).to_pylist()
        if pa.types.is_date32(t):
            return pc.cast(arr, pa.int32()).to_pylist()
        return arr.to_pylist()

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return plain(column)


def positional(dtype):
    """``dtype`` with every struct field renamed ``f0, f1, ...`` at every depth (no metadata)."""
    from pyspark.sql import types as T
    if isinstance(dtype, T.StructType):
        return T.StructType([T.StructField(f"f{i}", positional(f.dataType), f.nullable)
                             for i, f in enumerate(dtype.fields)])
    return dtype


def encode_state_rows(rows, keep: tuple[str, ...] = ()):
    """``rows`` (columns ``key`` and ``value``, structs; a null value stays null) as their
    UnsafeRow bytes, columns ``key_bytes`` and ``value_bytes``, and the ``keep`` columns as
    they are, in the same partitions.

    Arrow refuses a struct whose fields share a name (grouping expressions all become
    ``_groupingexpression``): the encoding is positional, so the fields are renamed first."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    key_type = positional(rows.schema["key"].dataType)
    value_type = positional(rows.schema["value"].dataType)
    kept = [T.StructField(name, positional(rows.schema[name].dataType)) for name in keep]
    out = T.StructType([T.StructField("key_bytes", T.BinaryType()),
                        T.StructField("value_bytes", T.BinaryType()), *kept])
    return rows.select(F.col("key").cast(key_type).alias("key"),
                       F.col("value").cast(value_type).alias("value"),
                       *[F.col(f.name).cast(f.dataType).alias(f.name) for f in kept]).mapInArrow(
        arrow_encoder(key_type, value_type, keep), out)
