"""The napkin estimate, before a job exists: from the input rate, the watermark and the row sizes,
the rows the state holds, their bytes as stored, the heap on the HDFS-backed provider and the
figure Spark's ``memoryUsedBytes`` will read, explained step by step next to the widely quoted
rule of thumb.
"""
from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass

from state_runbooks.common.errors import require
from state_runbooks.common.formatting import format_bytes
from state_runbooks.common.spark_settings import (
    MAX_VERSIONS_IN_MEMORY_CONF,
    SHUFFLE_PARTITIONS_CONF,
)
from state_runbooks.core.state_limits import (
    ROCKSDB_BLOCK_CACHE_MB,
    ROCKSDB_MAX_WRITE_BUFFERS,
    ROCKSDB_WRITE_BUFFER_MB,
)
from state_runbooks.core.state_reader import UNSAFE_ROW_RULE

from .jvm_objects import (
    COMPRESSED_OOPS,
    PLAIN_OOPS,
    JvmLayout,
    aligned,
    copied_capacity,
    filled_capacity,
)
from .memory_model import (
    DEFAULT_VERSIONS_IN_MEMORY,
    MemoryEstimate,
    PartitionVersions,
    estimate_partition,
)
from .recommendation import (
    PROVIDER_NAMES,
    Recommendation,
    recommend,
    rocksdb_configured_memory,
)

NAPKIN_PROVIDERS = ("hdfs", "rocksdb")
# A widely quoted rule of thumb: rows x (key + value) x a "versioning factor" of 1.0 to 1.5. Shown
# next to the estimate to explain how far it undercounts.
RULE_OF_THUMB_FACTORS = (1.0, 1.5)


@dataclass(frozen=True)
class NapkinInputs:
    """What is known before a job exists. Validated on construction (one-line RunbookError)."""
    input_rows_per_second: float
    watermark_seconds: float
    trigger_seconds: float = 1.0
    key_cardinality: int = 0
    key_bytes: int = 32
    value_bytes: int = 16
    num_partitions: int = 200
    provider: str = "hdfs"

    def __post_init__(self):
        for name in ("input_rows_per_second", "watermark_seconds", "trigger_seconds",
                     "key_cardinality", "key_bytes", "value_bytes", "num_partitions"):
            value = getattr(self, name)
            require(isinstance(value, (int, float)) and not isinstance(value, bool)
                   and math.isfinite(value),
                   f"{name}={value!r} is not a number: pass a finite number")
        require(self.input_rows_per_second >= 0,
               f"input_rows_per_second={self.input_rows_per_second} is negative: pass the rows per "
               "second entering the stateful operator (0 or more)")
        require(self.watermark_seconds >= 0,
               f"watermark_seconds={self.watermark_seconds} is negative: pass the watermark delay "
               "in seconds (0 or more)")
        require(self.trigger_seconds > 0,
               f"trigger_seconds={self.trigger_seconds} is not positive: pass the event time one "
               "micro-batch covers, in seconds (e.g. the trigger interval)")
        require(self.key_cardinality >= 0 and float(self.key_cardinality).is_integer(),
               f"key_cardinality={self.key_cardinality} is not valid: pass the distinct keys held "
               "at once (a whole number), or 0 when every event has its own key")
        require(self.key_bytes >= 8,
               f"key_bytes={self.key_bytes} is too small: a state key in Spark's row format takes "
               "at least 8 bytes (null bits) plus 8 per field, e.g. 32 for a short string and a "
               "timestamp")
        require(self.value_bytes >= 0,
               f"value_bytes={self.value_bytes} is negative: pass the value row's bytes "
               "(0 or more)")
        require(self.num_partitions >= 1 and float(self.num_partitions).is_integer(),
               f"num_partitions={self.num_partitions} is not valid: pass the state partitions "
               f"({SHUFFLE_PARTITIONS_CONF} when the query first starts), 1 or more")
        require(self.provider in NAPKIN_PROVIDERS,
               f"provider={self.provider!r} is not known: use one of {', '.join(NAPKIN_PROVIDERS)}")

    @property
    def row_key_bytes(self) -> int:
        """Key bytes as stored: UnsafeRow sizes are multiples of 8."""
        return aligned(self.key_bytes)

    @property
    def row_value_bytes(self) -> int:
        return aligned(self.value_bytes)


# The napkin inputs that describe the runbook's own demo: a deduplication of 2,000 new ids per 1 s
# batch with a 5 s watermark, in 4 partitions (rows of ``event_id`` and ``event_time``).
DEMO_NAPKIN = {"input_rows_per_second": 2000.0, "watermark_seconds": 5.0, "trigger_seconds": 1.0,
               "key_cardinality": 0, "key_bytes": 32, "value_bytes": 16, "num_partitions": 4,
               "provider": "hdfs"}


def napkin_inputs(is_demo: bool, input_rows_per_second: float, watermark_seconds: float,
                  trigger_seconds: float, key_cardinality: int, key_bytes: int, value_bytes: int,
                  num_partitions: int, provider: str) -> NapkinInputs | None:
    """What the napkin estimates: the job the parameters describe when a rate is given; the demo's
    own job when the runbook builds its demo without one, with the watermark delay given, if one
    is (the exercise's change: ``-p watermark_seconds 2``); None otherwise, since nothing then
    describes the job behind a real checkpoint (it is measured instead)."""
    if input_rows_per_second:
        return NapkinInputs(input_rows_per_second, watermark_seconds, trigger_seconds,
                            key_cardinality, key_bytes, value_bytes, num_partitions, provider)
    if not is_demo:
        return None
    delay = {"watermark_seconds": watermark_seconds} if watermark_seconds > 0 else {}
    return NapkinInputs(**{**DEMO_NAPKIN, **delay})


def napkin_heading(is_demo: bool, inputs: NapkinInputs, input_rows_per_second: float) -> str:
    """What the napkin below estimates: the demo's job (with the watermark delay given, if it
    differs from the demo's), or the job the parameters describe."""
    if not (is_demo and not input_rows_per_second):
        return "Napkin for the job the parameters describe."
    delay = inputs.watermark_seconds
    changed = (f" with watermark_seconds={delay:g} instead of its "
               f"{DEMO_NAPKIN['watermark_seconds']:g}"
               if delay != DEMO_NAPKIN["watermark_seconds"] else "")
    return f"Napkin for the demo's job{changed} (no input_rows_per_second given)."


NO_NAPKIN = ("No napkin estimate: no input_rows_per_second was given, and this checkpoint's job is "
             "measured below instead. To plan a job, pass its rate, watermark, key and value bytes "
             "and partitions (input_rows_per_second, watermark_seconds, key_bytes, value_bytes, "
             "num_partitions).")


@dataclass
class Napkin:
    """The napkin estimate: rows, bytes as stored, heap on the HDFS-backed provider, and what
    Spark's ``memoryUsedBytes`` will read, for a query running continuously or one restarted for
    every batch (``availableNow`` / ``Trigger.Once`` jobs)."""
    inputs: NapkinInputs
    rows: int
    arrivals_per_batch: int
    payload_bytes: float
    memory: MemoryEstimate  # continuous
    memory_restarted: MemoryEstimate  # one batch per start
    partition: PartitionVersions
    layout: JvmLayout
    recommendation: Recommendation

    @property
    def memory_bytes(self) -> float:
        """In-memory bytes for the chosen provider: the JVM heap of the HDFS-backed provider, or
        RocksDB's native memory as configured (block cache and full write buffers per store
        instance; not a cap unless bounded memory is on)."""
        if self.inputs.provider == "rocksdb":
            return rocksdb_configured_memory(self.inputs.num_partitions)
        return self.memory.heap_bytes

    @property
    def bytes_per_partition(self) -> float:
        return self.memory_bytes / self.inputs.num_partitions

    def rule_of_thumb_bytes(self) -> tuple[float, float]:
        """The widely quoted rule of thumb: keys x (key + value) x a versioning factor, 1.0-1.5."""
        return tuple(self.rows * (self.inputs.key_bytes + self.inputs.value_bytes) * f
                     for f in RULE_OF_THUMB_FACTORS)

    def summary(self) -> dict:
        return {"rows": self.rows, "payload_bytes": round(self.payload_bytes),
                "memory_bytes": round(self.memory_bytes),
                "bytes_per_partition": round(self.bytes_per_partition),
                "recommended_provider": self.recommendation.provider,
                "recommended_partitions": self.recommendation.partitions,
                "recommendation_reason": self.recommendation.reason,
                "hdfs_heap_bytes": round(self.memory.heap_bytes),
                "reported_memory_bytes": {"continuous": round(self.memory.reported_bytes),
                                          "restarted_each_batch":
                                              round(self.memory_restarted.reported_bytes)},
                "rule_of_thumb_bytes": [round(b) for b in self.rule_of_thumb_bytes()]}


def napkin(inputs: NapkinInputs, layout: JvmLayout = COMPRESSED_OOPS,
           versions_in_memory: int = DEFAULT_VERSIONS_IN_MEMORY) -> Napkin:
    """The napkin estimate at steady state: every partition holds ``rows / partitions`` rows; each
    batch brings ``rate x trigger`` rows, which are new keys that push as many old ones out past
    the watermark (``key_cardinality=0``), or update existing keys (``key_cardinality>0``)."""
    i = inputs
    held = i.input_rows_per_second * (i.watermark_seconds + i.trigger_seconds)
    rows = math.ceil(held if i.key_cardinality == 0 else min(i.key_cardinality, held))
    arrivals = math.ceil(i.input_rows_per_second * i.trigger_seconds)
    parts = int(i.num_partitions)
    n = math.ceil(rows / parts)
    per_part_arrivals = math.ceil(arrivals / parts)
    if i.key_cardinality == 0:
        inserted = removed = min(per_part_arrivals, n)
        replaced = 0
    else:
        inserted = removed = 0
        replaced = min(per_part_arrivals, n)
    new_capacity = copied_capacity(n - inserted + removed, n + inserted)
    continuous = PartitionVersions(n, inserted, removed, replaced, new_capacity, new_capacity)
    restarted = PartitionVersions(n, inserted, removed, replaced, new_capacity,
                                  filled_capacity(n + inserted))
    one = estimate_partition(continuous, i.row_key_bytes, i.row_value_bytes, layout,
                             versions_in_memory=versions_in_memory)
    one_restarted = estimate_partition(restarted, i.row_key_bytes, i.row_value_bytes, layout,
                                       versions_in_memory=versions_in_memory)
    memory, memory_restarted = MemoryEstimate(), MemoryEstimate()
    for _ in range(parts):
        memory, memory_restarted = memory + one, memory_restarted + one_restarted
    payload = rows * (i.row_key_bytes + i.row_value_bytes)
    rec = recommend(rows, memory.heap_bytes, payload, parts)
    return Napkin(i, rows, arrivals, payload, memory, memory_restarted, continuous, layout, rec)


def _n(x: float) -> str:
    return f"{round(x):,}"


def napkin_lines(est: Napkin, width: int = 100) -> list[str]:
    """The napkin estimate step by step, in prose with the numbers filled in."""
    i, lay, part = est.inputs, est.layout, est.partition
    k, v = i.row_key_bytes, i.row_value_bytes
    key_obj, value_obj = lay.key_overhead + k, lay.value_overhead() + v
    per_version = lay.map_node + key_obj + value_obj
    mem, mem_r = est.memory, est.memory_restarted
    rule_lo, rule_hi = est.rule_of_thumb_bytes()
    plain = napkin(i, PLAIN_OOPS)
    per_part = est.rows / i.num_partitions
    steps = []
    window = (f"{i.input_rows_per_second:,g} rows/s x ({i.watermark_seconds:g} s + "
              f"{i.trigger_seconds:g} s)")
    if i.key_cardinality == 0:
        steps.append(
            f"1. Rows held. Every event has its own key (key_cardinality = 0), so the state holds "
            f"every row still inside the watermark delay plus the batch being processed: {window} "
            f"= {est.rows:,} rows, {per_part:,.0f} per partition over {i.num_partitions:,} "
            f"partitions. Each {i.trigger_seconds:g} s batch adds {est.arrivals_per_batch:,} keys "
            "and the watermark evicts as many.")
    else:
        steps.append(
            f"1. Rows held. One row per key: {i.key_cardinality:,} keys, and never more than the "
            f"rows arriving within the watermark delay plus one batch ({window}): {est.rows:,} "
            f"rows, {per_part:,.0f} per partition over {i.num_partitions:,} partitions. Each "
            f"batch replaces the value of up to {est.arrivals_per_batch:,} of them.")
    steps.append(
        f"2. Row bytes as stored. Spark keeps keys and values in its UnsafeRow format "
        f"({UNSAFE_ROW_RULE}): "
        f"{k} + {v} = {k + v} bytes per row, {_n(est.payload_bytes)} B "
        f"({format_bytes(est.payload_bytes)}) for {est.rows:,} rows.")
    steps.append(
        f"3. The widely quoted rule of thumb, rows x (key + value) x 1.0 to 1.5, stops there: "
        f"{format_bytes(rule_lo)} to {format_bytes(rule_hi)}. It leaves out the objects every row "
        "needs in the JVM, the second version kept in memory, and the hash tables.")
    steps.append(
        f"4. Objects per row on the HDFS-backed provider. A key is an UnsafeRow object "
        f"({lay.unsafe_row} B) pointing at its own byte[] ({lay.array_header} B header + {k} B); "
        f"a value is a StateStoreRow wrapper ({lay.value_wrapper()} B), an UnsafeRow "
        f"({lay.unsafe_row} B) and a byte[] ({lay.array_header} B + {v} B); the version's hash "
        f"map adds a node ({lay.map_node} B). One version: {lay.map_node} + {key_obj} + "
        f"{value_obj} = {per_version} B per row, {per_version / (k + v):.1f}x the row bytes.")
    if part.old_capacity:
        steps.append(
            f"5. Versions in memory. The provider keeps the last {DEFAULT_VERSIONS_IN_MEMORY} "
            f"versions of every partition ({MAX_VERSIONS_IN_MEMORY_CONF}). The "
            "older one shares the unchanged rows with the newest, but has its own nodes "
            f"({part.old_rows:,} x {lay.map_node} B per partition) and hash table, and still "
            f"holds the {part.removed + part.replaced:,} rows per partition that the newest batch "
            "evicted or replaced.")
    steps.append(
        f"6. Hash tables. Each batch starts its version as a copy (ConcurrentHashMap.putAll) of "
        f"the previous one, and JDK 17 sizes that table at twice the power of two >= 1.5 x rows "
        f"+ 1: {part.new_capacity:,} slots of {lay.reference} B = "
        f"{format_bytes(lay.reference_array(part.new_capacity))} per version and partition.")
    steps.append(
        f"7. Heap. {i.num_partitions:,} partitions x (row objects, map nodes, tables, fixed parts) "
        f"= {format_bytes(mem.row_object_bytes)} + {format_bytes(mem.entry_bytes)} + "
        f"{format_bytes(mem.table_bytes)} + {format_bytes(mem.fixed_bytes)} = "
        f"{format_bytes(mem.heap_bytes)}" + (
            f": {mem.heap_bytes / est.rows:,.0f} B per row, "
            f"{mem.heap_bytes / est.payload_bytes:.1f}x the row bytes and "
            f"{mem.heap_bytes / rule_hi:.1f}x the rule of thumb's upper figure" if est.rows else
            " (no rows: the fixed parts only)") + "; "
        f"{format_bytes(mem.heap_bytes / i.num_partitions)} per partition. (With executor heaps "
        f"of 32 GB or more, without compressed oops: {format_bytes(plain.memory.heap_bytes)}.)")
    steps.append(
        f"8. What Spark's memoryUsedBytes will read. Its SizeEstimator counts a row shared by "
        f"both versions once when their tables have the same length, as in a query running "
        f"continuously at steady state: about {format_bytes(mem.reported_bytes)}. After a "
        f"restart the older version is read back from the state files into a table of "
        f"{restarted_table(est):,} slots, so the sampled rows count twice: about "
        f"{format_bytes(mem_r.reported_bytes)} for jobs that start once per batch "
        "(availableNow, Trigger.Once, and this runbook's demo).")
    steps.append(
        f"9. RocksDB instead. The rows live in RocksDB's files ({format_bytes(est.payload_bytes)} "
        f"before compression), not in the JVM heap. Its native memory per store instance is sized, "
        f"not capped, by configuration: {i.num_partitions:,} x ({ROCKSDB_BLOCK_CACHE_MB} MiB "
        f"block cache + {ROCKSDB_MAX_WRITE_BUFFERS} x {ROCKSDB_WRITE_BUFFER_MB} MiB write "
        f"buffers) = {format_bytes(rocksdb_configured_memory(i.num_partitions))} when every "
        "buffer is full (a stream-stream join has 4 stores per partition); index and filter "
        "blocks come on top. Only boundedMemoryUsage=true caps it, per executor.")
    rec = est.recommendation
    steps.append(
        f"10. Recommendation: {PROVIDER_NAMES[rec.provider]}, {rec.partitions:,} partitions "
        f"for {est.rows:,} rows (the thresholds are listed with the recommendation, section 6)."
        + (
            f" You planned {PROVIDER_NAMES[i.provider]}." if i.provider != rec.provider else ""))
    return [textwrap.fill(s, width, subsequent_indent="   ") for s in steps]


def restarted_table(est: Napkin) -> int:
    """The older version's table length after a restart: filled by put from the state files."""
    return filled_capacity(est.partition.rows + est.partition.inserted)
