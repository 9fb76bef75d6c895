"""The enable-RocksDB runbook (01): pick the provider class, prove it is in effect, measure it.

Facts this package is built on, each demonstrated by a function here (and by the runbook's cells):

- ``spark.conf.set`` accepts any class name. A class that does not exist fails only when a stateful
  query starts (``STREAM_FAILED``, caused by ``ClassNotFoundException``), and that failed start has
  already written ``offsets/0`` with the bad class pinned, so the checkpoint stays broken after the
  conf is fixed (:func:`demonstrate_wrong_class`). Hence :func:`check_provider_class` first.
- The provider is pinned in the checkpoint's offsets log; a restart keeps it whatever the session
  says (:func:`demonstrate_pinned_provider`).
- The changelog-checkpointing flag is not pinned: on restart the session's value decides what the
  next batch writes (:func:`demonstrate_changelog_flip`).

On Spark Connect there is no JVM on this side: the class is checked by Spark itself, through a
one-row stateful query on a scratch checkpoint, and the figures only a JVM can give (heap after
GC, RocksDB memory manager instances) are reported as not observable (:func:`jvm_unavailable`).

One module per concern:

- :mod:`.provider`: is the class a usable provider here; the plan: its confs, applied, as snippets;
- :mod:`.pinned`: what a checkpoint pins, whether the request takes effect on it, and the options;
- :mod:`.verification`: a short stream with the plan's confs, and the evidence it ran on RocksDB;
- :mod:`.demonstrations`: the wrong class, the pinned provider, the changelog flip, on this Spark;
- :mod:`.benchmark`: the same workload on each provider setup, its table and its verdict;
- :mod:`.demo`: the demo checkpoint, and every demonstration in one call (``run_demo``);
- :mod:`.report`: the run's one result, the summary's details and findings, what the demo showed.

The names the notebook and its callers use are importable from here.
"""
from state_runbooks.common.redaction import conf_lines
from state_runbooks.common.runtime import OSS_HDFS_PROVIDER
from state_runbooks.common.spark_settings import (
    BOUNDED_MEMORY_CONF,
    CHANGELOG_CONF,
    MAX_MEMORY_MB_CONF,
)

from .benchmark import (
    BENCH_BATCHES,
    MIN_BENCHMARK_ROWS,
    NOISE_RATIO,
    ProviderMeasurement,
    bench_rows_per_batch,
    benchmark_summary,
    benchmark_table,
    benchmark_verdict,
    check_benchmark_rows,
    heap_used_after_gc,
    measure_provider,
    measure_providers,
    unload_state_stores,
)
from .demonstrations import (
    SKIPPED,
    SKIPPED_DEMONSTRATIONS,
    RestartDemo,
    WrongClassDemo,
    demonstrate_changelog_flip,
    demonstrate_pinned_provider,
    demonstrate_wrong_class,
    restart_lines,
    work_folder,
    wrong_class_lines,
)
from .demo import DEMO, DemoResult, run_demo
from .exercise import try_it
from .pinned import (
    STATE_CONF_MARKERS,
    PinnedReport,
    check_checkpoint,
    checkpoint_lines,
    options_lines,
)
from .provider import (
    INVALID_PROVIDER_ERROR,
    KNOWN_ROCKSDB_CLASSES,
    STATE_STORE_PROVIDER_BASE,
    WIDELY_PUBLISHED_WRONG_CLASS,
    WORKLOAD,
    ClassCheck,
    RocksDBPlan,
    apply,
    check_provider_class,
    parse_conf_lines,
    plan,
    probe_provider_class,
    require_provider_class,
    snippets,
)
from .report import Enablement, summarize, what_this_showed
from .verification import (
    Verification,
    bounded_rocksdb_instances,
    jvm_unavailable,
    verification_lines,
    verify_rocksdb,
)

__all__ = [
    "try_it", "DEMO", "DemoResult", "run_demo",
    "CHANGELOG_CONF", "OSS_HDFS_PROVIDER", "conf_lines",
    "BENCH_BATCHES", "MIN_BENCHMARK_ROWS", "NOISE_RATIO", "ProviderMeasurement",
    "bench_rows_per_batch", "benchmark_summary", "benchmark_table", "benchmark_verdict",
    "check_benchmark_rows", "heap_used_after_gc", "measure_provider", "measure_providers",
    "unload_state_stores",
    "SKIPPED", "SKIPPED_DEMONSTRATIONS", "RestartDemo", "WrongClassDemo",
    "demonstrate_changelog_flip", "demonstrate_pinned_provider", "demonstrate_wrong_class",
    "restart_lines", "work_folder", "wrong_class_lines",
    "STATE_CONF_MARKERS", "PinnedReport", "check_checkpoint", "checkpoint_lines", "options_lines",
    "BOUNDED_MEMORY_CONF", "INVALID_PROVIDER_ERROR", "KNOWN_ROCKSDB_CLASSES", "MAX_MEMORY_MB_CONF",
    "STATE_STORE_PROVIDER_BASE", "WIDELY_PUBLISHED_WRONG_CLASS", "WORKLOAD", "ClassCheck",
    "RocksDBPlan", "apply", "check_provider_class", "parse_conf_lines", "plan",
    "probe_provider_class", "require_provider_class", "snippets",
    "Enablement", "summarize", "what_this_showed",
    "Verification", "bounded_rocksdb_instances", "jvm_unavailable", "verification_lines",
    "verify_rocksdb",
]
