"""The side-by-side measurement: the same deterministic workload on each provider setup (HDFS,
RocksDB, RocksDB with changelog checkpointing), one after the other in one run, and a verdict
built from the measured figures on what the run shows and what it cannot.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from state_runbooks.common.errors import RunbookError
from state_runbooks.common.formatting import format_bytes
from state_runbooks.common.spark_settings import CHANGELOG_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.spark_internals import heap_used_after_full_gc, stop_state_stores
from state_runbooks.demos.checkpoints import PROVIDERS, build_demo_checkpoint

from .provider import WORKLOAD, RocksDBPlan
from .verification import _rocksdb_metrics, jvm_unavailable

BENCH_BATCHES = 4
MIN_BENCHMARK_ROWS = 1_000
# Differences smaller than this (relative) are called noise in the verdict.
NOISE_RATIO = 1.25


@dataclass
class ProviderMeasurement:
    """One provider setup on the measurement workload."""
    provider: str
    state_rows: int
    batch_ms: float  # median trigger duration of the batches after the first
    commit_ms: float  # median state store commit time of those batches, summed over operators
    memory_bytes: int  # memoryUsedBytes of the last batch, summed over operators
    heap_bytes: int | None  # JVM heap retained after the run (after GC), local mode only
    disk_bytes: int  # every retained state file of every store
    rocksdb_metrics: dict = field(default_factory=dict)
    progress: list = field(default_factory=list)
    heap_note: str | None = None  # why the heap was not measured (jvm_unavailable)


def heap_used_after_gc(spark) -> int | None:
    """Heap used by this JVM after a full GC; None unless it holds the state (see
    :func:`jvm_unavailable`)."""
    if jvm_unavailable(spark):
        return None
    try:
        return heap_used_after_full_gc(spark)
    except Exception:  # noqa: BLE001 - no JVM access on some shared clusters
        return None


def unload_state_stores(spark) -> bool:
    """Close the state stores this JVM keeps loaded from earlier queries (local mode only), so that
    a heap measurement counts one run's state and not what an earlier run left or frees meanwhile.
    Spark loads them again from the checkpoint when a query needs them. Returns whether it did."""
    if jvm_unavailable(spark):
        return False
    try:
        stop_state_stores(spark)
        return True
    except Exception:  # noqa: BLE001 - internal API: absent or different elsewhere
        return False


def bench_rows_per_batch(rows: int, batches: int = BENCH_BATCHES) -> int:
    """Rows per batch so that the dedup state holds ``rows`` rows after ``batches`` batches."""
    return max(2, 2 * rows // batches)


def check_benchmark_rows(rows: int) -> int:
    if not isinstance(rows, int) or isinstance(rows, bool) or (0 < rows < MIN_BENCHMARK_ROWS) \
            or rows < 0:
        raise RunbookError(f"benchmark_rows={rows!r} is not valid: use 0 to skip the measurement, "
                           f"or at least {MIN_BENCHMARK_ROWS:,} state rows")
    return rows


def measure_provider(spark, folder: str, provider: str, rows: int, batches: int = BENCH_BATCHES,
                     partitions: int = 4, extra_conf: dict | None = None) -> ProviderMeasurement:
    path = f"{folder}/bench-{provider}"
    unload_state_stores(spark)
    heap_before = heap_used_after_gc(spark)
    run = build_demo_checkpoint(spark, WORKLOAD, path, batches=batches, provider=provider,
                                rows_per_batch=bench_rows_per_batch(rows, batches),
                                partitions=partitions, extra_conf=extra_conf)
    heap_after = heap_used_after_gc(spark)
    ckpt = Checkpoint(spark, path)
    steady = run.progress[1:] or run.progress
    ops = run.last_state_operators
    return ProviderMeasurement(
        provider=provider, state_rows=sum(op["numRowsTotal"] for op in ops),
        batch_ms=statistics.median(p["durationMs"]["triggerExecution"] for p in steady),
        commit_ms=statistics.median(sum(op["commitTimeMs"] for op in p["stateOperators"])
                                    for p in steady),
        memory_bytes=sum(op["memoryUsedBytes"] for op in ops),
        heap_bytes=None if heap_before is None or heap_after is None else heap_after - heap_before,
        disk_bytes=sum(ckpt.disk_bytes(s.operator_id, s.store_name)["retained_bytes"]
                       for s in ckpt.stores()),
        rocksdb_metrics=_rocksdb_metrics(run.progress[-1]) if run.progress else {},
        progress=run.progress, heap_note=jvm_unavailable(spark))


def measure_providers(spark, folder: str, rows: int, rocksdb_plan: RocksDBPlan | None = None,
                      providers=PROVIDERS, batches: int = BENCH_BATCHES
                      ) -> list[ProviderMeasurement]:
    """The same deterministic workload on each provider setup, one after the other, in one run.

    The RocksDB setups use the plan's class and options (bounded memory included); the changelog
    flag is each setup's own."""
    check_benchmark_rows(rows)
    extra = {}
    if rocksdb_plan is not None:
        extra = {k: v for k, v in rocksdb_plan.confs.items() if k != CHANGELOG_CONF}
    out = []
    for provider in providers:
        conf = {k: v for k, v in extra.items() if provider != "hdfs"}
        out.append(measure_provider(spark, folder, provider, rows, batches, extra_conf=conf))
    return out


def benchmark_table(measurements: list[ProviderMeasurement]):
    import pandas as pd

    return pd.DataFrame([{
        "provider": m.provider, "state_rows": m.state_rows, "batch_ms": m.batch_ms,
        "commit_ms": m.commit_ms, "memoryUsedBytes": m.memory_bytes,
        "heap_retained_bytes": m.heap_bytes, "disk_bytes": m.disk_bytes,
        "rocksdbSstFileSize": m.rocksdb_metrics.get("rocksdbSstFileSize"),
        "rocksdbTotalBytesWritten": m.rocksdb_metrics.get("rocksdbTotalBytesWritten"),
    } for m in measurements]).set_index("provider")


def benchmark_summary(measurements: list[ProviderMeasurement]) -> dict:
    """The summary's ``benchmark``: ``{provider: {batch_ms, memory_bytes, heap_bytes,
    disk_bytes, ...}}``."""
    return {m.provider: {"batch_ms": m.batch_ms, "commit_ms": m.commit_ms,
                         "memory_bytes": m.memory_bytes, "heap_bytes": m.heap_bytes,
                         "disk_bytes": m.disk_bytes, "state_rows": m.state_rows}
            for m in measurements}


def _compare(a: float | None, b: float | None) -> str:
    """'about the same', 'N.Nx more', 'N.Nx less' for a vs b."""
    if a is None or b is None or a <= 0 or b <= 0:
        return "not comparable"
    ratio = a / b
    if 1 / NOISE_RATIO < ratio < NOISE_RATIO:
        return "about the same"
    return f"{ratio:.1f}x more" if ratio > 1 else f"{1 / ratio:.1f}x less"


def benchmark_verdict(measurements: list[ProviderMeasurement]) -> list[str]:
    """What this run shows and what it cannot, in sentences built from the measured figures."""
    by = {m.provider: m for m in measurements}
    hdfs = by.get("hdfs")
    lines = []
    rows = {m.state_rows for m in measurements}
    setups = ", ".join(f"{m.provider} {m.state_rows:,} rows" for m in measurements)
    lines.append(f"Same workload on every setup: {setups}"
                 + ("" if len(rows) == 1 else " (NOT equal: the comparison is void)"))
    for name in ("rocksdb", "rocksdb_changelog"):
        m = by.get(name)
        if m is None or hdfs is None:
            continue
        heap = _compare(m.heap_bytes, hdfs.heap_bytes)
        lines.append(
            f"{name} vs hdfs: JVM heap retained {heap} "
            f"({_bytes(m.heap_bytes)} vs {_bytes(hdfs.heap_bytes)}); memoryUsedBytes "
            f"{_compare(m.memory_bytes, hdfs.memory_bytes)} ({_bytes(m.memory_bytes)} vs "
            f"{_bytes(hdfs.memory_bytes)}); bytes on disk "
            f"{_compare(m.disk_bytes, hdfs.disk_bytes)} ({_bytes(m.disk_bytes)} vs "
            f"{_bytes(hdfs.disk_bytes)}); batch time "
            f"{_compare(m.batch_ms, hdfs.batch_ms)}; commit time "
            f"{_compare(m.commit_ms, hdfs.commit_ms)}.")
    rc, r = by.get("rocksdb_changelog"), by.get("rocksdb")
    if rc is not None and r is not None:
        lines.append(f"Changelog checkpointing vs full snapshots: commit time "
                     f"{_compare(rc.commit_ms, r.commit_ms)}, bytes on disk "
                     f"{_compare(rc.disk_bytes, r.disk_bytes)}.")
    rows_n = max(rows) if rows else 0
    rocks = [m for m in measurements if m.provider != "hdfs"]
    if hdfs is None or not rocks:
        pass
    elif hdfs.heap_bytes is None or any(m.heap_bytes is None for m in rocks):
        note = next((m.heap_note for m in measurements if m.heap_note), None)
        lines.append(f"The JVM heap after GC: {note}." if note else
                     "The JVM heap was not measured: only in local mode is the driver JVM the "
                     "executor that holds the state.")
    elif all(m.heap_bytes * NOISE_RATIO < hdfs.heap_bytes for m in rocks):
        lines.append(
            f"What this run shows: where the state lives. The HDFS-backed provider's state stayed "
            f"on the JVM heap ({_bytes(hdfs.heap_bytes)} retained after GC; its memoryUsedBytes "
            f"estimates those in-heap maps), RocksDB's did not ("
            + ", ".join(f"{m.provider} {_bytes(m.heap_bytes)}" for m in rocks)
            + "): RocksDB keeps state in native memory and local files.")
    else:
        lines.append("At this size the heap retained by the providers differs by less than the "
                     "noise: the state is too small to show where it lives.")
    lines.append(
        f"What it cannot show at {rows_n:,} rows on one machine: GC pauses of a many-GB heap, "
        "executor OOMs, RocksDB's block cache and memtables under memory pressure, and upload "
        "times to cloud storage; batch times this small are dominated by fixed per-batch overhead "
        "and vary from run to run. "
        + ("Run with benchmark_rows of 1,000,000 or more, or measure the real query, before "
           "deciding on speed." if rows_n < 1_000_000 else
           "Measure the real query before deciding on speed."))
    return lines


def _bytes(value: int | None) -> str:
    return "n/a" if value is None else format_bytes(value)
