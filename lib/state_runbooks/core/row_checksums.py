"""State rows as a count and two checksums: equal when two reads hold the same rows.

Every row's columns are hashed twice, with Spark's ``xxhash64`` (64 bits) and ``hash`` (murmur3,
32 bits), and each hash is summed as a decimal (no overflow): a fingerprint of the rows as a
multiset, computed by the executors and sent to the driver as three numbers. Two reads holding the
same rows, in any order and on any partitions, get equal figures; a row that differs in any
hashed column changes both sums. Runbooks 07 (a repartition keeps every key and value) and 09 (a
rewrite keeps every row it does not drop, by key, value and partition) verify with it.
"""
from __future__ import annotations

from dataclasses import dataclass

H1, H2 = "_h1", "_h2"  # the two columns :func:`hash_columns` adds


@dataclass(frozen=True)
class RowsChecksum:
    rows: int
    checksum: tuple[str, str]  # the two sums, as decimal strings (JSON keeps them exact)


def hash_columns(columns: list[str]) -> list:
    """The two hash columns of a row over ``columns`` (named ``_h1`` and ``_h2``)."""
    from pyspark.sql import functions as F
    return [F.xxhash64(*columns).cast("decimal(20,0)").alias(H1),
            F.hash(*columns).cast("decimal(20,0)").alias(H2)]


def sums(where=None, prefix: str = "") -> list:
    """Aggregates of rows carrying :func:`hash_columns`: the count and the two sums (named
    ``rows``, ``_h1``, ``_h2`` after ``prefix``), over the rows where ``where`` holds (None:
    every row)."""
    from pyspark.sql import functions as F
    if where is None:
        return [F.count(F.lit(1)).alias(f"{prefix}rows"), F.sum(H1).alias(f"{prefix}{H1}"),
                F.sum(H2).alias(f"{prefix}{H2}")]
    return [F.count(F.when(where, 1)).alias(f"{prefix}rows"),
            F.sum(F.when(where, F.col(H1))).alias(f"{prefix}{H1}"),
            F.sum(F.when(where, F.col(H2))).alias(f"{prefix}{H2}")]


def of_row(row, prefix: str = "") -> RowsChecksum:
    """The figures of an aggregated row holding :func:`sums` made with ``prefix``."""
    return RowsChecksum(int(row[f"{prefix}rows"] or 0),
                        (str(int(row[f"{prefix}{H1}"] or 0)), str(int(row[f"{prefix}{H2}"] or 0))))


def add(a: RowsChecksum, b: RowsChecksum) -> RowsChecksum:
    """The figures of both sets of rows together."""
    return RowsChecksum(a.rows + b.rows, tuple(str(int(x) + int(y))
                                               for x, y in zip(a.checksum, b.checksum)))


def rows_checksum(df, columns: list[str]) -> RowsChecksum:
    """``df``'s rows over ``columns``, counted and checksummed in one Spark job."""
    return of_row(df.select(*hash_columns(columns)).agg(*sums()).first())
