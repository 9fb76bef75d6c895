"""The demo and its proof: real queries (a deduplication, a windowed aggregation, a stream-stream
join) on each provider, the estimate from their checkpoints next to the ``memoryUsedBytes`` they
reported, with the napkin and the rule of thumb alongside, and whether the estimate meets its
target (:func:`run_demo`)."""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

from state_runbooks.common.errors import RunbookError, require
from state_runbooks.common.formatting import format_bytes
from state_runbooks.core.checkpoint import Checkpoint

from .measurement import (
    CheckpointMeasurement,
    StoreMeasurement,
    disk_totals,
    measure_stores,
    measured_totals,
)
from .napkin_estimate import RULE_OF_THUMB_FACTORS, Napkin
from .recommendation import rocksdb_configured_memory

COMPARED_WORKLOADS = ("dedup", "window_agg_many_users", "join")
WORKLOAD_LABELS = {"dedup": "deduplication", "window_agg_many_users": "windowed aggregation",
                   "join": "stream-stream join"}
# Rows per batch and batches of each compared demo, about 10,000 to 12,000 rows each: the
# deduplication runs until the watermark evicts (the napkin's steady state); the windowed
# aggregation's last batch falls inside a window, so it replaces values; the join buffers both
# sides.
DEMO_RUNS = {"dedup": (4000, 8), "window_agg_many_users": (10000, 3), "join": (2000, 3)}
ACCURACY_TARGET = 0.25  # the estimator's error against memoryUsedBytes, HDFS-backed provider
# Where SizeEstimator's sampling alone puts a report: within about 2 sd of the estimate. Further off,
# the estimate leaves something out, whatever its error in percent.
SAMPLING_SD = 2.0
# The runbook's own demo: the compared deduplication (DEMO_RUNS["dedup"]), which step 2 measures.
DEMO = {"workload": "dedup", "batches": DEMO_RUNS["dedup"][1],
        "rows_per_batch": DEMO_RUNS["dedup"][0]}


def demo_run_for_rows(workload: str, rows: int) -> tuple[int, int]:
    """(rows_per_batch, batches) of a demo whose state holds about ``rows`` rows (Spark's
    numRowsTotal), in few batches: 2 for the deduplication (each batch brings rows_per_batch / 2
    ids), 3 for the windowed aggregation (rows_per_batch / 2 users in 2 windows) and for the join
    (about 5.4 x rows_per_batch rows after 3 batches)."""
    require(rows >= 10, f"rows={rows} is too few for a demo: pass 10 or more")
    if workload == "dedup":
        return rows, 2
    if workload == "window_agg_many_users":
        return rows, 3
    if workload == "join":
        return max(2, round(rows / 5.4)), 3
    raise RunbookError(f"workload {workload!r} has no sizing demo: use one of "
                       f"{', '.join(COMPARED_WORKLOADS)}")


def reported(progress: dict | None) -> dict | None:
    """From one ``query.lastProgress``: memoryUsedBytes, rows and RocksDB's SST bytes, summed over
    stateful operators (each already summed over its partitions and stores)."""
    if not progress or not progress.get("stateOperators"):
        return None
    ops = progress["stateOperators"]
    sst = [op.get("customMetrics", {}).get("rocksdbSstFileSize") for op in ops]
    return {"batch_id": progress.get("batchId"),
            "memory_used_bytes": sum(int(op["memoryUsedBytes"]) for op in ops),
            "num_rows_total": sum(int(op["numRowsTotal"]) for op in ops),
            "rocksdb_sst_bytes": sum(sst) if all(v is not None for v in sst) else None,
            "operators": {op["operatorName"]: int(op["memoryUsedBytes"]) for op in ops}}


@dataclass
class Comparison:
    """One demo query: the estimate from its checkpoint next to what the query reported."""
    workload: str
    provider: str
    checkpoint_path: str
    rows: int  # Spark's numRowsTotal (a join counts its keyWithIndexToValue rows)
    state_rows: int  # rows in every store
    payload_bytes: int
    disk_bytes: int  # latest version's files
    rule_of_thumb_bytes: float  # the widely quoted rule of thumb, upper factor
    estimated_bytes: float  # the HDFS-backed provider's expected memoryUsedBytes
    estimated_sd: float
    heap_bytes: float
    reported_bytes: int  # memoryUsedBytes
    rocksdb_sst_bytes: int | None = None

    @property
    def error(self) -> float | None:
        """Estimate over report, minus 1 (HDFS-backed provider only)."""
        if self.provider != "hdfs" or not self.reported_bytes:
            return None
        return self.estimated_bytes / self.reported_bytes - 1

    @property
    def ratio_to_rule_of_thumb(self) -> float:
        if not self.rule_of_thumb_bytes:
            return float("nan")
        return self.reported_bytes / self.rule_of_thumb_bytes

    def summary(self) -> dict:
        return {k: (round(v) if isinstance(v, float) else v) for k, v in self.__dict__.items()} | {
            "error": None if self.error is None else round(self.error, 4)}


def compare(spark, run, measurements: list[StoreMeasurement] | None = None) -> Comparison:
    """Estimate from a demo run's checkpoint (restarted for every batch, as the demo runs) and
    compare with the memoryUsedBytes its last batch reported. ``measurements`` of the same
    deterministic workload on the HDFS-backed provider can be passed in for a RocksDB run: the
    state rows are the same, only the provider differs."""
    if measurements is None:
        measurements = measure_stores(Checkpoint(spark, run.checkpoint_path),
                                      restarted_each_batch=True)
    total = measured_totals(measurements)
    rep = reported(run.progress[-1] if run.progress else None) or {}
    payload = sum(m.payload_bytes for m in measurements)
    if run.provider != "hdfs":  # the files are the run's own, not the HDFS run's
        ckpt = Checkpoint(spark, run.checkpoint_path)
        latest_disk = sum(ckpt.disk_bytes(s.operator_id, s.store_name)["latest_version_bytes"]
                          for s in ckpt.stores())
    else:
        latest_disk = disk_totals(measurements)["latest_version"]
    return Comparison(
        workload=run.workload, provider=run.provider, checkpoint_path=run.checkpoint_path,
        rows=int(rep.get("num_rows_total", 0)), state_rows=sum(m.rows for m in measurements),
        payload_bytes=payload, disk_bytes=latest_disk,
        rule_of_thumb_bytes=payload * RULE_OF_THUMB_FACTORS[1],
        estimated_bytes=total.reported_bytes, estimated_sd=total.reported_sd,
        heap_bytes=total.heap_bytes, reported_bytes=int(rep.get("memory_used_bytes", 0)),
        rocksdb_sst_bytes=rep.get("rocksdb_sst_bytes"))


def compare_demo_workloads(spark, workloads=COMPARED_WORKLOADS, rocksdb_workloads=("dedup",),
                           runs: dict | None = None, reuse=None,
                           reused_measurements: list[StoreMeasurement] | None = None,
                           ) -> list[Comparison]:
    """Run each compared demo query on the HDFS-backed provider (and those in
    ``rocksdb_workloads`` on RocksDB too) and compare estimate and report.

    ``runs`` maps workload -> (rows_per_batch, batches) (default ``DEMO_RUNS``); ``reuse`` is a
    DemoRun already built (the runbook's own demo) that stands for its workload and provider, and
    ``reused_measurements`` its stores as already measured (restarted each batch), if they were.
    """
    from state_runbooks.demos.checkpoints import build_demo_checkpoint

    runs = runs or DEMO_RUNS
    out = []
    for workload in workloads:
        require(workload in runs, f"workload {workload!r} has no demo size: use one of "
                                 f"{', '.join(runs)}")
        rows_per_batch, batches = runs[workload]
        hdfs_measurements = None
        for provider in ("hdfs", "rocksdb") if workload in rocksdb_workloads else ("hdfs",):
            measured = None
            if (reuse is not None and reuse.workload == workload and reuse.provider == provider
                    and (reuse.rows_per_batch, reuse.batches) == (rows_per_batch, batches)):
                run, measured = reuse, reused_measurements
            else:
                run = build_demo_checkpoint(spark, workload, batches=batches,
                                            rows_per_batch=rows_per_batch, provider=provider)
            if provider == "hdfs":
                hdfs_measurements = measured or measure_stores(
                    Checkpoint(spark, run.checkpoint_path), restarted_each_batch=True)
            out.append(compare(spark, run, hdfs_measurements))
    return out


def comparison_table(comparisons: list[Comparison]):
    """Per workload and provider: rows, row bytes, the rule of thumb, the estimate, the report."""
    import pandas as pd
    return pd.DataFrame([{
        "workload": WORKLOAD_LABELS.get(c.workload, c.workload), "provider": c.provider,
        "rows": c.rows, "state_rows": c.state_rows, "row_bytes": format_bytes(c.payload_bytes),
        "rule_of_thumb_x1.5": format_bytes(c.rule_of_thumb_bytes),
        "estimate": format_bytes(c.estimated_bytes) if c.provider == "hdfs" else "-",
        "memoryUsedBytes": format_bytes(c.reported_bytes),
        "error": f"{c.error:+.1%}" if c.error is not None else "-",
        "report/rule": f"{c.ratio_to_rule_of_thumb:.1f}x",
    } for c in comparisons])


def accuracy_lines(comparisons: list[Comparison], target: float = ACCURACY_TARGET) -> list[str]:
    """One line per HDFS workload with its error, also in standard deviations of Spark's own
    sampling (whether sampling explains it), and a verdict against the target. Two questions:
    the percent answers whether the estimate is close enough to size memory with, the sd whether
    it models all that Spark counts."""
    lines, beyond = [], []
    hdfs = [c for c in comparisons if c.error is not None]
    for c in hdfs:
        sigmas = (c.estimated_bytes - c.reported_bytes) / c.estimated_sd if c.estimated_sd else 0
        label = WORKLOAD_LABELS.get(c.workload, c.workload)
        if abs(sigmas) > SAMPLING_SD:
            beyond.append(label)
        lines.append(f"{label}: estimate {format_bytes(c.estimated_bytes)}, memoryUsedBytes "
                     f"{format_bytes(c.reported_bytes)}: error {c.error:+.1%} "
                     f"({sigmas:+.1f} sd of SizeEstimator's sampling: "
                     + ("sampling explains it)" if abs(sigmas) <= SAMPLING_SD else
                        "more than sampling explains)"))
    if hdfs:
        worst = max(abs(c.error) for c in hdfs)
        verdict = ("within the {:.0%} target on {} workloads: close enough to size memory with"
                   if worst <= target else "OUTSIDE the {:.0%} target on {} workloads")
        lines.append(f"largest error {worst:.1%}: {verdict.format(target, len(hdfs))}"
                     + (f"; {', '.join(beyond)} more than {SAMPLING_SD:g} sd off: the estimate "
                        "misses part of what Spark counts there, so plan with the error in "
                        "percent, not with the sampling spread" if beyond else ""))
    return lines


def three_way_lines(napkin_est: Napkin, comparisons: list[Comparison], workload: str = "dedup"
                    ) -> list[str]:
    """Napkin vs measured vs Spark's report for one workload, on each provider, with ratios."""
    lines = []
    for c in comparisons:
        if c.workload != workload:
            continue
        if c.provider == "hdfs":
            nap = napkin_est.memory_restarted.reported_bytes
            text = (
                f"HDFS-backed provider, memoryUsedBytes: napkin {format_bytes(nap)}, measured "
                f"(estimated from the checkpoint's rows) {format_bytes(c.estimated_bytes)}, "
                f"reported {format_bytes(c.reported_bytes)}; napkin/reported "
                f"{nap / c.reported_bytes:.2f}, measured/reported "
                f"{c.estimated_bytes / c.reported_bytes:.2f}. Rows: napkin {napkin_est.rows:,}, "
                f"measured {c.state_rows:,}, reported {c.rows:,}. Heap: napkin "
                f"{format_bytes(napkin_est.memory.heap_bytes)}, measured "
                f"{format_bytes(c.heap_bytes)}. The rule of thumb: "
                f"{format_bytes(c.rule_of_thumb_bytes)}, "
                f"{c.reported_bytes / c.rule_of_thumb_bytes:.1f}x under the report.")
        else:
            cap = rocksdb_configured_memory(napkin_est.inputs.num_partitions)
            sst = (f", SST files {format_bytes(c.rocksdb_sst_bytes)} (rocksdbSstFileSize, "
                   f"{c.rocksdb_sst_bytes / c.payload_bytes:.2f}x the row bytes)"
                   if c.rocksdb_sst_bytes else "")
            text = (
                f"RocksDB, memoryUsedBytes: napkin configured memory {format_bytes(cap)}, measured row bytes "
                f"{format_bytes(c.payload_bytes)}{sst}, reported {format_bytes(c.reported_bytes)}; "
                f"reported/configured {c.reported_bytes / cap:.4f}, reported/row bytes "
                f"{c.reported_bytes / c.payload_bytes:.2f}. RocksDB reports its native memory "
                "(memtables, block cache, index and filter blocks), which follows its "
                "configuration and when it last flushed, not the row count; the rows themselves "
                "are in its files on local disk.")
        lines.append(textwrap.fill(text, 100))
    return lines


def plot_table(comparisons: list[Comparison]):
    """Bytes per workload for ``plots.estimate_vs_reported``: the rule of thumb, the estimate and
    each provider's memoryUsedBytes."""
    import pandas as pd
    rows = {}
    for c in comparisons:
        row = rows.setdefault(WORKLOAD_LABELS.get(c.workload, c.workload), {})
        row["rule of thumb (x1.5)"] = c.rule_of_thumb_bytes
        if c.provider == "hdfs":
            row["estimate (HDFS)"] = c.estimated_bytes
        row[f"memoryUsedBytes ({c.provider})"] = c.reported_bytes
    return pd.DataFrame.from_dict(rows, orient="index")


def accuracy_verdict(comparisons: list[Comparison], target: float = ACCURACY_TARGET) -> str:
    """One line without figures (stable enough to compare in tests): within the target or not."""
    hdfs = [c for c in comparisons if c.error is not None]
    if not hdfs:
        return "no query ran here: nothing to compare the estimate with"
    names = ", ".join(WORKLOAD_LABELS.get(c.workload, c.workload) for c in hdfs)
    if all(abs(c.error) <= target for c in hdfs):
        return f"estimate within {target:.0%} of memoryUsedBytes on every workload: {names}"
    bad = ", ".join(WORKLOAD_LABELS.get(c.workload, c.workload) for c in hdfs
                    if abs(c.error) > target)
    return f"estimate OUTSIDE {target:.0%} of memoryUsedBytes on: {bad}"


@dataclass
class DemoResult:
    """What the demo-only step found: every compared workload, and what the demo's own query
    reported at its last batch."""
    comparisons: list[Comparison]
    reported_now: dict | None  # reported(): memoryUsedBytes and rows of the demo's last batch


def run_demo(rb, measured: CheckpointMeasurement) -> DemoResult:
    """Step 4 on the demo: each compared workload run and compared, the runbook's own demo
    (``rb.demo``, ``measured`` in step 2) standing for the deduplication on the HDFS-backed
    provider."""
    comparisons = compare_demo_workloads(rb.spark, reuse=rb.demo,
                                         reused_measurements=measured.stores)
    return DemoResult(comparisons, reported(rb.demo.progress[-1]))
