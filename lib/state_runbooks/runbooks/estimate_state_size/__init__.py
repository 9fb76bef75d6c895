"""The estimate-state-size runbook (02): a napkin estimate before a job exists, a measurement of
its checkpoint after, and how far both are from what Spark itself reports.

One module per concern:

- :mod:`.jvm_objects`: object sizes, hash table lengths and ``SizeEstimator``'s sampling on the JVM;
- :mod:`.memory_model`: one store partition's kept versions -> heap and ``memoryUsedBytes``;
- :mod:`.measurement`: a checkpoint's units measured (the core's store reports, the change feed);
- :mod:`.recommendation`: provider and partitions for a state of a given size;
- :mod:`.napkin_estimate`: the estimate from rate, watermark and row sizes, step by step;
- :mod:`.projection`: growth over the retained batches, projected ahead;
- :mod:`.demo`: the demo, and its queries' estimate against ``memoryUsedBytes`` (``run_demo``);
- :mod:`.report`: the run's one result, tables, lines, recommendation, the run summary and what
  the demo showed.

The names the notebook and its callers use are importable from here.
"""
from state_runbooks.common.formatting import format_bytes
from state_runbooks.core.state_limits import (
    HDFS_HEAP_PER_PARTITION,
    ROCKSDB_PAYLOAD_PER_PARTITION,
)

from .demo import (
    ACCURACY_TARGET,
    COMPARED_WORKLOADS,
    DEMO,
    DEMO_RUNS,
    WORKLOAD_LABELS,
    Comparison,
    DemoResult,
    accuracy_lines,
    accuracy_verdict,
    compare,
    compare_demo_workloads,
    comparison_table,
    demo_run_for_rows,
    plot_table,
    reported,
    run_demo,
    three_way_lines,
)
from .exercise import try_it
from .jvm_objects import (
    COMPRESSED_OOPS,
    PLAIN_OOPS,
    JvmLayout,
    copied_capacity,
    estimated_slots_bytes,
    estimated_slots_variance,
    filled_capacity,
    grown_capacity,
)
from .measurement import (
    CheckpointMeasurement,
    StoreMeasurement,
    disk_totals,
    measure_checkpoint,
    measure_stores,
    measured_totals,
)
from .memory_model import (
    DEFAULT_VERSIONS_IN_MEMORY,
    MemoryEstimate,
    PartitionVersions,
    estimate_partition,
    partition_versions,
)
from .napkin_estimate import (
    DEMO_NAPKIN,
    NAPKIN_PROVIDERS,
    NO_NAPKIN,
    RULE_OF_THUMB_FACTORS,
    Napkin,
    NapkinInputs,
    napkin,
    napkin_heading,
    napkin_inputs,
    napkin_lines,
    restarted_table,
)
from .projection import Projection, growth, growth_rate, project
from .recommendation import (
    PROVIDER_NAMES,
    Recommendation,
    recommend,
    rocksdb_configured_memory,
)
from .report import (
    Sizing,
    estimate_lines,
    measured_summary,
    partitions_table,
    recommendation_lines,
    stores_table,
    summarize,
    what_this_showed,
)

__all__ = [
    "try_it",
    "format_bytes",
    "ACCURACY_TARGET", "COMPARED_WORKLOADS", "DEMO", "DEMO_RUNS", "WORKLOAD_LABELS", "Comparison",
    "DemoResult", "accuracy_lines", "accuracy_verdict", "compare", "compare_demo_workloads",
    "comparison_table", "demo_run_for_rows", "plot_table", "reported", "run_demo",
    "three_way_lines",
    "COMPRESSED_OOPS", "PLAIN_OOPS", "JvmLayout", "copied_capacity", "estimated_slots_bytes",
    "estimated_slots_variance", "filled_capacity", "grown_capacity",
    "CheckpointMeasurement", "StoreMeasurement", "disk_totals", "measure_checkpoint",
    "measure_stores", "measured_totals",
    "DEFAULT_VERSIONS_IN_MEMORY", "MemoryEstimate", "PartitionVersions", "estimate_partition",
    "partition_versions",
    "DEMO_NAPKIN", "NAPKIN_PROVIDERS", "NO_NAPKIN", "RULE_OF_THUMB_FACTORS", "Napkin",
    "NapkinInputs", "napkin", "napkin_heading", "napkin_inputs", "napkin_lines", "restarted_table",
    "Projection", "growth", "growth_rate", "project",
    "HDFS_HEAP_PER_PARTITION", "PROVIDER_NAMES", "ROCKSDB_PAYLOAD_PER_PARTITION",
    "Recommendation", "recommend", "rocksdb_configured_memory",
    "Sizing", "estimate_lines", "measured_summary", "partitions_table", "recommendation_lines",
    "stores_table", "summarize", "what_this_showed",
]
