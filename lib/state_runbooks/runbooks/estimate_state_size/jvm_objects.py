"""The JVM side of the HDFS-backed provider's memory: the sizes of the objects that hold state rows,
the lengths of JDK 17's ``ConcurrentHashMap`` tables, and how Spark's ``SizeEstimator`` samples
large tables.

Object sizes are SizeEstimator's (checked against it on the running JVM by the tests): 8-byte
alignment, 12-byte headers and 4-byte references with compressed oops (heaps below 32 GB).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

# -- JVM object layout ----------------------------------------------------------------------------
ALIGN = 8


def aligned(n: float) -> int:
    """``n`` bytes rounded up to the JVM's 8-byte object alignment."""
    return int(-(-int(math.ceil(n)) // ALIGN) * ALIGN)


@dataclass(frozen=True)
class JvmLayout:
    """Sizes of the objects that hold state rows, as Spark's SizeEstimator computes them."""
    name: str
    object_header: int
    reference: int
    # Per store partition: the TreeMap of versions, its comparator, the shared Option None.
    fixed_per_store: int
    # Per version: its TreeMap entry, the boxed version number, the map and its ConcurrentHashMap.
    fixed_per_version: int

    @property
    def array_header(self) -> int:
        return aligned(self.object_header + 4)

    def reference_array(self, length: int) -> int:
        return self.array_header + aligned(length * self.reference)

    @property
    def unsafe_row(self) -> int:
        """``UnsafeRow``: baseObject, baseOffset, numFields, sizeInBytes, bitSetWidthInBytes."""
        return aligned(aligned(self.object_header) + self.reference + 8 + 3 * 4)

    def value_wrapper(self, checksum: bool = False) -> int:
        """``StateStoreRow`` (one reference), or ``StateStoreRowWithChecksum`` (plus an int)."""
        plain = aligned(self.object_header + self.reference)
        return aligned(plain + 4) if checksum else plain

    @property
    def map_node(self) -> int:
        """``ConcurrentHashMap.Node``: hash, key, value, next."""
        return aligned(self.object_header + 4 + 3 * self.reference)

    @property
    def key_overhead(self) -> int:
        """Bytes a key takes beyond its row bytes: the UnsafeRow and the byte[] header."""
        return self.unsafe_row + self.array_header

    def value_overhead(self, checksum: bool = False) -> int:
        """Bytes a value takes beyond its row bytes: wrapper, UnsafeRow and byte[] header."""
        return self.value_wrapper(checksum) + self.unsafe_row + self.array_header


    # Session windows' second map per version (each session key -> the set of its full keys):
    @property
    def hash_set(self) -> int:
        """Scala 2.13 ``mutable.HashSet``: loadFactor, table, threshold, contentSize."""
        return aligned(self.object_header + 8 + self.reference + 2 * 4)

    @property
    def hash_set_node(self) -> int:
        """Its ``Node``: the element, its hash, the next node."""
        return aligned(self.object_header + 2 * self.reference + 4)


COMPRESSED_OOPS = JvmLayout("compressed oops (executor heap below 32 GB)", 12, 4, 96, 152)
# Without compressed oops, headers are 16 bytes and references 8; the fixed parts are scaled.
PLAIN_OOPS = JvmLayout("64-bit references (executor heap of 32 GB or more)", 16, 8, 144, 232)


# -- ConcurrentHashMap table lengths (JDK 17) ------------------------------------------------------
MIN_TABLE = 16


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def grown_capacity(capacity: int, peak_rows: int) -> int:
    """A table doubles when its entries reach 3/4 of its length, and never shrinks."""
    capacity = max(int(capacity), 1)
    while peak_rows >= capacity - (capacity >> 2):
        capacity <<= 1
    return capacity


def filled_capacity(peak_rows: int) -> int:
    """Length of a map filled by ``put`` from empty (a first batch, a version read from files)."""
    return grown_capacity(MIN_TABLE, peak_rows)


def copied_capacity(rows: int, peak_rows: int) -> int:
    """Length of a map started with ``putAll`` of ``rows`` rows, then grown to ``peak_rows``.

    JDK 17's ``ConcurrentHashMap.putAll`` into an empty map presizes the table to the power of two
    at least ``1.5 x rows + 1``, then doubles it once more (the loop in ``tryPresize``).
    """
    base = 2 * _power_of_two_at_least(rows + rows // 2 + 1) if rows > 0 else MIN_TABLE
    return grown_capacity(base, max(peak_rows, rows))


# -- SizeEstimator's sampling ----------------------------------------------------------------------
SAMPLING_ABOVE = 400  # SizeEstimator samples arrays longer than this
SAMPLE_SLOTS = 100  # ... twice, this many slots each time


def estimated_slots_bytes(length: int, entries: float, bytes_per_entry: float) -> float:
    """SizeEstimator's expected figure for what a hash table's slots reach (not the table itself).

    Up to 400 slots it visits everything. Above, it draws two samples of 100 slots and reports the
    larger plus the smaller times ``(length - 100) // 100``. The entries falling in 100 slots are
    binomial; the expected smaller and larger of two samples are the mean -/+ sd / sqrt(pi).
    """
    if entries <= 0:
        return 0.0
    if length <= SAMPLING_ABOVE:
        return entries * bytes_per_entry
    p = SAMPLE_SLOTS / length
    mean = entries * p * bytes_per_entry
    spread = bytes_per_entry * math.sqrt(entries * p * (1 - p) / math.pi)
    return mean + spread + max(0.0, mean - spread) * ((length - SAMPLE_SLOTS) // SAMPLE_SLOTS)


def estimated_slots_variance(length: int, entries: float, bytes_per_entry: float) -> float:
    """Variance of that figure: with samples s1, s2 ~ N(mu, sigma), the figure is
    ``mu (1 + k) + sigma (M + k m)`` (M, m the larger and smaller of two standard normals), and
    ``Var(M) = Var(m) = 1 - 1/pi``, ``Cov(M, m) = 1/pi``."""
    if entries <= 0 or length <= SAMPLING_ABOVE:
        return 0.0
    p = SAMPLE_SLOTS / length
    sigma2 = bytes_per_entry ** 2 * entries * p * (1 - p)
    k = (length - SAMPLE_SLOTS) // SAMPLE_SLOTS
    return sigma2 * ((1 - 1 / math.pi) * (1 + k * k) + 2 * k / math.pi)


# -- measured on the running JVM -------------------------------------------------------------------
def prefix_map_fixed_bytes(spark, key_schema_json: str, prefix_columns: int) -> tuple[int, int] | None:
    """What a prefix-scan version map (``PrefixScannableHDFSBackedStateStoreMap``) holds beyond a
    plain one before any row: its projection of the session key, the key schema it keeps (shared
    by the versions of a partition) and its second map. SizeEstimator's figures on this JVM for
    the store's key schema: ``(first version, each further version)``; None without a JVM here
    (Spark Connect) or when the class is not the one this is verified on."""
    from state_runbooks.core.spark_internals import version_map_sizes
    from state_runbooks.session.spark_session import is_connect

    if is_connect(spark):
        return None
    try:
        one, two, plain_one, plain_two = version_map_sizes(spark, key_schema_json, prefix_columns)
    except Exception:  # a Spark whose maps differ: the caller says the estimate is a lower bound
        return None
    first = one - plain_one
    return first, two - plain_two - first
